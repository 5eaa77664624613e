"""The driver SIGKILLed at any moment (issue 34): then the same command loses nothing that was
reported finished, retrains nothing that was stored, stores nothing twice and leaves no torn file
to read; the forks die with the driver."""

import os
import random
import re
import signal
import subprocess
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab import results
from sweeping import clean_env, command, descendants, sweep

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS = 60
GRID = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.parallel=processes",
        "hydra.launcher.num_cpus=2", "results_dir=results", "algorithm=q_table", "opponent=random",
        "iterations=4", "episodes_per_update=50", "eval_every=2", f"seed=range(0,{RUNS})"]
KILLS = 20


def _reported(log: str) -> int:
    """How many runs the sweep had reported finished (its last progress line's count)."""
    counts = re.findall(r"; (\d+)/\d+ finished", log)
    return int(counts[-1]) if counts else 0


def _stored(results_dir) -> dict:
    """run file -> its bytes, each one a whole, readable run table."""
    files = {}
    for path in results.run_files(results_dir):
        assert pq.read_table(path).num_rows == 4, path  # whole: every iteration
        files[path.name] = path.read_bytes()
    return files


def test_the_driver_killed_at_any_moment_loses_nothing_reported_and_the_same_command_completes(tmp_path):
    seed = int(os.environ.get("LAB_KILL_SEED", time.time_ns() % 10_000))
    chosen = random.Random(seed)
    (tmp_path / "whole").mkdir()
    began = time.monotonic()
    assert sweep(GRID, cwd=tmp_path / "whole").returncode == 0
    whole = time.monotonic() - began  # the command from start to end: kills fall anywhere in it
    for kill in range(KILLS):
        cwd = tmp_path / str(kill)
        cwd.mkdir()
        log = cwd / "sweep.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(command(GRID), cwd=cwd, env=clean_env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            if kill % 2:  # half of the kills while runs are being stored: after the first is reported
                deadline = time.monotonic() + 60
                while "finished" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(chosen.uniform(0.0, whole / 3))
            else:  # anywhere from start to end
                time.sleep(chosen.uniform(0.0, whole))
            forks = descendants(proc.pid)
            proc.send_signal(signal.SIGKILL)  # the driver alone: its forks must follow it
            proc.wait()
        where = f"kill {kill} (LAB_KILL_SEED={seed}): {log.read_text()[-2000:]}"
        deadline = time.monotonic() + 10
        while any(os.path.exists(f"/proc/{p}") for p in forks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(os.path.exists(f"/proc/{p}") for p in forks), f"a fork outlived the driver; {where}"
        stored = _stored(cwd / "results")
        assert _reported(log.read_text()) <= len(stored), where  # reported finished: on disk

        again = sweep(GRID, cwd=cwd)
        assert again.returncode == 0, f"{where}\n{again.stderr}"
        if stored:
            assert f"{len(stored)} runs already finished in results_dir: skipped" in again.stdout, where
        after = _stored(cwd / "results")
        assert len(after) == RUNS, where
        assert all(after[name] == content for name, content in stored.items()), where  # none retrained
        table = results.load(cwd / "results")
        assert table.groupby("run_id").size().eq(4).all() and table.run_id.nunique() == RUNS, where
        assert len(pd.read_parquet(cwd / "results")) == 4 * RUNS, where  # no hidden temporary file read
