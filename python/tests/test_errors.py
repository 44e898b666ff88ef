"""The library's errors raise Python exceptions of the matching class, with its message
and context."""
import numpy as np
import pytest

import homodyne_hpc as hh


def test_bad_model_input_is_bad_input_error():
    with pytest.raises(hh.BadInputError) as e:
        hh.model_c2("static", [1.0, 0.0, 0.0], [0.0, 10.0], q=0.0054, dt=0.1, n_frames=10,
                    contrast=[0.3, 0.3, 0.3], offset=1.0)
    assert isinstance(e.value, hh.Error) and isinstance(e.value, ValueError)
    assert e.value.key == "contrast/offset"
    assert "3 contrast" in str(e.value)
    assert e.value.kind == "bad input"


def test_too_few_physical_parameters():
    with pytest.raises(hh.BadInputError, match="physical parameters of laminar_flow"):
        hh.model_c2("laminar_flow", [1.0, 0.0, 0.0], [0.0], q=0.0054, dt=0.1, n_frames=10)


def test_missing_data_file_names_it(tmp_path):
    missing = tmp_path / "missing.h5"
    with pytest.raises(hh.Error) as e:
        hh.load_aps(missing, dt=1.0)
    assert str(missing) in str(e.value)
    assert e.value.file == str(missing)


def test_bad_config_key_names_it(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("analysis_mode: static\nanalyzer_parameters:\n  dt: -1.0\n"
                      "experimental_data:\n  data_folder_path: .\n  data_file_name: x.h5\n")
    with pytest.raises(hh.BadInputError) as e:
        hh.load_data(config)
    assert "dt" in str(e.value)
    assert str(config) in str(e.value)


def test_bad_fit_option_raises_on_the_library_side():
    c2 = np.ones((1, 20, 20))
    data = hh.Data(c2=c2, phi_deg=np.array([0.0]), q=0.0054, dt=0.1)
    with pytest.raises(hh.BadInputError) as e:
        hh.fit_nlsq(data, mode="static", max_iterations=0)
    assert e.value.key == "max_iterations"
    with pytest.raises(ValueError, match="unknown option 'max_iter'"):
        hh.fit_nlsq(data, mode="static", max_iter=5)
