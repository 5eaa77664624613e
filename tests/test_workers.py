"""The workers a sweep's runs and a search's trials train on (lab.execution.workers), as a grid uses them
(lab.sweep.dispatch): forks of the driver, as early forks while Ray starts or as a sweep's only
trainers, each run once with the rows this process would give; a fork that dies; Ctrl-C; and
Ray's quicker stop (lab.sweep.disconnect)."""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from lab import results
from lab.execution import batch, workers
from lab.results import columns
from lab import sweep as sweep_module
from lab.cli import plural
from lab.config.compose import grid
from lab.config.jobs import job
from lab.run import run
from lab.sweep import dispatch, store
from sweeping import SECONDS, TINY, clean_env, cli, command, descendants, rows, sweep, values

pytestmark = pytest.mark.integration


def _jobs(tmp_path, seeds=6, *extra):
    composer, overrides = grid(*TINY, *extra, f"seed=range(0,{seeds})", f"results_dir={tmp_path}")
    return [job(composer(o)) for o in overrides]


def _without_circumstances(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=list(columns.CIRCUMSTANCES)).reset_index(drop=True)


def _alone(job_) -> pd.DataFrame:
    """The run's table trained in this process, as its worker packs it."""
    return results.table_of(run(job_, code={}).records).to_pandas()


def _kept(jobs):
    return store.Store(jobs, sweep_module.Progress(len(jobs)))


class Echo:
    """A server that answers a call with its argument."""

    def echo(self, argument):
        return argument


def test_forks_end_by_themselves_once_the_driver_closes_their_pipes():
    """No fork holds an end of the driver's pipes, its own or another fork's: closing them ends
    every fork without a signal."""
    pool = workers.Forks(2, (Echo, ()))
    pool.send(1, ("echo", 7))
    assert pool.answers_ready(timeout=10) == [(1, 7)]
    for pipe in pool.calls + pool.answers:
        pipe.close()
    for process in pool.processes:
        process.join(timeout=10)
    assert [process.exitcode for process in pool.processes] == [0, 0]


def test_a_sigterm_that_reaches_a_forks_other_thread_still_ends_it():
    """The driver's Python SIGTERM handler, which a fork inherits, runs only in the fork's main
    thread, which waits for calls and runs no Python: SIGTERM handed to the reader thread left
    the fork running, and the driver's `close` waited for it forever (CI, test_kill)."""
    tgkill = 234  # x86-64's syscall number: a signal to one thread of another process
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        pool = workers.Forks(1, (Echo, ()))
    finally:
        signal.signal(signal.SIGTERM, previous)
    pid = pool.processes[0].pid
    deadline = time.monotonic() + 10
    while len(os.listdir(f"/proc/{pid}/task")) < 3 and time.monotonic() < deadline:  # its reader and sender
        time.sleep(0.01)
    reader = max(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)
    assert ctypes.CDLL(None, use_errno=True).syscall(tgkill, pid, reader, signal.SIGTERM) == 0
    pool.processes[0].join(timeout=10)
    try:
        assert pool.processes[0].exitcode == -signal.SIGTERM
    finally:
        pool.processes[0].kill()  # not left waiting, should it still run
        pool.close()


def test_forks_answer_each_call_in_order_with_the_rows_of_this_process(tmp_path):
    jobs = _jobs(tmp_path)
    calls = [jobs[:2], *([j] for j in jobs[2:])]
    pool = workers.Forks(2, (batch.Trainer, ({},)))  # no token: runs sent home, not written
    try:
        assert pool.grow() == [0, 1] and pool.grow() == []
        for i, call in enumerate(calls):
            pool.send(i % 2, ("train", call))
        answers = []
        deadline = time.monotonic() + 60
        while len(answers) < len(calls) and time.monotonic() < deadline:
            answers += pool.answers_ready(timeout=1.0)
    finally:
        pool.close()
    assert [w for w, _ in answers if w == 0] == [0, 0, 0] and len(answers) == len(calls)
    trained = [(j, p) for i in (0, 1) for call, (_, packs) in zip(calls[i::2], [a for a in answers if a[0] == i])
               for j, p in zip(call, packs)]
    assert sorted(j.run_id for j, _ in trained) == sorted(j.run_id for j in jobs)
    for job_, packed in trained:
        assert packed.run_id == job_.run_id and packed.key is None
        pd.testing.assert_frame_equal(_without_circumstances(packed.table.to_pandas()),
                                      _without_circumstances(_alone(job_)))


