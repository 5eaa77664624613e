"""The backends that train a sweep's runs without Ray: this process, or forks of it (lab.forks),
one per core. (On Ray: lab.sweep.on_ray.) Each trains the runs in batches, longest first
(lab.schedule), stores each batch where it trained (lab.batch) and hands it to the driver's
Store (lab.sweep.store)."""

import time

from lab import batch, forks, schedule
from lab.config import Job
from lab.run import exclude_imports_from_startup
from lab.sweep.store import Store


def in_process(jobs: list[Job], code: dict, store: Store) -> None:
    """Train the jobs in this process, longest first, a batch at a time."""
    exclude_imports_from_startup()
    batches = list(schedule.batches(jobs, 1))
    for i, jobs_ in enumerate(batches):
        store.receive(list(zip(jobs_, batch.train(jobs_, code, store.token))), running=min(1, len(batches) - i - 1))


def in_forks(jobs: list[Job], code: dict, store: Store, cores: int) -> None:
    """Run the jobs in `cores` forks of this process (lab.forks), longest first, short runs
    batched (lab.schedule). A fork that dies fails the runs it held; if every fork died, this
    process trains what none took."""
    queue = forks.Queue(list(schedule.batches(jobs, cores)))
    trainers = forks.Forks(queue, code, cores, store.token)  # cleans up after itself if stopped while starting
    try:
        while trainers.alive:
            for jobs_, packs in trainers.results():
                store.receive(list(zip(jobs_, packs)), running=trainers.alive)
            store.progress.update(running=trainers.alive)
            time.sleep(0.02)
        trainers.finish(store)
        exclude_imports_from_startup()  # if every fork died, this process trains what none took
        while (taken := queue.take()) is not None:
            jobs_ = queue.batches[taken]
            store.receive(list(zip(jobs_, batch.train(jobs_, code, store.token))), running=0)
    finally:  # Ctrl-C or an error: keep what they stored (after `finish`, nothing is left to keep)
        trainers.abort(store)
        trainers.close()
