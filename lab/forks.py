"""Training in forks of the driver: a sweep's first seconds while its local Ray starts, or the
whole of a sweep too short to be worth starting Ray.

Starting an embedded Ray takes about 2.5 s on the 2-core development machine, and its workers'
first runs another 0.7 s to import the lab, while the cores are far from full (Ray's start keeps
about 1.3 of 2 busy). Processes forked from the driver have the lab imported already and train at
once. As early forks (one per core but one, the last left to Ray's start) they take batches from
the longest-first queue (lab.schedule) as Ray's tasks do, so the longest runs start first wherever
they train, and stop after the batch in hand once a Ray worker begins to train: but for those
batches, no more processes train than Ray has CPUs. A sweep too short for Ray's start to pay
(under 30 s of predicted work a core, lab.sweep.mode) trains in forks alone, one per core.

Each run comes back as a file that the driver reads and saves like any other run; its rows are
the ones a Ray task or the driver itself would give.
"""

import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from lab.config import Job
from lab.files import write_atomic
from lab.run import RunResult, exclude_imports_from_startup, lost, run

FORK = multiprocessing.get_context("fork")
"""Forked, a trainer inherits the driver's imports: it trains at once."""


class Queue:
    """The batches of a sweep, longest first, shared by the driver (who sends them to Ray) and its
    forks: each batch goes to exactly one taker, and the queue remembers which ones forks took."""

    def __init__(self, batches: list[list[Job]]):
        self.batches = batches
        self._next = FORK.Value("i", 0)
        self._forked = FORK.Array("b", len(batches), lock=False)  # under _next's lock

    def take(self, by_fork: bool = False) -> int | None:
        """The index of the longest batch not taken yet, now taken (None: all are)."""
        with self._next.get_lock():
            taken = self._next.value
            if taken == len(self.batches):
                return None
            self._next.value = taken + 1
            self._forked[taken] = by_fork
        return taken

    def taken_by_forks(self) -> list[int]:
        with self._next.get_lock():
            return [b for b in range(self._next.value) if self._forked[b]]


class Forks:
    """`processes` forks that train batches from `queue` until it is empty or `stop()`. Each
    leaves every run it finishes as a file in `folder`, where `results()` reads it: the driver
    may be busy starting Ray meanwhile, and a pipe would stall the fork until it reads (a result
    is bigger than a pipe's buffer), a thread reading for it would hold the runs in the driver's
    memory."""

    def __init__(self, queue: Queue, code: dict, processes: int):
        self.queue = queue
        self.folder = Path(tempfile.mkdtemp(prefix="lab-forks-"))  # this user's only
        self.ray_signal = str(self.folder / "ray-trains")
        """the file a Ray task creates when it starts training (lab.run.run_batch)"""
        self._stop = FORK.Event()
        self._received: set[tuple[int, int]] = set()
        self._processes = [FORK.Process(target=_train, args=(queue, code, self._stop, self.folder),
                                        name="lab-fork", daemon=True) for _ in range(processes)]
        for process in self._processes:
            process.start()

    @property
    def alive(self) -> int:
        """How many are still training."""
        return sum(process.is_alive() for process in self._processes)

    def results(self) -> Iterator[tuple[Job, RunResult]]:
        """The runs finished since the last call, each with its job, one at a time (hundreds may
        wait after Ray's start: together they would crowd the driver's memory)."""
        for path in sorted(self.folder.glob("*.run")):
            batch, position = map(int, path.stem.split("-"))
            result = pickle.loads(path.read_bytes())  # written by our own fork, in our own folder
            path.unlink()
            self._received.add((batch, position))
            yield self.queue.batches[batch][position], result

    def ray_trains(self) -> bool:
        """Whether a Ray worker has begun to train (its start-up is over)."""
        return os.path.exists(self.ray_signal)

    def stop(self) -> None:
        """Take no further batch (those in hand are finished)."""
        self._stop.set()

    def wait(self) -> None:
        """Wait until every fork has ended (then `results()` gives the last runs)."""
        for process in self._processes:
            process.join()

    def finish(self, save: Callable[[Job, RunResult], None]) -> None:
        """Wait until every fork has ended; save their last runs, and as failed the runs a fork
        took and never finished (it died)."""
        self.wait()
        for job, result in self.results():
            save(job, result)
        for job in self.unfinished():
            save(job, lost(job, RuntimeError("the fork of the driver training this run ended before it")))

    def abort(self, save: Callable[[Job, RunResult], None]) -> None:
        """Ctrl-C or an error in the driver: end the forks now, and save what they finished."""
        self._stop.set()
        for process in self._processes:
            process.terminate()
        self.wait()
        for job, result in self.results():
            save(job, result)

    def unfinished(self) -> list[Job]:
        """Once the forks have ended and their results were read: the jobs taken and never
        finished (a fork died or was killed)."""
        return [job for b in self.queue.taken_by_forks()
                for p, job in enumerate(self.queue.batches[b]) if (b, p) not in self._received]

    def close(self) -> None:
        """Once the forks have ended and their results were read: remove the folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _train(queue: Queue, code: dict, stop, folder: Path) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    exclude_imports_from_startup()  # its imports were the driver's: not its first run's start-up
    while not stop.is_set() and (batch := queue.take(by_fork=True)) is not None:
        for position, job in enumerate(queue.batches[batch]):
            write_atomic(folder / f"{batch}-{position}.run", pickle.dumps(run(job, code)))

