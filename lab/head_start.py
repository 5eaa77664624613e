"""A sweep's first seconds on a Ray it starts: the driver's forks train the shortest runs meanwhile.

Starting an embedded Ray takes about 2.5 s on the 2-core development machine, and its workers'
first runs another 0.7 s to import the lab, while the cores are far from full (Ray's start keeps
about 1.3 of 2 busy). Processes forked from the driver just before Ray starts have the lab
imported already: one per core but one (left to Ray's start), they train batches from the short
end of the longest-first queue (lab.schedule) while the driver sends Ray's tasks from the long
end. They stop after the batch in hand once a Ray worker begins to train, so that, but for those
batches, no more processes train than Ray has CPUs. Each run comes back as a file that the driver
reads and saves like any other run; its rows are the ones a Ray task would give.
"""

import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Iterator

from lab.config import Job
from lab.run import RunResult, in_the_driver, run

FORK = multiprocessing.get_context("fork")
"""Forked, a head start inherits the driver's imports: it trains at once."""


class Queue:
    """The batches of a sweep, longest first, shared by the driver (who takes from the front for
    Ray) and its head starts (who take from the back); each batch goes to exactly one taker."""

    def __init__(self, batches: list[list[Job]]):
        self.batches = batches
        self._bounds = FORK.Array("i", [0, len(batches)])  # [front, back): still to take

    def front(self) -> list[Job] | None:
        with self._bounds.get_lock():
            front, back = self._bounds
            if front == back:
                return None
            self._bounds[0] = front + 1
        return self.batches[front]

    def back(self) -> int | None:
        """The index of the last batch not taken yet, now taken."""
        with self._bounds.get_lock():
            front, back = self._bounds
            if front == back:
                return None
            self._bounds[1] = back - 1
        return back - 1

    def taken_from_back(self) -> range:
        with self._bounds.get_lock():
            return range(self._bounds[1], len(self.batches))


class HeadStart:
    """`processes` forks that train from the back of `queue` until `stop()`. Each leaves every run
    it finishes as a file in `folder`, where `results()` reads it: the driver is busy starting
    Ray meanwhile, and a pipe would stall the fork until it reads (a result is bigger than a pipe's
    buffer), a thread reading for it would hold the runs in the driver's memory."""

    def __init__(self, queue: Queue, code: dict, processes: int):
        self.queue = queue
        self.folder = Path(tempfile.mkdtemp(prefix="lab-head-start-"))  # this user's only
        self.ray_signal = str(self.folder / "ray-trains")
        """the file a Ray task creates when it starts training (lab.run.run_batch)"""
        self._stop = FORK.Event()
        self._received: set[tuple[int, int]] = set()
        self._processes = [FORK.Process(target=_train, args=(queue, code, self._stop, self.folder),
                                        name="lab-head-start", daemon=True) for _ in range(processes)]
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

    def lost(self) -> list[Job]:
        """Once the forks have ended and their results were read: the jobs taken and never
        finished (a fork died or was killed)."""
        return [job for b in self.queue.taken_from_back()
                for p, job in enumerate(self.queue.batches[b]) if (b, p) not in self._received]

    def kill(self) -> None:
        """Ctrl-C or an error in the driver: end the forks now (what they finished stays)."""
        self._stop.set()
        for process in self._processes:
            process.terminate()

    def close(self) -> None:
        """Once no Ray task of the sweep is left: remove the folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _train(queue: Queue, code: dict, stop, folder: Path) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    in_the_driver()  # its imports were the driver's: not its first run's start-up
    while not stop.is_set() and (batch := queue.back()) is not None:
        for position, job in enumerate(queue.batches[batch]):
            data = pickle.dumps(run(job, code))
            partial = folder / f".{batch}-{position}.tmp"
            partial.write_bytes(data)
            os.replace(partial, folder / f"{batch}-{position}.run")  # whole, or not there


def start(queue: Queue, code: dict, cores: int) -> HeadStart:
    """Fork the head starts over `queue`, one per core of `cores` but one (at least one). The
    forks inherit the driver's imports; they must happen before Ray starts its threads here."""
    return HeadStart(queue, code, max(1, cores - 1))
