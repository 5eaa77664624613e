"""Whatever a command starts is gone when it is stopped (issue 36): SIGTERM (`timeout`, `kill`)
does what Ctrl-C does, and a grid (in forks, on Ray), a search and the benchmark, stopped while
they train, leave no process and no temporary folder behind."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from lab import cli
from lab.execution import workers
from lab.search.trial import Trainer
from sweeping import clean_env, descendants, title


@pytest.fixture
def short_tmp():
    """A TMPDIR short enough for Ray's socket paths (107 bytes), removed after the test."""
    folder = Path(tempfile.mkdtemp(prefix="lab-t", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def handlers():
    kept = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGTERM, kept[0])
    signal.signal(signal.SIGINT, kept[1])


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_sigterm_does_what_ctrl_c_does_and_the_first_signal_stops_it(handlers, first):
    cli.terminate_as_interrupt()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), first)
        time.sleep(1)  # the handler runs here
    for later in (signal.SIGTERM, signal.SIGINT):  # while it stops, nothing cuts that short
        os.kill(os.getpid(), later)
        time.sleep(0.1)


@pytest.mark.integration
def test_a_search_fork_ended_by_the_same_sigterm_is_the_interrupt_not_a_lost_worker(handlers):
    """`timeout` signals the whole process group: a search's fork may die of it before the driver
    looks at its own signal (CI once saw "every worker died", exit 1, instead of exit 130)."""
    cli.terminate_as_interrupt()
    with workers.Interrupt() as interrupt:
        forks = workers.Forks(1, (Trainer, ({},)), interrupt)
        try:
            def killpg():  # from another thread: the driver's main thread is waiting on the pipes
                os.kill(os.getpid(), signal.SIGTERM)
                os.kill(forks.processes[0].pid, signal.SIGTERM)
            threading.Timer(0.3, killpg).start()
            with pytest.raises(KeyboardInterrupt):
                forks.answers_ready(timeout=10)
        finally:
            forks.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _left(pids, seconds=10) -> list[int]:
    """Those of pids still running after up to `seconds` (a process takes a moment to end)."""
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def _stop_when(proc, started, seconds=300) -> set[int]:
    """Watch proc's descendants until `started(titles)` holds, then SIGTERM its process group as
    `timeout` does, and proc itself once more; every descendant seen."""
    seen, deadline = set(), time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        kids = descendants(proc.pid)
        seen |= set(kids)
        if started([title(p) for p in kids]):
            break
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):  # and again, as the benchmark stops its sweeps
            os.kill(proc.pid, signal.SIGTERM)
    return seen


@pytest.mark.integration
@pytest.mark.slow
def test_the_benchmark_stopped_by_timeout_leaves_nothing_behind(tmp_path, short_tmp):
    """Stopped while one of its sweeps trains (in forks; on 2 cores its sweeps on Ray start after
    a minute): the sweep stops, then the benchmark, and every folder it made is gone."""
    proc = subprocess.Popen([sys.executable, "-m", "lab.bench", "--quick", "--parallel"], cwd=tmp_path,
                            env=clean_env(TMPDIR=str(short_tmp)), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sweeping_since = []

    def sweeping(titles) -> bool:  # a sweep of the benchmark has trained for 2 s
        if any("lab.sweep" in t for t in titles):
            sweeping_since.append(time.monotonic())
        return bool(sweeping_since) and time.monotonic() - sweeping_since[0] > 2
    try:
        seen = _stop_when(proc, sweeping)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # (Ray's processes, sent the same SIGTERM, may log it on the stderr they share: "in", not "last")
    assert proc.returncode == 130 and "interrupted: the benchmark stopped" in err, out + err
    assert _left(seen) == []
    assert [p.name for p in short_tmp.iterdir() if p.name != "ray"] == []  # Ray keeps its logs


def _stopped_when(started, args, cwd, tmp) -> tuple[subprocess.CompletedProcess, set[int]]:
    """`python -m lab.sweep ARGS` in cwd, sent SIGTERM (as `kill` does) once `started(titles)`
    holds for its processes' titles."""
    proc = subprocess.Popen([sys.executable, "-m", "lab.sweep", *args], cwd=cwd, env=clean_env(TMPDIR=str(tmp)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        seen = _stop_when(proc, started)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), seen


def _for(seconds, wanted):
    """A predicate: `wanted(titles)` has held for `seconds`."""
    since = []

    def started(titles) -> bool:
        if not since and wanted(titles):
            since.append(time.monotonic())
        return bool(since) and time.monotonic() - since[0] > seconds
    return started


LONG_Q_TABLE = ["algorithm=q_table", "iterations=300", "episodes_per_update=40000", "hydra.launcher.figures=false",
                "results_dir=results"]
"""Runs of some 10 s each on 2 cores"""


@pytest.mark.integration
@pytest.mark.parametrize("args, said, training", [
    (["--multirun", "seed=range(0,6)", "hydra.launcher.parallel=processes"], "of this sweep",
     lambda titles: bool(titles)),
    (["--multirun", "hydra/sweeper=search", "hydra.sweeper.num_samples=6", "alpha=interval(0.1,0.5)"],
     "the trials that ended are saved", lambda titles: bool(titles)),
    # once Ray has started: a SIGTERM during its start meets Ray's own handler (see lab.execution.ray_connection)
    (["--multirun", "seed=range(0,6)", "hydra.launcher.parallel=true"], "of this sweep",
     lambda titles: any(t.startswith("ray::") and "Agent" not in t for t in titles)),
], ids=["grid in forks", "search", "grid on Ray"])
def test_a_sweep_stopped_by_sigterm_stops_what_it_started(tmp_path, short_tmp, args, said, training):
    done, seen = _stopped_when(_for(3, training), [*args, *LONG_Q_TABLE], tmp_path, short_tmp)
    left = _left(seen)
    for pid in left:  # not to leave them to the next test
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert done.returncode == 130 and said in done.stderr.strip().splitlines()[-1], done.stderr[-2000:]
    assert left == []
    assert [p.name for p in short_tmp.iterdir() if p.name != "ray"] == []


def test_ctrl_c_while_a_grid_draws_its_figures_is_one_line_and_status_130(tmp_path, monkeypatch, capsys, handlers):
    import lab.analysis.report
    from lab import sweep

    (tmp_path / "run.parquet").write_bytes(b"")  # a run file: the folder is drawn

    def stopped(results_dir, every):
        raise KeyboardInterrupt
    monkeypatch.setattr(lab.analysis.report, "analyse", stopped)
    with pytest.raises(SystemExit) as stop:
        sweep.analyse([tmp_path])
    assert stop.value.code == 130
    assert capsys.readouterr().err.strip() == ("interrupted while drawing the figures: every finished run is "
                                               "saved; the same command draws them again")


@pytest.mark.integration
def test_a_search_stopped_while_its_figures_are_drawn_stops_the_drawing_process(tmp_path, capsys, handlers):
    from lab.search import driver

    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))  # once the drawing has started
    timer.start()
    started = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        driver._apart(time.sleep, 60)  # a drawing of a minute (its argument stands for the results_dir)
    timer.cancel()
    assert stop.value.code == 130 and time.monotonic() - started < 30
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted while drawing the search's figures: its trials are all saved; lab-report 60 draws its "
        "report again"]
    assert [c for c in __import__("multiprocessing").active_children() if c.name == "search figures"] == []
