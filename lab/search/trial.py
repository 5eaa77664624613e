"""What a search's worker does (in a fork of the driver, a Ray actor, or the driver itself):
train one trial, a configuration on its seeds, in turn between evaluation points, each run on its
own kernel random stream (so its rows are the ones it trains alone); where the pruner may decide,
send the driver a Point and wait for go on or stop.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from lab.evaluation import evaluate
from lab.compat.numba import kernel_stream, set_kernel_stream
from lab.config import jobs
from lab.config.jobs import Job
from lab.results import Packed, pack, status_of
from lab.run import Training, lost

PBT_TRIAL = "pbt_trial"
"""The column of a PBT run's table naming the member that trained each row: where it changes, the
run exploited (copied) that member's state; the knob columns show the values each row trained with."""


def objective(row: dict, seats, opponent: str) -> float:
    """Exact win - loss of the greedy agent against `opponent` in its seats (mean of both in
    self-play), from one evaluated row."""
    return float(np.mean([row[evaluate.column(s, f"{opponent}_win")] - row[evaluate.column(s, f"{opponent}_loss")]
                          for s in seats]))


def seed_jobs(base: dict, params: dict, seeds: int) -> list[Job]:
    """The runs of a configuration: one job per seed 0..seeds-1 (ConfigError if refused)."""
    return [jobs.job({**base, **params, "seed": seed}) for seed in range(seeds)]


def lost_runs(seeded: list[Job], error: str) -> list[Packed]:
    """The runs of a trial whose worker died, failed with `error`."""
    return pack([lost(job, RuntimeError(error)) for job in seeded])


@dataclass
class Task:
    """One trial for a worker: its configuration's runs, one per seed."""

    number: int
    jobs: list[Job]
    opponent: str
    """the objective's opponent (lab.search.settings.OBJECTIVES)"""
    asks_at: tuple = ()
    """the evaluation points where its pruner may decide: a Point to the driver, then wait"""
    starts: list[bytes] | None = None
    """PBT: each run's snapshot (lab.run.snapshot) to go on from"""
    until: int | None = None
    """PBT: train to this iteration, then send the snapshots back"""
    member: str | None = None
    """PBT: written into the PBT_TRIAL column of every row this task trains"""


@dataclass
class Point:
    """A trial at an evaluation point: one objective per seed. The driver answers with go on or stop."""

    iteration: int
    values: list[float]


@dataclass
class Done:
    """A trial's end (or a PBT generation's)."""

    curve: list[tuple[int, list[float]]]
    """every evaluation point trained by this task: (iteration, the objective of each seed)"""
    results: list[Packed] = field(default_factory=list)
    """the runs, once they ended, packed here (lab.results.pack): the driver only writes them"""
    snapshots: list[bytes] | None = None
    """PBT: the runs' training states at `until`"""
    busy: float = 0.0
    """seconds this task trained, from its start to this answer (waits for the driver apart)"""

    @property
    def status(self) -> str:
        return status_of(result.status for result in self.results)


class Trainer:
    """Trains one trial at a time (`start`, then `advance` at every Point it returns)."""

    def __init__(self, code: dict, check=lambda: None):
        self.code, self.check = code, check  # check: raises KeyboardInterrupt if Ctrl-C came
        self.task: Task | None = None

    def start(self, task: Task) -> Point | Done:
        began = time.perf_counter()
        self.task, self.busy, self.curve = task, 0.0, []
        self.trainings, self.streams = [], []
        for i, job in enumerate(task.jobs):
            self.trainings.append(Training(job, self.code, start=task.starts[i] if task.starts else None))
            self.streams.append(kernel_stream())  # seeded by the learner (or its snapshot)
        return self._train(began)

    def advance(self, go: bool) -> Point | Done:
        """The driver's answer to the last Point: go on to the next one, or stop the trial there."""
        began = time.perf_counter()
        if not go:
            for training in self.trainings:
                training.stop()
        return self._train(began)

    def _train(self, began: float) -> Point | Done:
        """Train every seed to its next evaluation point (PBT: until `until`); the Point, or Done."""
        task = self.task
        while not self._over():
            for i, training in enumerate(self.trainings):
                set_kernel_stream(self.streams[i])
                training.advance()
                self.streams[i] = kernel_stream()
                self.check()
            if any(t.error is not None for t in self.trainings):
                break  # a failed seed fails its configuration: the others stop where they are
            iteration = self.trainings[0].iteration
            values = [objective(t.rows[-1], t.job.run.seats, task.opponent) for t in self.trainings]
            self.curve.append((iteration, values))
            if iteration in task.asks_at and not self._over():
                self.busy += time.perf_counter() - began
                return Point(iteration, values)
        return self._done(began)

    def _over(self) -> bool:
        until = self.task.until
        return any(t.ended for t in self.trainings) or (until is not None and self.trainings[0].iteration >= until)

    def _done(self, began: float) -> Done:
        task = self.task
        if task.member is not None:  # rows copied from another member keep that member's name
            for training in self.trainings:
                for row in training.rows:
                    row.setdefault(PBT_TRIAL, task.member)
        ended = any(t.ended for t in self.trainings)
        if ended:
            for training in self.trainings:
                training.stop()  # the seeds of a failed one stop where they are
        done = Done(self.curve, results=pack([t.result() for t in self.trainings]) if ended else [],
                    snapshots=None if ended else [t.snapshot() for t in self.trainings],
                    busy=self.busy + time.perf_counter() - began)
        self.task, self.trainings = None, []
        return done
