"""A worker's task: a batch of runs trained, packed and stored where the worker can (issue 34).

A run's table in the schema and its Parquet bytes cost a few milliseconds, and its files a flush
to the disk each: done by a sweep's driver one run after another, that work set the pace of short
runs whatever the cores. So a worker (lab.workers: a fork of the driver, a Ray actor, or the
driver itself) trains a batch of runs (lab.schedule) and packs each (lab.results.pack). Given the
token of the driver's results_dir (forks and the driver itself, which share its file system and
die with it), it stores the whole batch there at once with one flush (lab.results.commit) and
sends home only the tables, for the index; else (Ray actors, which may outlive the driver or be
cut off from it) it sends the packed runs home, for the driver to store (lab.sweep.store).
"""

import time
from collections import defaultdict
from pathlib import Path

from lab import results
from lab.config import Job
from lab.run import run


def token_path(results_dir, token: str) -> Path:
    """The file that tells a worker it sees the driver's results_dir."""
    return Path(results_dir) / results.INDEX / f".driver-{token}"


def shares(results_dir, token: str | None) -> bool:
    """Whether this process sees the driver's results_dir (its token file)."""
    return token is not None and token_path(results_dir, token).exists()


def train(batch: list[Job], code: dict, token: str | None = None) -> list[results.Packed]:
    """A worker's task: train the jobs one after another and pack each run; where this process
    shares the driver's results_dir (`token`), store them there at once and return them written
    (tables only), else return them packed for the driver to store."""
    ran = [run(job, code) for job in batch]
    began = time.perf_counter()
    packs = store_where_shared(batch, [results.pack(result) for result in ran], token)
    share = (time.perf_counter() - began) / max(1, len(batch))
    return [packed.timed(share) for packed in packs]


class Trainer:
    """A grid's worker (lab.workers): trains each batch it is sent, storing it where it shares
    the driver's results_dir (`token`)."""

    def __init__(self, code: dict, token: str | None = None):
        self.code, self.token = code, token

    def train(self, batch: list[Job]) -> list[results.Packed]:
        return train(batch, self.code, self.token)


def store_where_shared(batch: list[Job], packs: list[results.Packed], token: str | None) -> list[results.Packed]:
    """The packs, those whose results_dir this process shares stored there (one commit each)."""
    by_dir = defaultdict(list)
    for job, packed in zip(batch, packs):
        by_dir[job.results_dir].append(packed)
    written = {}
    for results_dir, group in by_dir.items():
        if shares(results_dir, token):
            written.update((p.run_id, p) for p in results.commit(results_dir, group))
    return [written.get(p.run_id, p) for p in packs]
