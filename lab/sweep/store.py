"""Storing a sweep's runs at the pace of the cores: the workers pack and, where they can, write.

A run's table in the schema and its Parquet bytes cost a few milliseconds, and its files a flush
to the disk each: done by the driver one run after another, that work set the pace of short runs
whatever the cores (issue 34). So a worker trains a batch of runs (lab.schedule), packs each
(lab.results.pack) and, where it sees the driver's results_dir (forks, this process, Ray workers
on this machine or on a cluster's shared file system), stores the whole batch at once with one
flush (lab.results.commit) and sends home only the tables, for the index. A worker that does not
see it (a Ray node without the shared file system) sends the packed runs home, and the driver
commits whatever arrived together. Either way a run is reported finished only once it is on
disk, and the driver's own work per run is recording it: the index, the hooks and the progress.
"""

import contextlib
import time
import uuid
from collections import defaultdict
from pathlib import Path

from lab import results
from lab.config import Job
from lab.run import lost, run
from lab.sweep.progress import Outcome, Progress


def token_path(results_dir, token: str) -> Path:
    """The file that tells a worker it sees the driver's results_dir."""
    return Path(results_dir) / results.INDEX / f".driver-{token}"


def shares(results_dir, token: str | None) -> bool:
    """Whether this process sees the driver's results_dir (its token file)."""
    return token is not None and token_path(results_dir, token).exists()


def train(batch: list[Job], code: dict, token: str | None = None, signal: str | None = None) -> list[results.Packed]:
    """A worker's task: train the jobs one after another and pack each run; where this process
    shares the driver's results_dir (`token`), store them there at once and return them written
    (tables only), else return them packed for the driver to store. Creates the file `signal`
    first, if given: the driver's early forks (lab.forks) stop when it appears."""
    if signal is not None:
        with contextlib.suppress(OSError):  # a signal that cannot be given changes no result
            Path(signal).touch()
    ran = [run(job, code) for job in batch]
    began = time.perf_counter()
    packs = store_where_shared(batch, [results.pack(result) for result in ran], token)
    share = (time.perf_counter() - began) / max(1, len(batch))
    return [packed.timed(share) for packed in packs]


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


class Store:
    """The driver's side: records the runs that workers stored (commits those they could not) in
    each results_dir's index, tells the hooks (lab.callbacks.Hooks) and the progress line, and
    keeps each run's Outcome. Use as a context manager: the token files that workers look for
    exist meanwhile, and the index's last parts are written on exit."""

    def __init__(self, jobs: list[Job], progress: Progress, hooks=None):
        self.progress, self.hooks, self.done = progress, hooks, []
        self.token = uuid.uuid4().hex
        self.started_ns = time.time_ns()
        self.writers = {d: results.Writer(d) for d in dict.fromkeys(job.results_dir for job in jobs)}

    def __enter__(self) -> "Store":
        for results_dir in self.writers:
            with contextlib.suppress(OSError):  # without it, workers send their runs home
                token_path(results_dir, self.token).parent.mkdir(parents=True, exist_ok=True)
                token_path(results_dir, self.token).touch()
        return self

    def __exit__(self, *exc) -> None:
        for results_dir, writer in self.writers.items():
            writer.flush()
            token_path(results_dir, self.token).unlink(missing_ok=True)

    def receive(self, arrived: list[tuple[Job, results.Packed]], running: int) -> None:
        """Runs that came back together: stored (those not yet, at once), recorded, reported."""
        by_dir = defaultdict(list)
        for job, packed in arrived:
            by_dir[job.results_dir].append(packed)
        outcomes = []
        for results_dir, packs in by_dir.items():
            unwritten = [p for p in packs if p.key is None]
            written = results.commit(results_dir, unwritten) if unwritten else []
            stored = [p for p in packs if p.key is not None] + written
            self.writers[results_dir].record(stored)
            for packed in stored:
                if self.hooks is not None:
                    self.hooks.saved(results_dir, packed)
                outcomes.append(Outcome.of(packed))
        self.done += outcomes
        self.progress.finished(outcomes, running)

    def lost(self, jobs: list[Job], exc: BaseException, running: int) -> None:
        """Runs lost with the process that trained them: stored as failed, but for those that
        process had stored before it died (found on disk, written during this sweep)."""
        self.receive([(job, self._stored_meanwhile(job) or results.pack(lost(job, exc))) for job in jobs], running)

    def _stored_meanwhile(self, job: Job) -> results.Packed | None:
        path = Path(job.results_dir) / f"{job.run_id}.parquet"
        with contextlib.suppress(OSError, results.ResultsError):
            if path.stat().st_mtime_ns >= self.started_ns:
                return results.Packed(job.run_id, results.read_run(path), None, None, results.index_key(path))
        return None