def test_early_forks_are_fed_until_ray_is_ready_then_end_after_the_batch_in_hand(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, seeds=12)

    def slowly(job_, code):  # 0.2 s a run: the early fork is busy when Ray is ready
        time.sleep(0.2)
        return run(job_, code)

    monkeypatch.setattr(batch, "run", slowly)  # the fork inherits it
    with _kept(jobs) as kept:
        grid_ = dispatch.Grid(jobs, 2, kept)
        early = workers.Forks(1, (batch.Trainer, ({}, kept.token)))
        ready = threading.Event()
        feeding = threading.Thread(target=grid_.feed, args=(early, ready))
        feeding.start()
        deadline = time.monotonic() + 60
        while not kept.done:  # Ray starts, until the early fork has trained a batch (however loaded the machine)
            assert time.monotonic() < deadline, "the early fork trained nothing"
            time.sleep(0.05)
        ready.set()
        feeding.join()
        by_fork = len(kept.done)
        ray = workers.InProcess((batch.Trainer, ({}, kept.token)))
        trained_by_ray = []
        ray.server.train = lambda b: trained_by_ray.extend(b) or batch.Trainer({}, kept.token).train(b)
        grid_.run([early, ray], early=early)
    assert 0 < by_fork and 0 < len(trained_by_ray) < 12 - by_fork  # some it had in hand then
    assert sorted(o.run_id for o in kept.done) == sorted(j.run_id for j in jobs)  # each once
    assert results.statuses(tmp_path) == {j.run_id: "finished" for j in jobs}
    assert not any(p.is_alive() for p in early.processes)


def test_runs_a_fork_stored_before_it_was_stopped_are_reported_saved(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, seeds=2)
    stored = batch.Trainer.train

    def stored_then_stopped(*args):
        stored(*args)
        time.sleep(60)  # stopped (Ctrl-C) after storing its batch, before saying so

    monkeypatch.setattr(batch.Trainer, "train", stored_then_stopped)  # the fork inherits it
    with _kept(jobs) as kept:
        grid_ = dispatch.Grid(jobs, 1, kept)
        pool = workers.Forks(1, (batch.Trainer, ({}, kept.token)))
        grid_.live = [(pool, w) for w in pool.grow()]
        grid_.send(pool, 0)
        deadline = time.monotonic() + 60
        while not results.run_files(tmp_path):
            assert time.monotonic() < deadline, "the fork stored nothing"
            time.sleep(0.05)
        grid_.stop([pool])
    stored = {path.stem for path in results.run_files(tmp_path)}
    assert [o.run_id for o in kept.done] == [jobs[0].run_id] and stored == {jobs[0].run_id}
    assert results.statuses(tmp_path) == {jobs[0].run_id: "finished"}


def test_a_sweep_on_a_slow_starting_ray_saves_each_run_once(tmp_path):
    # Ray's start made 2 s slower: the early forks surely train some runs meanwhile
    prelude = """
import atexit, time
from lab.execution import ray_connection
from lab.sweep import dispatch
trained, connect, answers = [0], ray_connection.connect, dispatch.Grid._answers
def slow_connect(*args, **kwargs):
    time.sleep(2)
    connect(*args, **kwargs)
def counted(self, pool, got):
    if isinstance(pool, dispatch.Forks):
        trained[0] += sum(len(packs) for _, packs in got if isinstance(packs, list))
    answers(self, pool, got)
ray_connection.connect, dispatch.Grid._answers = slow_connect, counted
atexit.register(lambda: print("early forks trained", trained[0]))
"""
    args = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.parallel=true",
            "hydra.launcher.num_cpus=2", "results_dir=out", *TINY, "seed=range(0,12)"]
    done = sweep(args, cwd=tmp_path, prelude=prelude)
    assert done.returncode == 0, done.stderr
    assert "12 runs finished, 0 failed" in done.stdout
    trained = int(done.stdout.rsplit("early forks trained ", 1)[1].split()[0])
    assert 0 < trained <= 12
    stored = rows(tmp_path / "out")
    assert stored.groupby("run_id").size().tolist() == [3] * 12  # every run once, whole
    for job_ in _jobs(tmp_path / "out", seeds=12)[::5]:
        alone = _without_circumstances(_alone(job_))
        mine = stored[stored.run_id == job_.run_id].reset_index(drop=True)
        pd.testing.assert_frame_equal(values(mine[alone.columns]), values(alone))


