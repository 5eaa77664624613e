"""A new user's mistakes, walked through every command (issue 36): each gets exactly one line on
stderr naming what was wrong (no traceback, no page of Hydra's or argparse's), exit status 2 for
a mistake and 1 for a fault of the machine, and the working folder (results_dir in it) untouched.

The commands run in this process (their `main` with the arguments a shell would give), which
takes a fraction of a second each; the few that need a real process are marked integration.
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sweeping import REPO, TINY, clean_env, cli, snapshot

UNWRITABLE = "/sys/kernel/lab_results"
"""A folder no one can create, root included (sysfs refuses new entries)"""
GRID = ["--multirun", *TINY, "hydra.launcher.figures=false"]


def _sweep(*args):
    return ("sweep", list(args))


CASES = [  # (id, (command, arguments), exit status, words the line must hold)
    # lab.sweep: knobs, settings, group options, named sweeps, Hydra's flags
    ("misspelled knob", _sweep("layer=3", *TINY), 2, ["layer is not a knob", "did you mean `layers`?"]),
    ("misspelled knob in a grid", _sweep("--multirun", "layer=2,3", *TINY), 2, ["did you mean `layers`?"]),
    ("misspelled added knob", _sweep("+lerning_rate=0.1", *TINY), 2, ["not a knob of the lab", "alpha"]),
    ("misspelled group knob", _sweep("algorithim=q_table"), 2, ["did you mean `algorithm`?"]),
    ("misspelled sweeper setting", _sweep("--multirun", "+sweeps=search_q_net", "hydra.sweeper.num_sample=3"), 2,
     ["num_sample is not a setting of hydra.sweeper", "did you mean `num_samples`?"]),
    ("unknown game", _sweep("game=mnk_9_9_9", *TINY), 2, ["there is no mnk_9_9_9", "mnk_4_4_4, mnk_5_5_4, ttt"]),
    ("unknown game in a grid", _sweep("--multirun", "game=ttt,mnk_9_9_9", *TINY), 2, ["there is no mnk_9_9_9"]),
    ("unknown algorithm", _sweep("algorithm=qtable"), 2, ["did you mean `q_table`?", "the options of algorithm"]),
    ("unknown opponent", _sweep("opponent=onestpe", *TINY), 2, ["did you mean `onestep`?"]),
    ("unknown named sweep", _sweep("--multirun", "+sweeps=smokee"), 2, ["there is no smokee", "did you mean `smoke`?"]),
    ("unknown launcher", _sweep("--multirun", "hydra/launcher=ray", *TINY), 2, ["the options of hydra/launcher"]),
    ("misspelled flag", _sweep("--multirn", *TINY), 2, ["--multirn is not a flag", "did you mean `--multirun`?"]),
    ("flag after overrides", _sweep("seed=1", "--multirun", "layers=2"), 2, ["the flags (--multirun, ...) go before"]),
    ("sweep without --multirun", _sweep("seed=1,2", *TINY), 2, ["add --multirun"]),
    ("bad override grammar", _sweep("seed=[", *TINY), 2, ["an override is key=value"]),
    ("another algorithm's knob", _sweep("algorithm=q_table", "ensemble=5"), 2,
     ["ensemble is a knob of negamax_q, not of algorithm=q_table", "its knobs are alpha, epsilon"]),
    ("another algorithm's knob in a grid", _sweep(*GRID, "algorithm=q_table,negamax_q", "ensemble=1,5",
                                                     "hydra.launcher.parallel=false"), 2,
     ["Could not override 'ensemble': not a key of this job's configuration", "++ensemble=... adds it to every job"]),
    ("misspelled scheduler", _sweep("--multirun", "+sweeps=search_q_net", "hydra.sweeper.scheduler=asa"), 2,
     ["hydra.sweeper.scheduler='asa' is not allowed (did you mean `asha`?)", "none, asha, hyperband"]),
    ("a search's setting in a grid", _sweep(*GRID, "layers=2,3", "hydra.sweeper.seeds=3"), 2,
     ["hydra.sweeper.seeds is a search's setting", "seed=0,1,2 for three seeds"]),
    ("no runs a batch", _sweep(*GRID, "seed=1,2", "hydra.sweeper.max_batch_size=0"), 2,
     ["hydra.sweeper.max_batch_size=0 is not allowed", "a positive number"]),
    ("sweeping Hydra's setting", _sweep("--multirun", "+sweeps=smoke", "hydra.sweeper.params.seed=0,1,2"), 2,
     ["Hydra's own settings take one value"]),
    ("cores as a word", _sweep(*GRID, "seed=1,2", "hydra.launcher.num_cpus=abc"), 2,
     ["hydra.launcher.num_cpus=abc: Value 'abc'", "could not be converted to Integer"]),
    ("missing config dir", _sweep("--config-dir", "nowhere", "+_search=best"), 2, ["--config-dir nowhere: no such folder"]),
    ("bad knob value", _sweep("alpha=2", *TINY), 2, ["alpha=2 is not allowed", "in (0, 1]"]),
    ("no cores", _sweep(*GRID, "seed=1,2", "hydra.launcher.num_cpus=0"), 2,
     ["hydra.launcher.num_cpus=0 is not allowed", "a positive number of cores"]),
    ("a launcher setting of one run", _sweep(*TINY, "hydra.launcher.parallel=maybe"), 2,
     ["hydra.launcher.parallel='maybe' is not allowed"]),
    ("negative cores", _sweep(*GRID, "seed=1,2", "hydra.launcher.num_cpus=-2"), 2, ["num_cpus=-2 is not allowed"]),
    ("unwritable grid", _sweep(*GRID, "seed=1,2", f"results_dir={UNWRITABLE}"), 1, ["cannot be written"]),
    ("unwritable run", _sweep(*TINY, f"results_dir={UNWRITABLE}"), 1, ["cannot be written"]),
    ("grid over a damaged table", _sweep(*TINY, "seed=9", "results_dir={damaged}"), 2,
     ["not a readable run table", "move it out"]),
    # a search
    ("search over a damaged table", _sweep("--multirun", "+sweeps=search_q_net", "results_dir={damaged}"), 2,
     ["not a readable run table", "move it out"]),
    ("interval of a word", _sweep("--multirun", "+sweeps=search_mc_vfa", "memory=interval(0,1)"), 2,
     ["memory must be 'clear' or 'keep'", "choice("]),
    ("search into an unwritable folder", _sweep("--multirun", "+sweeps=search_q_net", f"results_dir={UNWRITABLE}"),
     1, ["cannot be written"]),
    # analysis
    ("summary of a missing folder", ("summary", ["{missing}"]), 2, ["no such folder"]),
    ("summary of an empty folder", ("summary", ["{empty}"]), 2, ["no run tables"]),
    ("summary of one file", ("summary", ["{table}"]), 2, ["is a file", "give the results_dir"]),
    ("plot of a missing folder", ("plot", ["{missing}"]), 2, ["no such folder"]),
    ("plot of an empty folder", ("plot", ["{empty}"]), 2, ["no run tables"]),
    ("plot of one file", ("plot", ["{table}"]), 2, ["is a file"]),
    ("plot smoothed over nothing", ("plot", ["{stored}", "--smooth", "0"]), 2, ["not a positive integer"]),
    ("plot with a misspelled flag", ("plot", ["{stored}", "--smoth", "3"]), 2, ["did you mean `--smooth`?"]),
    ("report of a missing folder", ("report", ["{missing}"]), 2, ["no such folder"]),
    ("report into an unwritable place", ("report", ["{stored}", "--out", f"{UNWRITABLE}/x/r.html"]), 1,
     ["cannot be written"]),
    ("export to an unknown uri", ("export", ["{stored}", "--to", "mlflow", "--uri", "foo://nowhere"]), 2,
     ["--uri foo://nowhere: MLflow cannot use it"]),
    ("export of a missing folder", ("export", ["{missing}", "--to", "tensorboard"]), 2, ["no such folder"]),
    ("export to an unknown tracker", ("export", ["{stored}", "--to", "wandb"]), 2, ["invalid choice: 'wandb'"]),
    # play, the benchmark, the references
    ("play a truncated checkpoint", ("play", ["{truncated}"]), 2, ["a damaged checkpoint"]),
    ("play a run table", ("play", ["{table}"]), 2, ["not a lab checkpoint"]),
    ("play a missing checkpoint", ("play", ["{missing}.npz"]), 2, ["No such file"]),
    ("play against nobody", ("play", ["{checkpoint}", "--vs", "nobody"]), 2, ["neither an opponent"]),
    ("play no games", ("play", ["{checkpoint}", "--vs", "random", "--games", "0"]), 2,
     ["--games: '0' is not a positive integer"]),
    ("bench with a misspelled flag", ("bench", ["--quik"]), 2, ["did you mean `--quick`?"]),
    ("ceiling of a board too big", ("exact_ceiling", ["5", "5", "4"]), 2, ["at most 16 cells"]),
    ("ceiling of a board in words", ("exact_ceiling", ["four"]), 2, ["invalid int value: 'four'"]),
    ("reference with an argument", ("reference", ["docs"]), 2, ["unrecognized arguments"]),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A results folder holding one finished run (its table and checkpoint)."""
    root = tmp_path_factory.mktemp("stored")
    done = cli(["results_dir=results", *TINY, "hydra.launcher.figures=false"], root)
    assert done.returncode == 0, done.stderr
    return root / "results"


