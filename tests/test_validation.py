"""Every knob is validated before anything launches: one clear message naming the key and what is
allowed, a non-zero exit, and not a byte changed on disk.

Most cases call the real CLI entry point (`lab.sweep.main`, Hydra's argument parsing and
composition included) in this process, which is fast; two go through a `python -m lab.sweep`
subprocess to check the exit status a shell sees.
"""

import shutil

import pandas as pd
import pytest

from sweeping import TINY, clean_env, cli, snapshot
from sweeping import sweep as sweep_process


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A results folder holding one finished run, copied into every test's working directory."""
    root = tmp_path_factory.mktemp("stored")
    assert cli(["results_dir=results", *TINY], root).returncode == 0
    return root / "results"


@pytest.fixture
def run_cli(tmp_path, stored, monkeypatch):
    """Run the CLI in tmp_path (which holds results/ with a finished run): (exit code, output)."""
    shutil.copytree(stored, tmp_path / "results")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def call(args):
        before = snapshot(tmp_path)
        flags = [a for a in args if a.startswith("--")]
        overrides = [a for a in args if not a.startswith("--")]
        done = cli([*flags, "results_dir=results", *overrides], tmp_path)
        assert snapshot(tmp_path) == before, "a rejected sweep changed the disk"
        return done.returncode, done.stdout + done.stderr

    return call


BAD = [  # (override, what the message must say)
    ("algorithm=nope", ["algorithm=nope: there is no nope", "the options of algorithm are", "mc_vfa"]),
    ("opponent=nope", ["opponent=nope: there is no nope", "onestep", "perfect"]),
    ("algorithm=q_table opponent=self",
     ["opponent='self' is not allowed", "random, onestep, block, perfect, mcts for algorithm=q_table"]),
    ("opponent=nowhere/agent.npz",
     ["opponent='nowhere/agent.npz' is not allowed", "agent.npz does not"]),
    ("+sweeps=nope", ["+sweeps=nope: there is no nope", "the named sweeps are", "smoke"]),
    ("player=3", ["player=3 is not allowed", "1 (X, moves first) or 2 (O)"]),
    ("player=0", ["player=0 is not allowed", "1 (X, moves first) or 2 (O)"]),
    ("player=first", ["player='first' is not allowed", "1 (X, moves first) or 2 (O)"]),
    ("layers=0", ["layers=0 is not allowed", "a positive integer"]),
    ("layers=-2", ["layers=-2 is not allowed", "a non-negative integer"]),
    ("neurons=0", ["neurons=0 is not allowed", "a positive integer"]),
    ("neurons=2.5", ["neurons=2.5 is not allowed", "an integer"]),
    ("episodes_per_update=0", ["episodes_per_update=0 is not allowed", "a positive integer"]),
    ("iterations=0", ["iterations=0 is not allowed", "a positive integer"]),
    ("iterations=-5", ["iterations=-5 is not allowed", "a positive integer"]),
    ("iterations=many", ["iterations='many' is not allowed", "a positive integer"]),
    ("alpha=0", ["alpha=0 is not allowed", "in (0, 1]"]),
    ("alpha=1.5", ["alpha=1.5 is not allowed", "in (0, 1]"]),
    ("alpha=-0.01", ["alpha=-0.01 is not allowed", "in (0, 1]"]),
    ("alpha=fast", ["alpha='fast' is not allowed", "a number"]),
    ("seed=-1", ["seed=-1 is not allowed", "an integer from 0 to 2**32 - 1"]),
    ("seed=4294967296", ["seed=4294967296 is not allowed", "an integer from 0 to 2**32 - 1"]),  # trained as 0 would
    ("seed=99999999999999999999", ["seed=99999999999999999999 is not allowed"]),  # once: trained, then a traceback
    ("gamma=2", ["gamma=2 is not allowed", "in [0, 1]"]),
    ("memory=forever", ["memory='forever' is not allowed", "'clear' or 'keep'"]),
    ("eval_every=0", ["eval_every=0 is not allowed", "a positive integer"]),
    ("force=maybe", ["force='maybe' is not allowed", "true or false"]),
    ("results_dir=null", ["results_dir=None is not allowed", "a directory path"]),
    ("lerning_rate=0.1", ["lerning_rate=0.1: lerning_rate is not a knob", "the knobs are", "alpha"]),
    ("layer=3", ["layer=3: layer is not a knob (did you mean `layers`?)"]),
    ("+lerning_rate=0.1", ["'lerning_rate' is not a knob of the lab", "the knobs are", "alpha", "seed"]),
]


@pytest.mark.parametrize("override, message", BAD, ids=[b[0] for b in BAD])
def test_bad_knob_is_refused_before_anything_runs(run_cli, override, message):
    code, output = run_cli(override.split())
    assert code != 0
    for words in message:
        assert words in output


def test_a_bad_value_anywhere_in_a_grid_stops_the_whole_grid(run_cli):
    # in this process (the fast tier): auto would start forks ahead of the plan on a small machine
    # (their closing on a refusal: tests/test_workers.py)
    code, output = run_cli(["--multirun", *TINY, "seed=5,6,7", "layers=1,2,0", "hydra.launcher.parallel=false"])
    assert code != 0
    assert "layers=0 is not allowed: layers must be a positive integer" in output
    assert "runs to train" not in output  # nothing was launched


def test_results_dir_that_is_a_file(run_cli, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    code, output = run_cli(["results_dir=notes.txt", *TINY])
    assert code != 0
    assert "results_dir='notes.txt' is not allowed: results_dir must be a directory" in output
    code, output = run_cli(["results_dir=notes.txt/sub", *TINY])
    assert code != 0 and "notes.txt is a file" in output


@pytest.mark.parametrize("content", [b"", b"PAR1 not really parquet", "table"])
def test_unreadable_table_in_results_dir(run_cli, tmp_path, content):
    bad = tmp_path / "results" / "stray.parquet"
    if content == "table":  # a real Parquet file that is not a run table
        pd.DataFrame({"x": [1, 2]}).to_parquet(bad)
    else:
        bad.write_bytes(content)
    code, output = run_cli([*TINY, "seed=9"])
    assert code != 0
    assert f"results_dir holds {bad}, which is not a readable run table" in output
    assert "move it out" in output


def test_relative_results_dir_is_refused_inside_a_ray_job(run_cli, monkeypatch):
    # `ray job submit` runs the driver in a temporary copy of --working-dir (Ray sets this variable)
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")
    code, output = run_cli([*TINY, "seed=9"])
    assert code != 0
    assert "results_dir='results' is not allowed: results_dir must be an absolute path under `ray job submit`" in output


@pytest.mark.integration
def test_the_real_command_exits_non_zero_and_writes_nothing(tmp_path):
    (tmp_path / "results").mkdir()
    before = snapshot(tmp_path)
    bad_grid = sweep_process(["--multirun", "results_dir=results", "alpha=0.1,2", *TINY], cwd=tmp_path)
    assert bad_grid.returncode == 2
    assert "alpha=2 is not allowed: alpha must be in (0, 1]" in bad_grid.stderr
    assert snapshot(tmp_path) == before, "a rejected grid changed the disk"
    (tmp_path / "results" / "broken.parquet").write_bytes(b"half a file")
    before = snapshot(tmp_path)
    corrupt = sweep_process(["results_dir=results", *TINY], cwd=tmp_path, env=clean_env())
    assert corrupt.returncode == 2
    assert "broken.parquet, which is not a readable run table" in corrupt.stderr
    assert snapshot(tmp_path) == before
