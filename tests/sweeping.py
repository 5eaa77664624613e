"""Helpers for tests that drive `python -m lab.sweep` as users do."""

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd

from lab import results
from lab.results import columns
from lab.config.compose import compose

REPO = Path(__file__).resolve().parents[1]
TINY = ["iterations=3", "episodes_per_update=20", "layers=1", "neurons=4"]
"""A run that takes milliseconds"""
TINY_RUNS = defaultdict(tuple, {
    "mc_vfa": ("layers=1", "neurons=4"),
    "q_table": (),
    "td_value": ("opponent=self",),
    "negamax_q": ("ensemble=2",),
    "q_net": ("layers=1", "neurons=4"),
    "alphazero": ("simulations=4", "train_steps=2", "gating_games=2", "neurons=8"),
})
"""Per algorithm, knobs that make a run of a few episodes take milliseconds (an algorithm not
listed, such as a new one, runs at its defaults)"""
SECONDS = ["iterations=400", "episodes_per_update=100", "layers=3", "neurons=64", "memory=keep",
           "epsilon=0", "symmetry=false"]
"""A run that takes a few seconds (long enough to be killed mid-run)"""


def clean_env(**extra) -> dict:
    """This environment without a Ray address or a Ray job around it, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_JOB_CONFIG_JSON_ENV_VAR")}
    env.update(extra)
    return env


def sweep(args, cwd, env=None, timeout=300, prelude=None) -> subprocess.CompletedProcess:
    """Run `python -m lab.sweep ARGS` in cwd (after the Python code `prelude`, if given). A sweep
    still running after `timeout` seconds fails the test with every thread's stack, its forks'
    included (faulthandler, on SIGABRT), so that a rare hang in CI says where it waits."""
    with subprocess.Popen(command(args, prelude), cwd=cwd, env={**(env or clean_env()), "PYTHONFAULTHANDLER": "1"},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in [*descendants(proc.pid), proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGABRT)
            stdout, stderr = proc.communicate(timeout=60)
            raise AssertionError(f"the sweep {' '.join(args)} still ran after {timeout} s; its threads:\n"
                                 f"{stderr[-30000:]}\nits output:\n{stdout[-3000:]}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def command(args, prelude=None) -> list[str]:
    if prelude is None:
        return [sys.executable, "-m", "lab.sweep", *args]
    code = f"{prelude}\nimport runpy\nrunpy.run_module('lab.sweep', run_name='__main__')"
    return [sys.executable, "-c", code, *args]


def snapshot(root) -> dict:
    """Every file and folder under root with its size, modification time and content hash."""
    out = {}
    for path in sorted(Path(root).rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (stat.st_size if path.is_file() else 0, stat.st_mtime_ns, digest)
    return out


def rows(results_dir) -> pd.DataFrame:
    """The stored rows, minus the columns allowed to differ between identical runs."""
    return results.load(results_dir).drop(columns=list(columns.CIRCUMSTANCES))


def values(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame's values with every missing marker (<NA>, NaN, None) as None, to compare
    lab.results.load (nullable integer and boolean dtypes) with what pandas.read_parquet gives."""
    return frame.astype(object).where(frame.notna(), None)


def descendants(pid: int) -> list[int]:
    """Every live process below pid (children, their children, ...)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def alone(overrides, results_dir) -> pd.DataFrame:
    """The rows of one run trained in this process, stored and read back like a sweep's."""
    from lab.config.jobs import job
    from lab.run import run

    results.commit(results_dir, results.pack([run(job(compose(*overrides)))]))
    return rows(results_dir)


def cli(args, cwd) -> subprocess.CompletedProcess:
    """`python -m lab.sweep ARGS` in cwd, run in this process (no interpreter start-up cost)."""
    import contextlib
    import io

    from lab import sweep as lab_sweep

    out, err, old = io.StringIO(), io.StringIO(), (sys.argv, os.getcwd())
    sys.argv = ["lab.sweep", *args]
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            lab_sweep.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old[0]
        os.chdir(old[1])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


SERIAL = ["hydra.launcher.parallel=false", "hydra.launcher.figures=false"]
"""A sweep that trains in this process, one run after another, and draws no figures"""


def serial_grid(cwd, *args) -> subprocess.CompletedProcess:
    """`python -m lab.sweep --multirun results_dir=results TINY SERIAL ARGS` in cwd, in this process."""
    return cli(["--multirun", "results_dir=results", *TINY, *SERIAL, *args], cwd)
