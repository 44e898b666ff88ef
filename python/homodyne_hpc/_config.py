"""A config argument: a path to a YAML file, or a dict (homodyne's YAML layout)."""
import os


def config_source(config):
    """(file, yaml_text) for the library: a path is read by the library itself, a dict is
    written to YAML text (file then only names it in messages)."""
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), ""
    if isinstance(config, dict):
        import yaml  # python3-yaml
        return "<config dict>", yaml.safe_dump(config, sort_keys=False)
    raise TypeError("config: expected a path to a YAML config or a dict, found %s"
                    % type(config).__name__)
