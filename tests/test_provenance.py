"""Every run table says which code on which machine trained it, and when."""

import platform
import socket
import subprocess

import numba
import numpy as np
import pandas as pd

from lab import results
from lab.results import provenance
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run
from sweeping import REPO, TINY

HEAD = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True,
                      check=True).stdout.strip()
"""The commit git itself reports for this checkout (asked at import: the fast tier starts no
process inside a test)."""


def test_every_row_carries_the_code_the_machine_and_the_times(tmp_path):
    before = pd.Timestamp.now(tz="UTC")
    results.commit(tmp_path, results.pack([run(job(compose(*TINY)))]))
    table = results.load(tmp_path)
    assert set(provenance.COLUMNS) <= set(table.columns)
    assert (table[list(provenance.COLUMNS)].nunique(dropna=False) == 1).all()  # one stamp per run
    row = table.iloc[0]
    assert row["git_commit"] == HEAD and isinstance(row["git_dirty"], (bool, np.bool_))
    assert row["host"] == socket.gethostname() and row["python_version"] == platform.python_version()
    assert row["numpy_version"] == np.__version__ and row["numba_version"] == numba.__version__
    assert before <= row["started_utc"] <= row["finished_utc"] <= pd.Timestamp.now(tz="UTC")
    assert row["lab_version"] and row["command"]


def test_the_driver_code_stamp_wins_over_the_workers():
    code = {**provenance.code(), "git_commit": "f" * 40, "command": "lab-sweep --multirun x=1,2"}
    rows = run(job(compose(*TINY)), code).rows
    assert (rows["git_commit"] == "f" * 40).all() and (rows["command"] == code["command"]).all()


def test_one_row_per_run_and_the_long_table_of_evaluation_points(tmp_path):
    for overrides in ([*TINY, "eval_every=1"], ["algorithm=td_value", "opponent=self", "iterations=2",
                                                 "episodes_per_update=10", "eval_every=1"]):
        results.commit(tmp_path, results.pack([run(job(compose(*overrides)))]))
    table = results.load(tmp_path)
    per_run = results.runs(table)
    assert sorted(per_run["iteration"]) == [2, 3] and per_run["run_id"].is_unique
    points = results.evaluations(table)
    # mc_vfa as O: 3 points in seat 2; td_value in self-play: 2 points in each seat
    assert sorted(points.groupby(["algorithm", "seat"]).size().items()) == \
        [(("mc_vfa", 2), 3), (("td_value", 1), 2), (("td_value", 2), 2)]
    assert {"random_win", "losing_lines", "iteration", "git_commit"} <= set(points.columns)
    assert not [c for c in points.columns if c.startswith("eval_p")]
