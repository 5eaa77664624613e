"""Faults a long sweep meets, each staged for real: a Ray worker killed mid-run, the sweep process
SIGKILLed halfway or in the middle of writing a table, Ctrl-C, runs that raise or diverge, and two
sweeps writing into one results_dir at once."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab import agents, results
from lab.agents import mc_vfa
from lab.cli import plural
from sweeping import SECONDS, TINY, clean_env, cli, command, descendants, rows, sweep, title

pytestmark = pytest.mark.integration

SERIAL = "hydra.launcher.parallel=false"
RAY = "hydra.launcher.parallel=true"  # on Ray however short the runs
NO_FIGURES = "hydra.launcher.figures=false"  # figures are not what these tests are about


def _wait_for(condition, timeout=120.0, what="condition", proc=None):
    """Poll until `condition()`; a sweep `proc` that ends first, or the timeout, fails naming what
    was waited for, with the sweep's output and its processes' titles (a CI run's only clue)."""
    deadline = time.monotonic() + timeout
    while not condition():
        ended = proc is not None and proc.poll() is not None
        if ended or time.monotonic() > deadline:
            clue = "" if proc is None else (f"\nprocesses: {[title(p) for p in descendants(proc.pid)]}"
                                            f"\noutput:\n{_output(proc)[-4000:]}")
            raise TimeoutError(f"no {what} " + ("before the sweep ended" if ended else f"after {timeout}s") + clue)
        time.sleep(0.05)


@pytest.fixture
def spawn(tmp_path):
    """Start `python -m lab.sweep ARGS` in its own process group; the group is killed at teardown."""
    started = []

    def start(args, prelude=None):
        out = open(tmp_path / f"sweep{len(started)}.log", "w+")
        proc = subprocess.Popen(command(args, prelude), cwd=tmp_path, env=clean_env(), stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        proc.log = out
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.log.close()


def _output(proc) -> str:
    proc.log.seek(0)
    return proc.log.read()


def _complete(results_dir, iterations):
    """Every stored run finished with all its iterations; returns the tidy table."""
    table = results.load(results_dir)
    for run_id, run_rows in table.groupby("run_id"):
        assert list(run_rows["iteration"]) == list(range(1, iterations + 1)), run_id
        assert (run_rows["status"] == "finished").all(), run_id
    return table


@pytest.mark.slow
def test_a_ray_worker_killed_mid_run_is_retried_and_the_sweep_completes(tmp_path, spawn):
    # runs long enough that the driver's early fork (lab.sweep.dispatch), busy with them while Ray
    # starts, leaves one to Ray: six, for a Ray that takes longer to start than a few runs (ray.init
    # alone took 8 s on a quiet 2-core machine, more beside a training fork or another test)
    proc = spawn(["--multirun", NO_FIGURES, RAY, "results_dir=results", *SECONDS, "iterations=1200",
                  "seed=range(0,6)"])

    def running_task():
        return [p for p in descendants(proc.pid) if title(p).startswith("ray::mc_vfa:")]

    _wait_for(running_task, what="Ray worker running a training task", proc=proc)
    victim = running_task()[0]
    os.kill(victim, signal.SIGKILL)
    assert len(results.run_files(tmp_path / "results")) < 6  # it died mid-run, before its result
    assert proc.wait(timeout=300) == 0, _output(proc)
    assert "6 runs finished, 0 failed, 1 retried after their worker or node was lost" in _output(proc)
    assert "lost with ActorDiedError: sent again (1 of 3)" in _output(proc)
    table = _complete(tmp_path / "results", iterations=1200)
    assert sorted(table.drop_duplicates("run_id")["seed"]) == list(range(6))


def test_a_sweep_killed_halfway_keeps_every_finished_run_and_resumes(tmp_path, spawn):
    grid = ["--multirun", SERIAL, NO_FIGURES, "results_dir=results", *SECONDS, "iterations=80", "seed=0,1,2,3"]
    proc = spawn(grid)
    _wait_for(lambda: len(results.run_files(tmp_path / "results")) >= 2, what="two finished runs", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    survivors = results.run_files(tmp_path / "results")
    assert 2 <= len(survivors) < 4
    for path in survivors:  # each file is whole: readable, all iterations, its checkpoint loads
        assert pq.read_table(path).num_rows == 80
        agents.load(results.checkpoint(tmp_path / "results", path.stem))
    _complete(tmp_path / "results", iterations=80)
    pd.read_parquet(tmp_path / "results")  # what a notebook reads works too
    kept = {p: p.read_bytes() for p in survivors}

    again = sweep(grid, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{len(survivors)} runs already finished in results_dir: skipped" in again.stdout
    assert f"{4 - len(survivors)} runs finished, 0 failed" in again.stdout
    assert len(_complete(tmp_path / "results", iterations=80).drop_duplicates("run_id")) == 4
    assert all(p.read_bytes() == content for p, content in kept.items())  # not re-run


def test_ctrl_c_cancels_the_runs_in_flight_keeps_the_finished_ones_and_the_same_command_resumes(tmp_path, spawn):
    # 16 runs of a few seconds: the fork that trains while Ray starts (lab.sweep.dispatch) must not
    # finish them all first, which 8 did once in CI while the cluster tier loaded the machine
    seeds = 16
    grid = ["--multirun", NO_FIGURES, RAY, "results_dir=results", *SECONDS, f"seed=range(0,{seeds})",
            "hydra.launcher.num_cpus=2"]
    proc = spawn(grid)

    def training():  # Ray workers are titled after the call they run: ray::<algorithm>:<run id>
        return [p for p in descendants(proc.pid) if title(p).startswith("ray::mc_vfa:")]

    _wait_for(lambda: len(results.run_files(tmp_path / "results")) >= 2 and training(),
              what="two finished runs and one in flight", timeout=240.0, proc=proc)
    workers = training()
    # a call of several short runs is named after its first: ray::<algorithm>:<run id>+<more>
    assert all(re.fullmatch(r"ray::mc_vfa:[0-9a-f]{16}(\+[0-9]+)?", title(p)) for p in workers)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    assert proc.wait(timeout=60) == 130, _output(proc)
    output = _output(proc)
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    saved = results.run_files(tmp_path / "results")
    assert 2 <= len(saved) < seeds
    assert (f"interrupted: {plural(len(saved), 'finished run')} of this sweep {'is' if len(saved) == 1 else 'are'} saved; the same command resumes "
            "the rest") in output.splitlines()
    _wait_for(lambda: not any(Path(f"/proc/{p}").exists() for p in workers), timeout=30,
              what="cancelled runs gone")
    _complete(tmp_path / "results", iterations=400)
    kept = {p: p.read_bytes() for p in saved}

    again = sweep(grid, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{len(saved)} runs already finished in results_dir: skipped" in again.stdout
    assert f"{seeds - len(saved)} runs finished, 0 failed" in again.stdout
    assert len(_complete(tmp_path / "results", iterations=400).drop_duplicates("run_id")) == seeds
    assert all(p.read_bytes() == content for p, content in kept.items())


STALLED_WRITER = """
import io, sys, time
from lab import results
from lab.config.jobs import job
from lab.run import run
from lab.config.compose import compose
from sweeping import TINY

results_dir = sys.argv[1]
first = run(job(compose(*TINY)))
results.commit(results_dir, results.pack([first]))
print("saved", flush=True)

from lab import files

opened = []

def half_then_stall(fd, mode, closefd):  # the process dies in the middle of writing the table
    class Half(io.FileIO):
        def write(self, data):
            if len(opened) == 1:  # the checkpoint, written first, whole
                return super().write(data)
            super().write(data[: len(data) // 2])
            print("half written", flush=True)
            time.sleep(600)
    opened.append(fd)
    return Half(fd, mode, closefd=closefd)

files.open = half_then_stall  # the open of lab.files.write_group, which writes each file
results.commit(results_dir, results.pack([run(job(compose(*TINY)))]))  # the same run again (as force=true does)
"""


def test_a_process_killed_while_writing_never_leaves_a_partial_table(tmp_path):
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    tests = Path(__file__).parent
    proc = subprocess.Popen([sys.executable, "-c", STALLED_WRITER, str(results_dir)], cwd=tests,
                            stdout=subprocess.PIPE, text=True, env=clean_env(PYTHONPATH=str(tests)))
    try:
        assert proc.stdout.readline().strip() == "saved"
        (path,) = results.run_files(results_dir)
        whole = path.read_bytes()
        assert proc.stdout.readline().strip() == "half written"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    (partial,) = [p for p in results_dir.iterdir() if p.name.startswith(f".{path.name}.")]
    assert 0 < partial.stat().st_size < len(whole)  # the kill really hit mid-write
    assert path.read_bytes() == whole  # the stored table is the complete earlier one
    assert results.statuses(results_dir) == {path.stem: "finished"}
    assert len(results.load(results_dir)) == 3
    assert len(pd.read_parquet(results_dir)) == 3  # pyarrow skips the hidden partial file too


def _iterate_diverging_for_seed_1(iterate):
    def iterate_diverging(self):
        if self.run.seed == 1:
            self.alpha = float("inf")  # a step size that makes the network's weights inf / NaN
        return iterate(self)
    return iterate_diverging


@pytest.fixture(scope="module")
def failing_sweep(tmp_path_factory):
    """A grid with one good run, one that diverges (NaN) and two that raise (MemoryError: a
    10^15-unit layer), run twice: the second run is the resume of the first."""
    cwd = tmp_path_factory.mktemp("failing")
    grid = ["--multirun", SERIAL, NO_FIGURES, "results_dir=results", *TINY, "seed=0,1", "neurons=4,1000000000000000"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mc_vfa.Learner, "iterate", _iterate_diverging_for_seed_1(mc_vfa.Learner.iterate))
        first = cli(grid, cwd)
        stored = results.load(cwd / "results")
        second = cli(grid, cwd)
    return first, stored, second


def test_runs_that_raise_or_diverge_are_recorded_and_the_others_complete(failing_sweep):
    first, stored, _ = failing_sweep
    assert first.returncode == 1
    assert "1 run finished, 3 failed" in first.stdout
    summary = [line for line in first.stderr.splitlines() if line.startswith("  failed ")]
    assert len(summary) == 3
    assert sum("FloatingPointError: network diverged" in line for line in summary) == 1
    assert sum("MemoryError" in line for line in summary) == 2
    good = stored[(stored.seed == 0) & (stored.neurons == 4)]
    assert list(good.iteration) == [1, 2, 3] and (good.status == "finished").all()
    assert good.error.isna().all()
    failed = stored[stored.status == "failed"]
    assert failed.run_id.nunique() == 3 and stored.run_id.nunique() == 4
    diverged = failed[failed.neurons == 4]
    assert diverged.error.str.contains("network diverged: a gradient step produced NaN or inf").all()
    assert failed[failed.neurons > 4].error.str.contains("Unable to allocate").all()


def test_resume_skips_finished_runs_and_reruns_failed_ones_saying_so(failing_sweep):
    _, _, second = failing_sweep
    assert "1 run already finished in results_dir: skipped (force=true re-runs them)" in second.stdout
    assert "3 runs failed before in results_dir: re-running them" in second.stdout
    assert "0 runs finished, 3 failed" in second.stdout
    assert second.returncode == 1


def test_resume_reruns_missing_runs_and_force_reruns_everything(tmp_path):
    grid = ["--multirun", SERIAL, NO_FIGURES, "results_dir=results", *TINY, "seed=0,1,2"]
    assert cli(grid, tmp_path).returncode == 0
    first = rows(tmp_path / "results")
    missing = results.run_files(tmp_path / "results")[0]
    missing.unlink()
    again = cli(grid, tmp_path)
    assert "2 runs already finished in results_dir: skipped" in again.stdout
    assert "1 run finished, 0 failed" in again.stdout
    pd.testing.assert_frame_equal(rows(tmp_path / "results"), first)
    forced = cli([*grid, "force=true"], tmp_path)
    assert "3 runs already finished in results_dir: re-running them (force=true)" in forced.stdout
    assert "3 runs finished, 0 failed" in forced.stdout
    pd.testing.assert_frame_equal(rows(tmp_path / "results"), first)


def test_two_sweeps_into_one_results_dir_at_once(tmp_path, spawn):
    common = [SERIAL, NO_FIGURES, "results_dir=results", *SECONDS, "iterations=30"]
    one = spawn(["--multirun", *common, "seed=0,1,2"])
    two = spawn(["--multirun", *common, "seed=1,2,3"])
    assert one.wait(timeout=300) == 0, _output(one)
    assert two.wait(timeout=300) == 0, _output(two)
    table = _complete(tmp_path / "results", iterations=30)
    assert sorted(table.drop_duplicates("run_id").seed) == [0, 1, 2, 3]
    assert not [p for p in (tmp_path / "results").rglob(".*")]  # no temporary file left behind


WRITER = """
import sys
from lab import results
from lab.config.jobs import job
from lab.run import run
from lab.config.compose import compose
from sweeping import TINY
result = run(job(compose(*TINY)))
for _ in range(int(sys.argv[2])):
    results.commit(sys.argv[1], results.pack([result]))
"""


def test_concurrent_writers_of_one_run_never_show_a_reader_a_broken_table(tmp_path):
    """Two processes rewrite the same run file over and over while this one keeps reading it."""
    tests = Path(__file__).parent
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "25"], cwd=tests,
                                env=clean_env(PYTHONPATH=str(tests))) for _ in range(2)]
    reads = 0
    try:
        while any(w.poll() is None for w in writers):
            if results.run_files(tmp_path):
                assert len(results.load(tmp_path)) == 3  # raises on a torn or partial file
                reads += 1
    finally:
        for w in writers:
            w.kill()
            w.wait()
    assert [w.returncode for w in writers] == [0, 0]
    assert reads > 5
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
