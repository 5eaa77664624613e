"""The sweep package (lab.sweep): its public names, the command `python -m lab.sweep` (a Hydra
job named `sweep`), and the grid sweepers (the lab's and Hydra's basic one), each batching with
max_batch_size. Sweeps run in this process without Ray."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from lab import results, sweep
from sweeping import clean_env, cli, serial_grid

PUBLIC = {  # the names other modules and users take from lab.sweep -> the module named after its job
    # (in lab.sweep unless dotted: where work runs is lab.execution's, for searches too)
    "plan": "lab.sweep", "Plan": "lab.sweep", "list_plan": "lab.sweep", "mode": "dispatch",
    "RAY_START_SECONDS": "dispatch", "RAY_WORTH_SECONDS": "dispatch", "FORK_SECONDS": "dispatch",
    "MODES": "dispatch", "execute": "dispatch", "Execution": "lab.execution.progress", "Interrupted": "dispatch",
    "report": "dispatch", "RETRIES": "dispatch", "connect": "lab.execution.ray_connection",
    "disconnect": "lab.execution.ray_connection", "TOKEN_HINT": "lab.execution.ray_connection",
    "Progress": "lab.execution.progress", "Outcome": "lab.execution.progress",
    "HydraKnobs": "overrides", "launch": "lab.sweep", "analyse": "lab.sweep",
}


def test_the_public_names_stay_importable_from_lab_sweep():
    import importlib

    for name, module in PUBLIC.items():
        assert getattr(sweep, name) is getattr(importlib.import_module(module if "." in module else f"lab.sweep.{module}"), name), name
    assert set(sweep.__all__) == set(PUBLIC) | {"main"}


@pytest.mark.integration
def test_python_m_lab_sweep_is_a_hydra_job_namedserial_grid(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lab.sweep", "--cfg", "hydra", "--package", "hydra.job"],
                          cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "name: sweep" in done.stdout.splitlines()


def test_the_command_in_this_process_is_the_same_job(tmp_path):
    done = cli(["--cfg", "hydra", "--package", "hydra.job"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "name: sweep" in done.stdout.splitlines()


def test_hydras_basic_sweeper_keeps_results_dir_a_table(tmp_path):
    done = serial_grid(tmp_path, "hydra/sweeper=basic", "seed=0,1,2", "hydra.sweeper.max_batch_size=2")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "results"
    assert (out / results.SWEEPS / "multirun.yaml").is_file()  # Hydra's own record, beside ours
    assert not list(out.glob("*.yaml"))
    assert pd.read_parquet(out)["seed"].nunique() == 3 and len(results.load(out)) == 9
    assert done.stdout.count(" to train") == 2  # two batches


def test_the_lab_sweeper_honours_max_batch_size(tmp_path):
    done = serial_grid(tmp_path, "seed=0,1,2", "hydra.sweeper.max_batch_size=2")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if " to train" in line] == \
        ["1 configuration x 2 seeds, 2 runs to train", "1 configuration x 1 seed, 1 run to train"]
    assert len(results.statuses(tmp_path / "results")) == 3


def test_a_run_notes_the_knobs_its_algorithm_does_not_use(tmp_path):
    """layers and neurons are in every configuration (for the net algorithms): q_table's run is
    the same with or without them, and says so."""
    done = cli(["algorithm=q_table", "layers=3", "neurons=4", "iterations=1", "episodes_per_update=1",
                "results_dir=out"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == ("note: algorithm=q_table does not use layers, neurons: the run is the same "
                                           "without them (its knobs: alpha, epsilon, epsilon_decay_per_game)")
    used = cli(["algorithm=mc_vfa", "layers=1", "neurons=4", "iterations=1", "episodes_per_update=1",
                "results_dir=out"], tmp_path)
    assert used.returncode == 0 and "note:" not in used.stdout


def test_a_dry_run_of_one_run_lists_it_and_trains_nothing(tmp_path):
    """hydra.launcher.dry_run=true without --multirun (it trained the run)."""
    done = cli(["algorithm=q_table", "iterations=1", "results_dir=out", "hydra.launcher.dry_run=true"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"train [0-9a-f]{16}  algorithm=q_table iterations=1 results_dir=out", lines[-2]), lines
    assert lines[-1] == "dry run: nothing trained, nothing written" and not (tmp_path / "out").exists()
