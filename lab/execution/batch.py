"""A grid's worker task: a batch of runs trained and packed (lab.results.pack). Given the token of
the driver's results_dir (forks and the driver itself, which share its file system and die with
it), the worker stores the batch there with one flush (lab.results.commit) and sends home only the
tables, for the index; else (Ray actors, which may outlive the driver or be cut off from it) it
sends the packed runs home, for the driver to store (lab.sweep.store)."""

import time
from collections import defaultdict
from pathlib import Path

from lab import results
from lab.config.jobs import Job
from lab.run import run


def token_path(results_dir, token: str) -> Path:
    """The file that tells a worker it sees the driver's results_dir."""
    return Path(results_dir) / results.INDEX / f".driver-{token}"


class Trainer:
    """A grid's worker's server (lab.execution.workers): each batch handled as the module doc says."""

    def __init__(self, code: dict, token: str | None = None):
        self.code, self.token = code, token

    def train(self, batch: list[Job]) -> list[results.Packed]:
        ran = [run(job, self.code) for job in batch]
        began = time.perf_counter()
        packs = results.pack(ran)
        by_dir = defaultdict(list)
        for job, packed in zip(batch, packs):
            by_dir[job.results_dir].append(packed)
        written = {}
        for results_dir, group in by_dir.items():
            if self.token is not None and token_path(results_dir, self.token).exists():
                written.update((p.run_id, p) for p in results.commit(results_dir, group))
        share = (time.perf_counter() - began) / max(1, len(batch))
        return [written.get(p.run_id, p)._replace(store_seconds=share) for p in packs]
