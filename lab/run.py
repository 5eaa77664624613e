"""One configuration -> a trained agent, one tidy row per iteration, and a checkpoint.

`run` never raises for a failing learner: an exception or a diverging network ends the run with
status "failed" and the error in every row, so a sweep records it and goes on.
"""

import functools
import io
import json
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numba.core import event

import lab
from lab import game
from lab.evaluation import evaluate
from lab.results import provenance
from lab.config.jobs import Job
from lab.files import write_atomic

_IMPORT_SECONDS = time.perf_counter() - lab.IMPORT_STARTED
_first_run_in_process = True

# numba holds its compiler lock while it compiles a kernel or loads it from its on-disk cache: the
# time under the lock is the start-up a worker's first runs pay, kept out of train/eval seconds.
_compiling = event.TimingListener()
event.register("numba:compiler_lock", _compiling)


def exclude_imports_from_startup() -> None:
    """Leave this process's imports out of its next run's startup_seconds: in a sweep's driver (or
    a fork of it) they are the sweep's fixed cost, not that run's start-up."""
    global _first_run_in_process
    _first_run_in_process = False


def warm_up() -> None:
    """Start numba in this process (about 0.35 s: its compiler's registries, scipy's BLAS check
    among them) by loading one cached kernel: a fork does it while the driver plans the grid, not
    in its first run. It seeds the kernels' stream, which every run seeds again before it draws."""
    game.seed_kernels(0)


def _compile_seconds() -> float:
    """Numba's time under its compiler lock so far."""
    return _compiling.duration if _compiling.done else 0.0


class _Clock:
    """Seconds of `with clock:` blocks, minus the numba compilation inside them."""

    def __init__(self):
        self.seconds = self.compiling = 0.0

    def __enter__(self):
        self._start, self._compiled = time.perf_counter(), _compile_seconds()

    def __exit__(self, *exc):
        compiling = _compile_seconds() - self._compiled
        self.seconds += time.perf_counter() - self._start - compiling
        self.compiling += compiling


@dataclass
class RunResult:
    run_id: str
    records: list[dict]
    """its rows, one dict per iteration, each stamped with the run's status, error, times and
    provenance (lab.results.pack turns them into a run table)"""
    checkpoint: bytes | None
    """the final agent as .npz bytes (None when the run failed)"""

    @functools.cached_property
    def rows(self) -> pd.DataFrame:  # built when asked: a sweep's workers never need it
        return pd.DataFrame(self.records)

    @property
    def failed(self) -> bool:
        return any(row["status"] == "failed" for row in self.records)

    @property
    def stopped(self) -> bool:
        return any(row["status"] == "stopped" for row in self.records)


def ended(run_id: str, rows: list[dict], status: str, error: str | None, checkpoint: bytes | None,
          **stamp) -> RunResult:
    """A run's result: every row stamped with the run's status ("finished", "stopped" or
    "failed") and error, then with `stamp` (its times and provenance, when it trained here)."""
    return RunResult(run_id, [{**row, "status": status, "error": error, **stamp} for row in rows], checkpoint)


def snapshot(learner, rows: list[dict], train_seconds: float) -> bytes:
    """A run in progress as .npz bytes: the learner's whole training state (Learner.state) and
    the rows trained so far (JSON). Never pickled; `resume` reads it back."""
    # a numpy scalar in a row as the Python number it holds (TypeError for anything else)
    progress = json.dumps({"rows": rows, "train_seconds": train_seconds}, default=np.generic.item)
    buffer = io.BytesIO()
    np.savez(buffer, run_progress=np.array(progress), **learner.state())
    return buffer.getvalue()


