"""The driver's head starts (lab.head_start): forks that train the shortest runs while Ray starts,
each run once, with the rows a Ray task would give; and Ray's quicker stop (lab.sweep.disconnect)."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from lab import head_start, results
from lab.compose import grid
from lab.config import job
from lab.run import run
from sweeping import TINY, clean_env, rows, sweep, values

pytestmark = pytest.mark.integration


def _jobs(tmp_path, seeds=6):
    composer, overrides = grid(*TINY, f"seed=range(0,{seeds})", f"results_dir={tmp_path}")
    return [job(composer(o)) for o in overrides]


def _without_circumstances(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=list(results.CIRCUMSTANCES)).reset_index(drop=True)


def _train_with_head_starts(queue, cores):
    """Every run the head starts finish, and the jobs they lost."""
    head = head_start.start(queue, code={}, cores=cores)
    head.wait()
    trained, lost = list(head.results()), head.lost()
    head.close()
    assert not head.alive and not head.folder.exists()
    return trained, lost


def test_head_starts_train_every_run_once_with_the_rows_of_this_process(tmp_path):
    jobs = _jobs(tmp_path)
    queue = head_start.Queue([jobs[:2], *([j] for j in jobs[2:])])
    trained, lost = _train_with_head_starts(queue, cores=3)  # two forks
    assert lost == []
    assert sorted(j.run_id for j, _ in trained) == sorted(j.run_id for j in jobs)
    for job_, result in trained:
        assert result.run_id == job_.run_id
        pd.testing.assert_frame_equal(_without_circumstances(result.rows),
                                      _without_circumstances(run(job_, code={}).rows))


def test_the_driver_keeps_the_front_of_the_queue(tmp_path):
    jobs = _jobs(tmp_path)
    queue = head_start.Queue([[j] for j in jobs])
    mine = [queue.front(), queue.front()]  # taken before the fork: never trained by it
    trained, _ = _train_with_head_starts(queue, cores=2)
    assert {j.run_id for j, _ in trained} == {j.run_id for j in jobs[2:]}
    assert mine == [[jobs[0]], [jobs[1]]] and queue.front() is None


def test_a_head_start_that_dies_loses_only_the_runs_it_held(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, seeds=4)
    doomed = jobs[1]

    def run_or_die(job_, code):
        if job_.run_id == doomed.run_id:
            os._exit(3)  # as a crash would: nothing sent, no goodbye
        return run(job_, code)

    monkeypatch.setattr(head_start, "run", run_or_die)  # the fork inherits it
    trained, lost = _train_with_head_starts(head_start.Queue([[j] for j in jobs]), cores=2)
    assert sorted(j.run_id for j, _ in trained) == sorted([jobs[3].run_id, jobs[2].run_id])
    assert lost == [doomed]  # taken after 3 and 2 (back to front), never finished


def test_a_sweep_on_a_slow_starting_ray_saves_each_run_once(tmp_path):
    # Ray's start made 2 s slower: the head start surely trains some runs meanwhile
    prelude = """
import atexit, time
from lab import head_start, sweep
starts, connect, start = [], sweep.connect, head_start.start
def slow_connect(*args, **kwargs):
    time.sleep(2)
    connect(*args, **kwargs)
def counted_start(*args, **kwargs):
    starts.append(start(*args, **kwargs))
    return starts[-1]
sweep.connect, head_start.start = slow_connect, counted_start
atexit.register(lambda: print("head start trained", sum(len(h._received) for h in starts)))
"""
    args = ["--multirun", "hydra.launcher.figures=false", "hydra.launcher.parallel=true",
            "hydra.launcher.num_cpus=2", "results_dir=out", *TINY, "seed=range(0,12)"]
    done = sweep(args, cwd=tmp_path, prelude=prelude)
    assert done.returncode == 0, done.stderr
    assert "12 runs finished, 0 failed" in done.stdout
    trained = int(done.stdout.rsplit("head start trained ", 1)[1].split()[0])
    assert 0 < trained <= 12
    stored = rows(tmp_path / "out")
    assert stored.groupby("run_id").size().tolist() == [3] * 12  # every run once, whole
    for job_ in _jobs(tmp_path / "out", seeds=12)[::5]:
        alone = _without_circumstances(run(job_, code={}).rows)
        mine = stored[stored.run_id == job_.run_id].reset_index(drop=True)
        pd.testing.assert_frame_equal(values(mine[alone.columns]), values(alone))


def test_disconnect_stops_every_process_of_the_local_ray():
    script = """
import os
from lab import sweep
import ray
sweep.connect(num_cpus=1)
node = ray._private.worker._global_node
pids = [info.process.pid for infos in node.all_processes.values() for info in infos]
assert "monitor" in node.all_processes
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
