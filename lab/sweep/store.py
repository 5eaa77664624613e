"""The driver's side of storing a sweep's runs: the workers store each batch themselves where they
see results_dir (lab.execution.batch); the driver stores what they sent home, records and reports all."""

import contextlib
import time
import uuid
from collections import defaultdict
from pathlib import Path

from lab import results
from lab.execution.batch import token_path
from lab.config.jobs import Job
from lab.run import lost
from lab.execution.progress import Outcome, Progress


class Store:
    """Records the runs that workers stored (commits those they could not) in each results_dir's
    index, tells the hooks (lab.sweep.callbacks.Hooks) and the progress line, and keeps each Outcome.
    Within `with`, the files of its token (given, or new) that workers look for exist."""

    def __init__(self, jobs: list[Job], progress: Progress, hooks=None, token: str | None = None):
        self.progress, self.hooks, self.done = progress, hooks, []
        self.token = token or uuid.uuid4().hex
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
        self.progress.update(outcomes, running)

    def lost(self, jobs: list[Job], exc: BaseException, running: int) -> None:
        """Runs lost with the process that trained them: stored as failed, but for those that
        process had stored before it died (found on disk, written during this sweep)."""
        self.receive([(job, self._stored_meanwhile(job) or results.pack([lost(job, exc)])[0]) for job in jobs], running)

    def found(self, jobs: list[Job]) -> None:
        """Of runs whose worker was stopped (Ctrl-C), those it had stored before it ended, recorded."""
        stored = [(job, packed) for job in jobs if (packed := self._stored_meanwhile(job)) is not None]
        if stored:
            self.receive(stored, running=0)

    def _stored_meanwhile(self, job: Job) -> results.Packed | None:
        path = Path(job.results_dir) / f"{job.run_id}.parquet"
        with contextlib.suppress(OSError, results.ResultsError):
            if path.stat().st_mtime_ns >= self.started_ns:
                return results.Packed(job.run_id, results.read_run(path), None, None, results.index_key(path))
        return None
