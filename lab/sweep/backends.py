"""The backends that train a sweep's runs without Ray: this process, one run after another, or
forks of it (lab.forks), one per core. (On Ray: lab.sweep.on_ray.) Each calls
finish(job, result, running) as a run ends."""

import time

from lab import forks, schedule
from lab.config import Job
from lab.run import RunResult, exclude_imports_from_startup, run
from lab.sweep.progress import Progress


def in_process(jobs: list[Job], code: dict, finish) -> None:
    """Train the jobs in this process, longest first."""
    exclude_imports_from_startup()
    for i, job in enumerate(schedule.longest_first(jobs)):
        finish(job, run(job, code), running=min(1, len(jobs) - i - 1))


def in_forks(jobs: list[Job], code: dict, finish, progress: Progress, cores: int) -> None:
    """Run the jobs in `cores` forks of this process (lab.forks), longest first, short runs
    batched (lab.schedule). A fork that dies fails the runs it held; if every fork died, this
    process trains what none took."""
    queue = forks.Queue(list(schedule.batches(jobs, cores)))
    trainers = forks.Forks(queue, code, cores)

    def save(job: Job, result: RunResult) -> None:
        finish(job, result, trainers.alive)

    try:
        while trainers.alive:
            for job, result in trainers.results():
                save(job, result)
            progress.update(running=trainers.alive)
            time.sleep(0.05)
        trainers.finish(save)
        exclude_imports_from_startup()  # if every fork died, this process trains what none took
        while (taken := queue.take()) is not None:
            for job in queue.batches[taken]:
                save(job, run(job, code))
    finally:
        if trainers.alive:  # Ctrl-C or an error: keep what they finished
            trainers.abort(save)
        trainers.close()
