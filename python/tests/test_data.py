"""Loading an APS file by a config's selection rules or by arguments."""
import numpy as np

import homodyne_hpc as hh

from conftest import CONFIG, SOURCE


def test_config_selection_loads_the_demo_matrix():
    data = hh.load_data(CONFIG)
    assert data.c2.shape == (1, 350, 350)
    assert data.c2.dtype == np.float64 and data.c2.flags.c_contiguous
    assert np.array_equal(data.c2[0], data.c2[0].T)  # the full symmetric matrix
    assert data.dt == 1.0
    assert data.metadata["analysis_mode"] == "static"
    assert data.metadata["n_frames"] == 350
    assert data.source.endswith("bnl_twotime_350.h5")
    assert np.array_equal(data.t, np.arange(350.0))


def test_config_dict_and_frame_selection_equal_the_arguments():
    import yaml
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    config["analyzer_parameters"]["start_frame"] = 11
    config["analyzer_parameters"]["end_frame"] = 110
    config["experimental_data"]["data_folder_path"] = SOURCE + "/examples/data"
    from_dict = hh.load_data(config)
    direct = hh.load_aps(SOURCE + "/examples/data/bnl_twotime_350.h5", dt=1.0, q=0.0054,
                         start_frame=11, end_frame=110)
    assert from_dict.c2.shape == (1, 100, 100)
    assert np.array_equal(from_dict.c2, direct.c2)
    assert np.array_equal(from_dict.phi_deg, direct.phi_deg)
    # The slice is the full load's, up to the diagonal correction at its edges.
    full = hh.load_data(CONFIG).c2
    assert np.array_equal(direct.c2[0, 5:-5, 40:-5], full[0, 15:105, 50:105])
