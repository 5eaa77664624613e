"""Which code, on which machine, produced a run: the provenance columns of every run table.

`code()` is what the driver knows (lab version, git commit and dirty flag, command line); it
travels with each job, since a worker on a cluster runs the package without its repository.
`machine()` is what the worker adds. lab.run stamps both, with start and end times, on every row.
"""

import platform
import shlex
import socket
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

PACKAGES = ("numpy", "numba", "ray", "pandas")
COLUMNS = ("started_utc", "finished_utc", "lab_version", "git_commit", "git_dirty", "command",
           "host", "python_version", *(f"{p}_version" for p in PACKAGES))
"""The provenance columns, in table order (times are UTC timestamps, git_dirty a boolean, the
rest strings; git_commit and git_dirty are null when the lab was not imported from a git
repository)."""


def _git(*args) -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


@cache
def version() -> dict:
    """The code version that runs, as `same_code` compares it: lab version and git commit (one
    quick git call; `code` adds the slower dirty check)."""
    return {"lab_version": metadata.version("tictactoe-lab"), "git_commit": _git("rev-parse", "HEAD")}


@cache
def code() -> dict:
    """The code that runs (the module doc): `version`, the dirty flag, this process's command line."""
    changes = _git("status", "--porcelain", "--untracked-files=no") if version()["git_commit"] else None
    return {**version(), "git_dirty": None if changes is None else changes != "",
            "command": shlex.join([Path(sys.orig_argv[0]).name, *sys.orig_argv[1:]])}


@cache
def machine() -> dict:
    """The host and the versions of Python and the packages that compute a run."""
    return {"host": socket.gethostname(), "python_version": platform.python_version(),
            **{f"{p}_version": metadata.version(p) for p in PACKAGES}}


def version_of(row) -> str:
    """A run's code version for comparing runs: its commit (marked +dirty) or its lab version."""
    if row.get("git_commit"):
        return row["git_commit"][:12] + ("+dirty" if row.get("git_dirty") else "")
    if row.get("lab_version") is None:
        return "unknown (no provenance)"
    return f"lab {row.get('lab_version')}"


def same_code(a, b) -> bool:
    """Whether two code stamps (a run's row, `code()`) name the same code version: the same git
    commit where both have one, else the same lab version. Not the dirty flag: two dirty trees of
    one commit cannot be told apart (after uncommitted changes to a learner, re-run with force=true)."""
    if a.get("git_commit") and b.get("git_commit"):
        return a["git_commit"] == b["git_commit"]
    return a.get("lab_version") is not None and a.get("lab_version") == b.get("lab_version")
