"""A search driven by Optuna in this process: ask a configuration, train it on its seeds where a
worker is free, report its objective where the pruner may decide and answer go on or stop, tell
the study how it ended. The same command resumes a search from Optuna's storage: the trials left
running train again, and each trial's `sampler` asks what the uninterrupted search would have.
"""

from pathlib import Path

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.storages.journal import BaseJournalBackend, JournalFileBackend
from optuna.trial import TrialState

from lab import results
from lab.config import jobs
from lab.search.outcome import Configuration
from lab.search.samplers import SAMPLERS
from lab.search.schedulers import SCHEDULERS
from lab.search.settings import SearchSettings
from lab.search.space import Dimension
from lab.search.trial import Done, Point, Task, lost_runs, seed_jobs
from lab.execution.workers import Lost

STUDY = "lab-search"
"""The study's name in the default journal file (one search per results_dir)"""
JOURNAL = "optuna-journal.log"
"""The default storage: this file in results_dir/_search (`optuna-dashboard FILE` opens it)"""


class Store:
    """The search's Optuna storage: a journal file in results_dir/_search (Buffered), or the
    database at hydra.sweeper.storage, where each search is named after its results_dir."""

    def __init__(self, settings: SearchSettings, folder: Path):
        if settings.storage is None:
            self.backend = Buffered(str(folder / JOURNAL))
            self.storage, self.name = optuna.storages.JournalStorage(self.backend), STUDY
        else:
            self.backend = None
            self.storage, self.name = optuna.storages.RDBStorage(settings.storage), f"{STUDY}:{folder.parent.resolve()}"

    def flush(self) -> None:
        if self.backend is not None:
            self.backend.flush()


class Buffered(BaseJournalBackend):
    """Optuna's journal file whose new logs wait in memory until `flush` (after every trial's
    end): Optuna's own syncs the disk at every log, some ten per trial, which set a search's
    pace. A search killed hard loses what happened since a trial last ended: those train again."""

    def __init__(self, path: str):
        self.file, self.written, self.pending = JournalFileBackend(path), None, []

    def read_logs(self, log_number_from: int):
        if self.written is None or log_number_from < self.written:  # from the file: a search's start
            logs = list(self.file.read_logs(log_number_from))
            self.written = log_number_from + len(logs)
            return logs + self.pending
        return self.pending[log_number_from - self.written:]

    def append_logs(self, logs) -> None:
        self.pending += logs

    def flush(self) -> None:
        if self.pending:
            self.file.append_logs(self.pending)
            self.written += len(self.pending)
            self.pending = []


def load(results_dir, storage: str | None = None):
    """The Optuna study of the search in results_dir (in hydra.sweeper.storage, if it was given),
    to read in a notebook: `lab.search.study.load(DIR).trials_dataframe()`."""
    return open_study(SearchSettings(storage=storage), Path(results_dir) / results.SEARCH, resume=True)[0]


