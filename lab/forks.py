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

A fork shares the driver's results_dir: it stores each batch it trains there itself, with one
flush to the disk (lab.batch), and leaves the batch's tables in a file that the driver reads
for its index; the rows are the ones a Ray task or the driver itself would give. A fork dies with
the driver (Linux: the parent-death signal), so a killed sweep leaves nothing training.
"""

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Iterator

from lab import batch as batch_
from lab.config import Job
from lab.files import write_atomic
from lab.results import Packed
from lab.run import exclude_imports_from_startup

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
    stores every batch it finishes (lab.batch.train with the driver's `token`) and leaves
    the batch's packed runs as a file in `folder`, where `results()` reads it: the driver may be
    busy starting Ray meanwhile, and a pipe would stall the fork until it reads (a batch's tables
    are bigger than a pipe's buffer)."""

    def __init__(self, queue: Queue, code: dict, processes: int, token: str | None = None):
        self.queue = queue
        self.folder = Path(tempfile.mkdtemp(prefix="lab-forks-"))  # this user's only
        self.ray_signal = str(self.folder / "ray-trains")
        """the file a Ray task creates when it starts training (lab.batch.train)"""
        self._stop = FORK.Event()
        self._received: set[int] = set()
        self._processes = [FORK.Process(target=_train, args=(queue, code, self._stop, self.folder, token),
                                        name="lab-fork", daemon=True) for _ in range(processes)]
        try:
            for process in self._processes:
                process.start()
        except BaseException:  # Ctrl-C or SIGTERM while they start: none of it stays
            self.abort(None)
            self.close()
            raise

    @property
    def alive(self) -> int:
        """How many are still training."""
        return sum(process.is_alive() for process in self._processes)

    def results(self) -> Iterator[tuple[list[Job], list[Packed]]]:
        """The batches finished since the last call, each with its jobs."""
        for path in sorted(self.folder.glob("*.batch")):
            batch = int(path.stem)
            packs = pickle.loads(path.read_bytes())  # written by our own fork, in our own folder
            path.unlink()
            self._received.add(batch)
            yield self.queue.batches[batch], packs

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

    def finish(self, store) -> None:
        """Wait until every fork has ended; hand their last batches to `store.receive`, and to
        `store.lost` the runs a fork took and never finished (it died)."""
        self.wait()
        for jobs, packs in self.results():
            store.receive(list(zip(jobs, packs)), running=0)
        if unfinished := self.unfinished():
            store.lost(unfinished, RuntimeError("the fork of the driver training this run ended before it"), 0)
        self._received.update(self.queue.taken_by_forks())  # every batch they took is accounted for

    def abort(self, store) -> None:
        """Ctrl-C or an error in the driver: end the forks now, and record in `store` (if given)
        every run they stored, those of a batch cut short included."""
        self._stop.set()
        for process in self._processes:
            if process.pid is not None:
                process.terminate()
        for process in self._processes:
            if process.pid is not None:
                process.join()
        if store is not None:
            for jobs, packs in self.results():
                store.receive(list(zip(jobs, packs)), running=0)
            store.found(self.unfinished())  # stored, but stopped before it said so

    def unfinished(self) -> list[Job]:
        """Once the forks have ended and their results were read: the jobs of the batches taken
        and never finished (a fork died or was killed)."""
        return [job for b in self.queue.taken_by_forks() if b not in self._received
                for job in self.queue.batches[b]]

    def close(self) -> None:
        """Once the forks have ended and their results were read: remove the folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


def die_with_the_driver() -> None:
    """Linux: this process gets SIGKILL when the driver that forked it dies (a killed sweep must
    leave nothing training, nor writing into its results_dir)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _train(queue: Queue, code: dict, stop, folder: Path, token: str | None) -> None:
    die_with_the_driver()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    exclude_imports_from_startup()  # its imports were the driver's: not its first run's start-up
    while not stop.is_set() and (batch := queue.take(by_fork=True)) is not None:
        packs = batch_.train(queue.batches[batch], code, token)
        write_atomic(folder / f"{batch}.batch", pickle.dumps(packs))
