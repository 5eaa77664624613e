"""The Ray backend: a sweep's runs as Ray tasks, on a cluster it joins or a local Ray it starts
(whose start early forks of this process fill, lab.forks); lost tasks sent again."""

import time

from lab import forks, schedule
from lab.config import Job
from lab.batch import train
from lab.sweep import placement, ray_connection
from lab.sweep.store import Store

RETRIES = 3
"""Times a task is sent again after Ray lost it with its worker or node (`lost_with_its_node`); a
run's own error is stored as a failed run, never retried."""


def lost_with_its_node(exc: Exception) -> bool:
    """Whether a task failed because Ray lost the process or node that ran it, or its result with
    that node (what Ray's own max_retries retries), rather than because of the task itself."""
    from ray import exceptions

    return isinstance(exc, (exceptions.WorkerCrashedError, exceptions.NodeDiedError,
                            exceptions.LocalRayletDiedError, exceptions.ObjectLostError,
                            exceptions.OutOfMemoryError))


def on_ray(jobs: list[Job], code: dict, store: Store, address, num_cpus,
           dashboard: bool = False) -> tuple[int, int]:
    """Run the jobs as Ray tasks (RayTasks), handing each task's runs to `store` as it ends.
    Returns the CPUs the runs had and how many runs were sent again after their worker or node
    was lost. A Ray this process starts (or joins) is stopped before it returns.

    Starting a local Ray, this process first starts its early forks (lab.forks): they take
    batches from the same queue while Ray starts, until a Ray worker begins to train."""
    ours = not ray_connection.ray_started()
    early_forks = None
    if ours and placement.joins(address):
        ray_connection.connect(address, num_cpus, dashboard)
    elif ours:
        cores = placement.cores(num_cpus)
        queue = forks.Queue(list(schedule.batches(jobs, cores)))
        early_forks = forks.Forks(queue, code, max(1, cores - 1), store.token)  # before Ray's threads exist here
        try:
            ray_connection.connect(None, num_cpus, dashboard)
        except BaseException:  # Ctrl-C, SIGTERM or a failure while Ray starts: no fork outlives it
            early_forks.abort(store)
            early_forks.close()
            raise
    tasks = RayTasks(jobs, code, store, early_forks)
    try:
        tasks.run()
    finally:
        tasks.cancel()
    if ours:
        ray_connection.disconnect()  # now, not at exit: part of the sweep's reported wall time
    return tasks.slots, tasks.retried


def _cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class RayTasks:
    """The jobs as Ray tasks, longest first, short runs batched (lab.schedule), each task named
    after its first run and carrying the driver's provenance.code(); early forks, if any, take
    batches from the same queue until a Ray worker trains.

    This process retries lost tasks itself (up to RETRIES times; Ray's own retries are off) so
    that it can count them and say so: a run comes back once, from whichever node trained it."""

    def __init__(self, jobs: list[Job], code: dict, store: Store, early_forks: forks.Forks | None):
        import ray

        self.code, self.store, self.progress, self.early_forks = code, store, store.progress, early_forks
        self.slots = _cpus()
        """the cluster's CPUs, read again as nodes join"""
        self.queue = (early_forks.queue if early_forks is not None
                      else forks.Queue(list(schedule.batches(jobs, self.slots))))
        self.remote = ray.remote(num_cpus=1, max_retries=0)(train)
        self.pending = {}
        """task -> (its batch, times sent before)"""
        self.in_flight = 0
        """runs in Ray's tasks, submitted and not yet back"""
        self.retried = 0
        """runs sent again after their worker or node was lost"""

    def running(self) -> int:
        return min(self.in_flight, self.slots) + (self.early_forks.alive if self.early_forks else 0)

    def early_forks_train(self) -> bool:
        return self.early_forks is not None and bool(self.early_forks.alive)

    def submit(self, batch: list[Job], attempt: int = 0) -> None:
        name = f"{batch[0].run.algorithm}:{batch[0].run_id}" + (
            f"+{len(batch) - 1}" if len(batch) > 1 else "")
        signal_ = self.early_forks.ray_signal if self.early_forks_train() else None
        # No token: a Ray task sends its runs home, for the driver to store. A worker on a node
        # the driver counts as lost (cut off, not dead) could otherwise still write a run the
        # driver has sent to another node, or write after a killed driver's resume has begun.
        self.pending[self.remote.options(name=name).remote(batch, self.code, None, signal_)] = batch, attempt
        self.in_flight += len(batch)

    def run(self) -> None:
        """Until every run is saved: save the early forks' runs, keep a window of tasks submitted
        and save each task's runs as it ends."""
        import ray

        while True:
            if self.early_forks is not None:
                for batch, packs in self.early_forks.results():
                    self.store.receive(list(zip(batch, packs)), self.running())
            # Only a window of tasks is submitted, twice the cluster's CPUs (read again as nodes
            # join): the driver holds no per-task state for the rest of the grid, and a Ctrl-C
            # has little to cancel.
            self.slots = max(self.slots, _cpus())
            while len(self.pending) < 2 * self.slots and (taken := self.queue.take()) is not None:
                self.submit(self.queue.batches[taken])
            if not self.pending:
                if not self.early_forks_train():
                    break
                time.sleep(0.05)  # the early forks' last batches
                continue
            # While early forks train, their runs and Ray's signal are looked for every 50 ms:
            # they end after their batch in hand once Ray trains.
            timeout = 0.05 if self.early_forks_train() else 1.0
            ready, rest = ray.wait(list(self.pending), num_returns=1, timeout=timeout)
            if ready and rest:  # and every other task that has ended: stored and recorded together
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            if self.early_forks_train() and self.early_forks.ray_trains():
                self.early_forks.stop()
            if ready:
                self.receive(ready)
            else:
                self.progress.update(running=self.running())
        if self.early_forks is not None:
            self.early_forks.finish(self.store)

    def receive(self, tasks: list) -> None:
        """Store the runs of tasks that ended; a task lost with its worker or node is sent again."""
        import ray

        arrived = []
        for task in tasks:
            batch, attempt = self.pending.pop(task)
            self.in_flight -= len(batch)
            try:
                arrived += zip(batch, ray.get(task))
            except Exception as exc:  # noqa: BLE001 - sent again if lost with its node, else its runs failed
                if attempt < RETRIES and lost_with_its_node(exc):
                    self.progress.note(f"{len(batch)} run{'s' * (len(batch) > 1)} ({batch[0].run_id}"
                                       f"{', ...' * (len(batch) > 1)}) lost with {type(exc).__name__}: "
                                       f"sent again ({attempt + 1} of {RETRIES})")
                    self.retried += len(batch) if attempt == 0 else 0
                    self.submit(batch, attempt + 1)
                else:
                    self.store.lost(batch, exc, self.running())
        if arrived:
            self.store.receive(arrived, self.running())

    def cancel(self) -> None:
        """After the last run, Ctrl-C or an error: leave nothing running on the cluster; early
        forks still training (Ctrl-C or an error) are stopped, keeping what they stored."""
        import ray

        for task in self.pending:
            ray.cancel(task, force=True)
        if self.early_forks is not None:
            # ended or not: a batch they stored and the driver had not read when Ctrl-C came is recorded
            self.early_forks.abort(self.store)
            self.early_forks.close()