@pytest.fixture
def place(tmp_path, stored):
    """The working folder: a copy of the stored results, a damaged one, an empty one, a truncated
    checkpoint; and the paths the cases name."""
    shutil.copytree(stored, tmp_path / "results")
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "half.parquet").write_bytes(b"PAR1 half a file")
    (tmp_path / "empty").mkdir()
    checkpoint = next((tmp_path / "results" / "_checkpoints").glob("*.npz"))
    (tmp_path / "truncated.npz").write_bytes(checkpoint.read_bytes()[:300])
    return {"stored": tmp_path / "results", "damaged": tmp_path / "damaged", "empty": tmp_path / "empty",
            "missing": tmp_path / "missing", "table": next((tmp_path / "results").glob("*.parquet")),
            "truncated": tmp_path / "truncated.npz", "checkpoint": checkpoint}


def _main(command):
    """The command's main(), as its console script or `python -m` calls it."""
    if command == "sweep":
        from lab import sweep
        return sweep.main, "lab-sweep"
    if command == "bench":
        from lab.bench.__main__ import main
        return main, "lab-bench"
    import importlib

    module = {"plot": "analysis.plots", "summary": "analysis.summary", "report": "analysis.report",
              "export": "analysis.export", "exact_ceiling": "evaluation.exact_ceiling",
              "reference": "reference"}.get(command, command)
    return importlib.import_module(f"lab.{module}").main, f"lab-{command}"