def resume(data: bytes, learner) -> tuple[list[dict], float]:
    """Restore a `snapshot` into a fresh learner; the rows and training seconds so far."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = dict(archive)
    progress = json.loads(str(arrays.pop("run_progress")))
    learner.restore(arrays)
    return progress["rows"], progress["train_seconds"]


class Training:
    """One run in progress: `run` trains it to its end; a search (lab.search) trains several in
    turn, one evaluation point at a time (`advance`), and stops the ones it gives up on (`stop`).
    Nothing here raises. `active_seconds` counts only this run's own work, so runs trained in turn
    in one process each report their own wall time."""

    def __init__(self, job: Job, code: dict | None = None, *, start: bytes | None = None, state_path=None):
        global _first_run_in_process
        began = time.perf_counter()
        self.job, self.code, self.started = job, code, pd.Timestamp.now(tz="UTC")
        self.startup = _IMPORT_SECONDS if _first_run_in_process else 0.0
        _first_run_in_process = False
        self.columns = {"run_id": job.run_id, **job.identity()}
        self.rows, self.error, self.stopped, self.learner = [], None, False, None
        self.state_path = Path(state_path) if state_path is not None else None
        self.training, self.evaluating = _Clock(), _Clock()
        try:
            self.learner = job.algorithm.Learner(job.knobs, job.run)
            if start is None and self.state_path is not None and self.state_path.exists():
                start = self.state_path.read_bytes()
            if start is not None:
                self.rows, self.training.seconds = resume(start, self.learner)
                for row in self.rows:
                    row["run_id"] = self.columns["run_id"]
                self.evaluating.seconds = self.rows[-1].get("eval_seconds", 0.0) if self.rows else 0.0
        except Exception as exc:  # noqa: BLE001 - any learner failure is recorded, not raised
            self._fail(exc)
        self.active_seconds = time.perf_counter() - began

    @property
    def iteration(self) -> int:  # the last one trained
        return len(self.rows)

    @property
    def ended(self) -> bool:
        return self.error is not None or self.stopped or self.iteration >= self.job.run.iterations

    def _fail(self, exc: BaseException) -> None:
        self.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"

    def step(self) -> bool:
        """Train one iteration, with its exact evaluation if one is due; whether it was evaluated."""
        if self.ended:
            return False
        began = time.perf_counter()
        try:
            evaluated = self._iterate()
        except Exception as exc:  # noqa: BLE001 - any learner failure is recorded, not raised
            self._fail(exc)
            evaluated = False
        self.active_seconds += time.perf_counter() - began
        return evaluated

    def _iterate(self) -> bool:
        run_cfg, iteration = self.job.run, self.iteration + 1
        with self.training:
            p1_wins, p2_wins, draws = self.learner.iterate()
        n = run_cfg.episodes_per_update
        self.rows.append({
            **self.columns,
            "iteration": iteration,
            "episodes": int((self.rows[-1]["episodes"] if self.rows else 0) + n),
            "p1_wins": int(p1_wins), "p2_wins": int(p2_wins), "draws": int(draws),
            "p1_win_rate": p1_wins / n, "p2_win_rate": p2_wins / n, "draw_rate": draws / n,
            "train_epsilon": self.learner.exploration(),
        })
        evaluated = iteration % run_cfg.eval_every == 0 or iteration == run_cfg.iterations
        if evaluated:
            with self.evaluating:
                measured = evaluate.evaluation(self.learner.agent(), run_cfg)
                self.rows[-1].update(measured, **self.learner.memory())
        self.rows[-1].update(train_seconds=self.training.seconds, eval_seconds=self.evaluating.seconds)
        return evaluated

    def advance(self) -> bool:
        """Train up to the next evaluation point (or until the run ends); whether it reached one."""
        while not self.ended:
            if self.step():
                return True
        return False

    def stop(self) -> None:
        """End the run here, with status "stopped" if it has iterations left (a search gave up on it)."""
        self.stopped = self.error is None and self.iteration < self.job.run.iterations

    def snapshot(self) -> bytes:
        return snapshot(self.learner, self.rows, self.training.seconds)

    def result(self) -> RunResult:
        """The run's rows, each with its status, error, timing and provenance, and the final
        agent (None when it failed or was stopped)."""
        began = time.perf_counter()
        checkpoint = None
        if self.error is None and not self.stopped:
            try:
                checkpoint = self.learner.agent().to_bytes()
                if self.state_path is not None:
                    self.state_path.unlink(missing_ok=True)
            except Exception as exc:  # noqa: BLE001 - any learner failure is recorded, not raised
                self._fail(exc)
        rows = self.rows if self.error is None or self.rows else [
            {**self.columns, "iteration": 0, "episodes": 0, "train_seconds": self.training.seconds,
             "eval_seconds": self.evaluating.seconds}]
        status = "failed" if self.error else "stopped" if self.stopped else "finished"
        return ended(self.columns["run_id"], rows, status, self.error,
                     checkpoint if self.error is None else None,
                     startup_seconds=self.startup + self.training.compiling + self.evaluating.compiling,
                     wall_seconds=self.startup + self.active_seconds + time.perf_counter() - began,
                     started_utc=self.started, finished_utc=pd.Timestamp.now(tz="UTC"),
                     **(self.code or provenance.code()), **provenance.machine())


def run(job: Job, code: dict | None = None, *, state_path=None, save_every: int | None = None,
        report=None, start: bytes | None = None) -> RunResult:
    """Train one validated run (lab.config.jobs.job) to its end (`Training`). `code` is the driver's
    lab.results.provenance.code() (this process's when None), stamped on every row.

    Resuming: with `state_path` and `save_every`, the run's `snapshot` is written there atomically
    every `save_every` iterations, and a run that finds one there goes on from it (the file is
    removed when the run ends); `start` is such a snapshot given directly. `report(iteration,
    rows, learner)`, called after every evaluation, ends the run as "stopped" when it returns
    True."""
    training = Training(job, code, start=start, state_path=state_path)
    while not training.ended:
        evaluated = training.step()
        try:
            if evaluated and report is not None and report(training.iteration, training.rows, training.learner):
                training.stop()
            elif save_every and state_path is not None and training.iteration % save_every == 0 \
                    and not training.ended:
                write_atomic(training.state_path, training.snapshot())
        except Exception as exc:  # noqa: BLE001 - a failing report or save ends the run as failed
            training._fail(exc)
    return training.result()


def lost(job: Job, exc: BaseException) -> RunResult:
    """A run lost with the process that trained it (a Ray actor or node lost for good, a fork died):
    one failed row, so the sweep records it and the next one re-trains it."""
    row = {"run_id": job.run_id, **job.identity(), "iteration": 0, "episodes": 0, "train_seconds": 0.0}
    return ended(job.run_id, [row], "failed", f"{type(exc).__name__}: {exc}", None)
