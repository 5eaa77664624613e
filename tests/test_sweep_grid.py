"""The spine end to end: a --multirun grid on the embedded local Ray lands in one Parquet table."""

import subprocess
import sys

import pandas as pd
import pytest

from lab import results
from lab.analysis.plots import winrate_figures
from sweeping import values

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    out = tmp_path_factory.mktemp("grid")
    cmd = [sys.executable, "-m", "lab.sweep", "--multirun", "algorithm=mc_vfa", "opponent=onestep",
           "player=2", "layers=2,3", "neurons=8", "alpha=0.01", "episodes_per_update=100",
           "iterations=200", "seed=0,1", f"results_dir={out}", "hydra.launcher.num_cpus=2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, done


def test_grid_lands_as_one_table(grid):
    out, done = grid
    table = pd.read_parquet(out)
    assert table.groupby("run_id").size().tolist() == [200] * 4
    assert sorted(table.groupby(["layers", "seed"]).groups) == [(2, 0), (2, 1), (3, 0), (3, 1)]
    loaded = results.load(out)
    ordered = table.sort_values(["run_id", "iteration"], ignore_index=True)
    pd.testing.assert_frame_equal(values(loaded), values(ordered))
    assert len(list((out / results.CHECKPOINTS).glob("*.npz"))) == 4
    assert "4 runs finished, 0 failed" in done.stdout


def test_rerun_skips_finished_runs(grid):
    out, _ = grid
    cmd = [sys.executable, "-m", "lab.sweep", "--multirun", "layers=2,3", "neurons=8",
           "alpha=0.01", "episodes_per_update=100", "iterations=200", "seed=0,1", f"results_dir={out}", "hydra.launcher.parallel=false"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "4 runs already finished" in done.stdout


def test_figures_per_network_shape(grid):
    out, _ = grid
    paths = winrate_figures(out)
    assert sorted(p.name for p in paths) == ["mc_vfa_ttt_player2_l2_n8.png", "mc_vfa_ttt_player2_l3_n8.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