def run(command, args, cwd) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the command run in this process in cwd."""
    main, name = _main(command)
    out, err, old = io.StringIO(), io.StringIO(), (sys.argv, os.getcwd())
    sys.argv = [name, *args]
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main() if command not in ("play", "exact_ceiling", "reference") else main(args)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv, _ = old
        os.chdir(old[1])
    return code or 0, out.getvalue(), err.getvalue()


IN_A_PROCESS = {"export to an unknown uri"}
"""Cases whose command starts a process (MLflow asks `uname`): integration"""


@pytest.mark.parametrize("command, status, words", [
    pytest.param(*c[1:], id=c[0], marks=[pytest.mark.integration] if c[0] in IN_A_PROCESS else []) for c in CASES])
def test_a_mistake_is_one_line_and_changes_nothing(place, tmp_path, monkeypatch, command, status, words):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    name, args = command
    args = [a.format(**place) for a in args]
    before = snapshot(tmp_path)
    code, _, err = run(name, args, tmp_path)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert code == status, err
    assert lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0]
    assert snapshot(tmp_path) == before, "a refused command changed the disk"
    assert not Path(UNWRITABLE).exists()


def test_the_walk_through_covers_every_command():
    assert len(CASES) >= 30
    assert {c[1][0] for c in CASES} >= {"sweep", "summary", "plot", "report", "export", "play", "bench",
                                        "exact_ceiling", "reference"}


def test_a_planted_regression_fails_the_walk_through(place, tmp_path, monkeypatch):
    """The check itself: a command that answers with a traceback is caught."""
    from lab import cli
    from lab.analysis import summary

    unwrapped = summary.main.__wrapped__  # as before issue 36: ResultsError escapes as a traceback
    monkeypatch.setattr(summary, "main", cli.one_line()(unwrapped))
    with pytest.raises(Exception, match="no such folder"):
        test_a_mistake_is_one_line_and_changes_nothing(place, tmp_path, monkeypatch, ("summary", ["{missing}"]), 2,
                                                       ["no such folder"])


@pytest.mark.integration
@pytest.mark.parametrize("args, status, words", [
    (["-m", "lab.sweep", "layer=3"], 2, ["did you mean `layers`?"]),
    (["-m", "lab.sweep", "--multirun", "+sweeps=smokee"], 2, ["did you mean `smoke`?"]),
    ([str(REPO / "analysis" / "plot_winrates.py"), "missing"], 2, ["no such folder"]),
    ([str(REPO / "analysis" / "summary.py"), "missing"], 2, ["no such folder"]),
    ([str(REPO / "analysis" / "boards_table.py"), "missing"], 2, ["no such folder"]),
], ids=["sweep knob", "named sweep", "plot_winrates.py", "summary.py", "boards_table.py"])
def test_a_real_process_says_one_line_and_exits_as_promised(tmp_path, args, status, words):
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status and len(lines) == 1, done.stderr
    assert all(word in lines[0] for word in words)
    assert not list(tmp_path.iterdir())


@pytest.mark.integration
def test_a_full_disk_is_one_line_and_status_1(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "lab.reference"], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=clean_env(), timeout=120)
    assert done.returncode == 1 and done.stderr == "error: No space left on device\n"


def test_an_empty_group_choice_says_it_needs_a_value(tmp_path):
    code, _, err = run("sweep", ["algorithm="], tmp_path)
    assert code == 2 and err.strip() == ("error: algorithm=: it needs a value; the options of algorithm are alphazero, "
                                         "mc_vfa, negamax_q, q_net, q_table, td_value")