def open_study(settings: SearchSettings, folder: Path, resume: bool, pruner=None):
    """The search's study (deciding with `pruner`), created or loaded to resume it, and its Store."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the lab says what happened
    store = Store(settings, folder)
    if resume:
        study = optuna.load_study(study_name=store.name, storage=store.storage, pruner=pruner)
    else:
        study = optuna.create_study(study_name=store.name, storage=store.storage, pruner=pruner,
                                    direction="maximize")
    store.flush()
    return study, store


def sampler(settings: SearchSettings, number: int):
    """Trial `number`'s sampler, seeded by the search's seed and the number: what a trial is asked
    does not depend on how many this process asked before, so a resumed search asks the same."""
    seed = int(np.random.SeedSequence([settings.seed, number]).generate_state(1)[0])
    return getattr(optuna.samplers, SAMPLERS[settings.search].optuna)(seed=seed)


def distribution(dim: Dimension):
    if dim.kind == "choice":
        return CategoricalDistribution(dim.values)
    if dim.integer:
        return IntDistribution(int(dim.low), int(dim.high), log=dim.log)
    return FloatDistribution(float(dim.low), float(dim.high), log=dim.log)


class Optimize:
    """The ask/tell loop: trials until the study holds num_samples of them, on `pool`'s workers.
    `save(runs)` stores a trial's runs; `progress(configuration, busy, running)` hears of each end.
    A worker that ends a trial gets the next one before the ended trial's runs are written (slower
    than most fast trials); the storage is written after the runs, so an ended trial has its runs."""

    def __init__(self, study, store: Store, base: dict, dims: dict[str, Dimension], settings: SearchSettings,
                 pool, save, progress):
        self.study, self.store, self.base, self.dims, self.settings = study, store, base, dims, settings
        self.pool, self.save, self.progress = pool, save, progress
        self.distributions = {key: distribution(dim) for key, dim in dims.items()}
        run = jobs.job(base).run
        self.asks_at = SCHEDULERS[settings.scheduler].decisions(settings, run.iterations, run.eval_every)
        self.flights: dict[int, tuple] = {}  # each busy worker's (optuna.trial.Trial, Task)
        self.unsaved: list = []  # the runs of ended trials, not written yet

    def run(self) -> None:
        trials = self.study.get_trials(deepcopy=False)
        again = [t.number for t in trials if t.state == TrialState.RUNNING]  # left by an interruption
        asked, idle = len(trials), []
        while True:
            idle += self.pool.grow()  # every fork dead: this process; Ray: actors replaced
            while idle and (again or asked < self.settings.num_samples):
                if again:
                    trial = self._trial(again.pop(0))
                else:  # asked: the number the study gives the trial
                    self.study.sampler = sampler(self.settings, asked)
                    trial, asked = self.study.ask(self.distributions), asked + 1
                self._start(trial, idle)
            self.write()
            if not self.flights and not again and asked >= self.settings.num_samples:
                return
            for worker, answer in self.pool.answers_ready(timeout=1.0):
                self._answer(worker, answer, idle)

    def left(self) -> int:
        """Trials to end: num_samples, less those an interrupted search ended."""
        return self.settings.num_samples - sum(t.state.is_finished() for t in self.study.get_trials(deepcopy=False))

    def write(self, always: bool = False) -> None:
        """Write the ended trials' runs, then the study's storage (if a trial ended, or `always`)."""
        if not (self.unsaved or always):
            return
        while self.unsaved:
            self.save(self.unsaved.pop(0))
        self.store.flush()

    def configurations(self) -> list[Configuration]:
        """The study's ended trials, for lab.search.outcome."""
        status = {TrialState.COMPLETE: "finished", TrialState.PRUNED: "stopped", TrialState.FAIL: "failed"}
        return [Configuration(f"trial {t.number}", dict(t.params), status[t.state],
                              t.user_attrs.get("objectives", []), t.user_attrs.get("runs", []),
                              t.user_attrs.get("error"), t.user_attrs.get("lost", False))
                for t in self.study.get_trials(deepcopy=False) if t.state in status]

    def _trial(self, number: int):
        """The study's trial `number` (left running), to train again from its start."""
        storage = self.store.storage
        study_id = storage.get_study_id_from_name(self.study.study_name)
        return optuna.trial.Trial(self.study, storage.get_trial_id_from_study_id_trial_number(study_id, number))

    def _start(self, trial, idle: list) -> None:
        try:
            seeded = seed_jobs(self.base, {key: trial.params[key] for key in self.dims}, self.settings.seeds)
        except jobs.ConfigError as exc:  # validated at every extreme, but a combination can be refused
            self._end(trial, None, None, f"ConfigError: {exc}")
            return
        worker = idle.pop(0)
        task = Task(trial.number, seeded, self.settings.objective, asks_at=self.asks_at)
        self.flights[worker] = trial, task
        self.pool.send(worker, ("start", task))

    def _answer(self, worker: int, answer, idle: list) -> None:
        trial, task = self.flights[worker]
        if isinstance(answer, Point):
            trial.report(self.settings.aggregated(answer.values), answer.iteration)
            self.pool.send(worker, ("advance", not trial.should_prune()))
            return
        del self.flights[worker]
        if isinstance(answer, Lost):  # the worker is not used again
            self._end(trial, task, None, answer.error)
        else:
            idle.append(worker)
            self._end(trial, task, answer, None)

    def _end(self, trial, task: Task | None, done: Done | None, error: str | None) -> None:
        """Tell the study how a trial ended; its runs wait in `unsaved` for `write`."""
        lost = done is None and task is not None  # its worker died, the machine's fault: the search exits 1
        if done is not None:
            self.unsaved.append(done.results)
        elif lost:  # its runs failed (the next search trains them again)
            self.unsaved.append(lost_runs(task.jobs, error))
            trial.set_user_attr("lost", True)
        status = done.status if done is not None else "failed"  # else refused, or lost
        if status == "failed":
            error = (error or next(r.error for r in done.results if r.failed)).splitlines()[0]
            trial.set_user_attr("error", error)
        ended = Configuration(f"trial {trial.number}", dict(trial.params), status,
                              [list(p) for p in done.curve] if done else [],
                              [job.run_id for job in task.jobs] if task is not None else [], error, lost)
        trial.set_user_attr("runs", ended.runs)
        trial.set_user_attr("objectives", ended.curve)
        if status == "finished":
            self.study.tell(trial, ended.objective(self.settings))
        else:
            self.study.tell(trial, state=TrialState.PRUNED if status == "stopped" else TrialState.FAIL)
        self.progress(ended, done.busy if done else 0.0, len(self.flights))