def test_disconnect_stops_every_process_of_the_local_ray():
    script = """
import os
from lab import sweep
from lab.compat import ray as ray_compat
import ray
sweep.connect(num_cpus=1)
processes = ray_compat.local_node_processes()
pids = [info.process.pid for infos in processes.values() for info in infos]
assert "monitor" in processes
sweep.disconnect()
alive = []
for pid in pids:
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
print("alive", alive, ray.is_initialized())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("alive [] False")


NO_RAY = """
from lab.execution import ray_connection
def no_ray(*args, **kwargs):
    raise AssertionError("this sweep should not start Ray")
ray_connection.connect = no_ray
"""


def test_auto_trains_a_short_grid_in_forks_alone(tmp_path):
    # 4 runs of about 0.2 s predicted each: 0.4 s a core, far less than Ray's start
    args = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.num_cpus=2", "results_dir=out",
            *TINY, "iterations=2000", "seed=range(0,4)"]
    done = sweep(args, cwd=tmp_path, prelude=NO_RAY)
    assert done.returncode == 0, done.stderr
    assert ("is under the 30 s a core for which starting Ray (about 3 s) pays: training them in 2 forks of this "
            "process") in done.stdout
    assert "4 runs finished, 0 failed" in done.stdout and "of 2 cores busy" in done.stdout
    stored = rows(tmp_path / "out")
    assert stored.groupby("run_id").size().tolist() == [2000] * 4  # every run once, whole
    for job_ in _jobs(tmp_path / "out", 4, "iterations=2000")[::3]:
        alone = _without_circumstances(_alone(job_))
        mine = stored[stored.run_id == job_.run_id].reset_index(drop=True)
        pd.testing.assert_frame_equal(values(mine[alone.columns]), values(alone))


def test_forks_started_ahead_of_the_plan_train_the_grid_after_warming_up(tmp_path, monkeypatch):
    jobs, trained_by = _jobs(tmp_path / "results", seeds=4), tmp_path / "trained_by"
    trained_by.mkdir()

    def run_noting_its_process(job_, code):
        (trained_by / str(os.getpid())).touch()
        return run(job_, code)

    monkeypatch.setattr(batch, "run", run_noting_its_process)
    ahead = dispatch.fork_ahead(len(jobs), "processes", num_cpus=2)
    execution = sweep_module.execute(jobs, num_cpus=2, parallel="processes", ahead=ahead)
    assert {int(p.name) for p in trained_by.iterdir()} <= {p.pid for p in ahead.pool.processes}
    assert results.statuses(tmp_path / "results") == {j.run_id: "finished" for j in jobs}
    assert execution.cores == 2 and execution.warm_up == sum(ahead.pool.warmed) > 0
    assert not any(p.is_alive() for p in ahead.pool.processes)


def test_forks_started_ahead_are_closed_where_the_grid_trains_elsewhere(tmp_path):
    jobs = _jobs(tmp_path / "results", seeds=4)  # milliseconds of work: this process trains them
    assert sweep_module.mode(jobs, "auto", num_cpus=2) == "driver"
    ahead = dispatch.fork_ahead(len(jobs), "auto", num_cpus=2)
    execution = sweep_module.execute(jobs, num_cpus=2, parallel="auto", ahead=ahead)
    assert execution.cores == 1 and execution.warm_up == 0.0 and len(execution.done) == 4
    assert not any(p.is_alive() for p in ahead.pool.processes)


@pytest.mark.parametrize("count, parallel, address, num_cpus", [
    (4, "auto", None, 1),  # one core
    (3, "auto", None, 2),  # under two runs a core
    (4, False, None, 2), (4, True, None, 2),  # this process, or Ray
    (4, "auto", "10.0.0.1:6379", 2),  # a cluster
])
def test_no_forks_are_started_ahead_where_the_grid_will_not_train_in_them(count, parallel, address, num_cpus):
    assert dispatch.fork_ahead(count, parallel, address, num_cpus) is None


def test_a_sweep_refused_or_with_nothing_left_to_train_leaves_no_fork(tmp_path):
    import multiprocessing

    grid = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.parallel=processes",
            "hydra.launcher.num_cpus=2", "results_dir=results", *TINY, "seed=range(0,4)"]
    refused = cli([*grid, "layers=1,0"], tmp_path)  # forks started ahead, then the plan refuses it
    assert refused.returncode == 2 and "layers=0 is not allowed" in refused.stderr
    assert multiprocessing.active_children() == [] and not (tmp_path / "results").exists()
    for trained in (4, 0):
        done = cli(grid, tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"{trained} runs to train" in done.stdout and multiprocessing.active_children() == []


def test_a_fork_that_dies_fails_its_runs_and_the_driver_trains_what_it_had_not_begun(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, seeds=4)  # equal costs: one run a batch on one core, in grid order
    doomed = jobs[1]

    def run_or_die(job_, code):
        if job_.run_id == doomed.run_id:
            os._exit(3)  # as a crash would: nothing sent, no goodbye
        return run(job_, code)

    monkeypatch.setattr(batch, "run", run_or_die)
    done = sweep_module.execute(jobs, num_cpus=1, parallel="processes").done
    # the fork held 0 and 1 (dispatch.DEPTH) and died in 1: 2, never begun, trains in this process
    assert [(o.run_id, o.failed) for o in done] == [(jobs[0].run_id, False), (doomed.run_id, True),
                                                    (jobs[2].run_id, False), (jobs[3].run_id, False)]
    assert results.statuses(tmp_path) == {j.run_id: "failed" if j is doomed else "finished" for j in jobs}
    assert done[1].error == "RuntimeError: the fork training it died (exit code 3)"


def test_ctrl_c_in_a_sweep_of_forks_keeps_the_finished_runs_and_the_same_command_resumes(tmp_path):
    grid = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.parallel=processes",
            "hydra.launcher.num_cpus=2", "results_dir=results", *SECONDS, "iterations=100", "seed=range(0,8)"]
    proc = subprocess.Popen(command(grid), cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(results.run_files(tmp_path / "results")) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "no two finished runs"
            time.sleep(0.05)
        forked = descendants(proc.pid)
        assert len(forked) == 2  # the two forks, nothing else (no Ray)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    saved = results.run_files(tmp_path / "results")
    assert 2 <= len(saved) < 8
    assert (f"interrupted: {plural(len(saved), 'finished run')} of this sweep {'is' if len(saved) == 1 else 'are'} saved; the same command resumes "
            "the rest") in output.splitlines()
    assert not any(os.path.exists(f"/proc/{p}") for p in forked)
    kept = {p: p.read_bytes() for p in saved}
    again = sweep(grid, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{8 - len(saved)} runs finished, 0 failed" in again.stdout
    assert rows(tmp_path / "results").groupby("run_id").size().tolist() == [100] * 8
    assert all(p.read_bytes() == content for p, content in kept.items())


def test_a_sweep_stopped_while_its_ray_starts_leaves_no_early_fork_and_keeps_what_they_stored(tmp_path, monkeypatch):
    from lab.execution import ray_connection

    jobs = _jobs(tmp_path / "results", seeds=4)
    made = []

    def stopped_while_starting(*args):
        time.sleep(1.0)  # the early fork trains meanwhile
        raise KeyboardInterrupt  # what Ctrl-C, or SIGTERM turned into it, does inside ray.init

    monkeypatch.setattr(ray_connection, "ray_started", lambda: False)
    monkeypatch.setattr(ray_connection, "connect", stopped_while_starting)
    monkeypatch.setattr(dispatch, "Forks", lambda *a, **k: made.append(workers.Forks(*a, **k)) or made[-1])
    with _kept(jobs) as kept:
        with pytest.raises(KeyboardInterrupt):
            dispatch.on_ray(jobs, {}, kept, address=None, num_cpus=2, dashboard=False)
    (early,) = made
    assert not any(p.is_alive() for p in early.processes)
    assert {o.run_id for o in kept.done} == set(results.statuses(tmp_path / "results"))  # recorded what they stored
    assert kept.done  # in a second, the fork stored some
