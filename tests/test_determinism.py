"""The same configuration and seed give identical rows (training seconds aside) however they run:
in this process, alone (`python -m lab.sweep`), in a serial sweep, or on Ray's actors."""

import pandas as pd
import pytest

from sweeping import TINY, alone, cli, rows, sweep

pytestmark = pytest.mark.integration

RUN = [*TINY, "iterations=5", "episodes_per_update=50", "seed=3"]
GRID = ["--multirun", "hydra.launcher.figures=false", "results_dir=results", *RUN, "seed=3,4", "opponent=onestep,random"]


def _one_run(stored: pd.DataFrame) -> pd.DataFrame:
    picked = stored[(stored.seed == 3) & (stored.opponent == "onestep")]
    return picked.reset_index(drop=True)


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    return alone(RUN, tmp_path_factory.mktemp("in_process"))


def test_alone_and_in_a_serial_sweep(in_process, tmp_path):
    assert len(in_process) == 5 and in_process.p2_wins.sum() > 0
    single = sweep(["results_dir=alone", *RUN], cwd=tmp_path)  # a real process
    assert single.returncode == 0, single.stderr
    pd.testing.assert_frame_equal(rows(tmp_path / "alone"), in_process)
    serial = cli([*GRID, "hydra.launcher.parallel=false"], tmp_path)
    assert serial.returncode == 0, serial.stderr
    stored = rows(tmp_path / "results")
    assert stored.run_id.nunique() == 4
    pd.testing.assert_frame_equal(_one_run(stored), in_process)
    # the other seed really is a different run, so equality above is not vacuous
    assert not stored[stored.seed == 4].p1_wins.equals(stored[stored.seed == 3].p1_wins)


@pytest.mark.slow
def test_as_ray_tasks_and_a_failing_run_on_ray(in_process, tmp_path):
    # a 10^15-unit layer cannot be allocated: that run fails on its Ray actor, the others finish
    done = sweep([*GRID, "neurons=4,1000000000000000"], cwd=tmp_path)
    assert done.returncode == 1
    assert "4 runs finished, 4 failed" in done.stdout
    assert done.stderr.count("MemoryError") == 4
    stored = rows(tmp_path / "results")
    # failed runs' null counts turn the integer columns into floats: compare values
    pd.testing.assert_frame_equal(_one_run(stored[stored.neurons == 4]), in_process, check_dtype=False)
    assert (stored[stored.neurons > 4].status == "failed").all()
