"""A search from start to end, once its space and settings are validated (hydra_plugins'
SearchSweeper): refuse another search in its results_dir and resume the same one, start the
workers, let Optuna (lab.search.study) or PBT (lab.search.pbt) drive the trials, save their runs
as they end, report the outcome. Ctrl-C: one line, exit 130, the ended trials saved to resume.
"""

import dataclasses
import json
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

from lab import results
from lab.config import jobs
from lab.execution import ray_connection
from lab.execution.progress import Execution, Outcome, Progress
from lab.execution.workers import Forks, InProcess, Interrupt, RayActors
from lab.results import provenance, search_record
from lab.run import Training
from lab.search import outcome
from lab.search.pbt import Evolve
from lab.search.schedulers import SCHEDULERS, title
from lab.search.settings import SearchSettings
from lab.search.space import Dimension
from lab.search.trial import Trainer


def identity(base: dict, dims: dict[str, Dimension], settings: SearchSettings) -> dict:
    """What a search searched (results_dir/_search/search.json): resuming one there needs the
    same, but for where it is (WHERE) and how long it runs (LONGER)."""
    return json.loads(json.dumps({"base": {k: v for k, v in base.items() if k != "force"},
                                  "space": {k: vars(d) for k, d in dims.items()},
                                  "settings": dataclasses.asdict(settings)}, default=str))


WHERE = ("results_dir", "force", "on_code_change")
"""Knobs of where and whether runs happen, not of what they compute: a search whose folder is
spelled otherwise (absolute, or moved) is the same search"""
LONGER = ("num_samples",)
"""Settings that only say how long a search runs: raising num_samples continues it"""
FINISHED = "finished.json"
"""In results_dir/_search: how many trials the search ended when it completed"""


def differences(saved: dict, ours: dict) -> list[str]:
    """What makes `ours` another search than the one `saved` describes, each as a setting."""
    out = []
    for part, skip, spell in (("base", WHERE, "{key}={now} (it searched with {key}={before})"),
                              ("space", (), "{key} searched over {now} (it searched {before})"),
                              ("settings", LONGER, "hydra.sweeper.{key}={now} (it had {before})")):
        before, now = saved.get(part, {}), ours.get(part, {})
        for key in sorted(set(before) | set(now)):
            # a population's size is num_samples: another one is another search
            population = part == "settings" and SCHEDULERS[now["scheduler"]].drives_population
            if (key not in skip or population) and before.get(key) != now.get(key):
                out.append(spell.format(key=key, now=_value(now, key), before=_value(before, key)))
    return out


def _value(part: dict, key: str) -> str:
    if key not in part:
        return "nothing"
    value = part[key]
    if isinstance(value, dict) and value.get("kind") == "choice":
        return f"choice({','.join(map(str, value['values']))})"
    if isinstance(value, dict):
        return f"interval({value['low']:g},{value['high']:g})"
    return str(value)


PART_ROWS = 1_250
"""A search's index parts (lab.results.Writer): smaller than a grid's, as its driver also holds
the study (a 1,000-trial search's driver: 295 MB, against 310 MB with a grid's parts)"""


class Saver:
    """Stores the runs that end together in one commit (lab.results.commit), never replacing a run
    finished there by a stopped or failed one; `hooks` (lab.sweep.callbacks.Hooks) hears of each."""

    def __init__(self, results_dir: Path, hooks=None):
        self.writer, self.hooks = results.Writer(results_dir, PART_ROWS), hooks
        self.finished = {run_id for run_id, s in results.statuses(results_dir).items() if s == "finished"}

    def __call__(self, runs: list[results.Packed]) -> None:
        kept = {}
        for run in runs:
            finished = run.status == "finished"
            if finished or run.run_id not in self.finished:
                kept[run.run_id] = run
            if finished:
                self.finished.add(run.run_id)
        stored = results.commit(self.writer.results_dir, list(kept.values())) if kept else []
        self.writer.record(stored)
        if self.hooks is not None:
            for run in stored:
                self.hooks.saved(self.writer.results_dir, run)


def workers(settings: SearchSettings, base: dict, code: dict, interrupt: Interrupt, address=None,
            num_cpus=None, parallel="auto"):
    """Where the trials train: Ray actors on a cluster joined (or parallel=true: a local Ray), else
    forks, one per core (at most max_concurrent), then this process once every fork died; or this
    process alone (one core, or parallel=false)."""
    if parallel is True or ray_connection.joins(address):
        ray_connection.connect(address, num_cpus)
        return RayActors((Trainer, (code,)), interrupt, most=settings.max_concurrent)
    cores = num_cpus or os.cpu_count() or 1
    size = min(cores, settings.max_concurrent or cores, settings.num_samples)
    here = (Trainer, (code, interrupt.check))
    if parallel is False or size == 1:
        return InProcess(here, interrupt)
    # the kernels loaded (or compiled) here before forking: no fork spends its first trial on them
    Training(jobs.job({**base, "iterations": 1, "episodes_per_update": 1, "eval_every": 1})).advance()
    return Forks(size, (Trainer, (code,)), interrupt, fallback=here)


def describe(base: dict, dims: dict[str, Dimension], settings: SearchSettings) -> str:
    """What a search would do, in a few lines (a dry run)."""
    job = jobs.job(base)
    lines = [f"a search of {settings.num_samples} configurations ({title(settings)}), each trained on seeds "
             f"0..{settings.seeds - 1} ({settings.aggregate} of their objectives), {job.run.algorithm} up to "
             f"{job.run.iterations * job.run.episodes_per_update:,} episodes, into {job.results_dir}"]
    for key, dim in dims.items():
        what = f"one of {', '.join(map(str, dim.values))}" if dim.kind == "choice" else \
            f"{dim.low:g} to {dim.high:g}{' (log scale)' if dim.log else ''}{' (integers)' if dim.integer else ''}"
        lines.append(f"  {key}: {what}")
    return "\n".join(lines)


def search(base: dict, dims: dict[str, Dimension], settings: SearchSettings, address=None, num_cpus=None,
           parallel="auto", after=None, hooks=None) -> int:
    """Run the search and write its outcome; the exit status. `after(results_dir)` (the figures and
    the report) runs in a process of its own once a configuration finished."""
    started = time.perf_counter()
    results_dir = Path(jobs.check_settings(base)[0])
    folder = results_dir / results.SEARCH
    resume = _resuming(folder, identity(base, dims, settings))
    if resume is None:
        return 2
    if resume == "finished":
        return 0

    done: list[Outcome] = []

    def ended(trial: outcome.Configuration, busy: float, running: int) -> None:
        failed, value = trial.status == "failed", trial.objective(settings)
        done.append(Outcome(trial.name, failed, trial.error, busy, time.time()))
        said = f" (objective {value:.4f})" if value is not None else ""
        said += f": {trial.error}" if failed and trial.error else ""
        progress.update(done[-1:], running, said=f"trial {trial.name.split()[-1]} {trial.status} at iteration "
                                                 f"{trial.curve[-1][0] if trial.curve else 0}{said}")

    with Interrupt() as interrupt:  # Ctrl-C from here on: at the loop's next safe point
        pool = workers(settings, base, provenance.code(), interrupt, address, num_cpus, parallel)
        save = Saver(results_dir, hooks)
        trials = _trials(base, dims, settings, pool, save, ended, folder, resume)
        progress, interrupted = Progress(trials.left(), ended="ended"), False
        try:
            trials.run()
        except KeyboardInterrupt:  # a second Ctrl-C changes nothing now
            pool.close()  # first: stop what the workers train
            interrupted = True
        trials.write(always=True)
        save.writer.flush()
        pool.close()
    configurations = trials.configurations()
    outcome.record(configurations, settings, results_dir)
    progress.close()
    if interrupted:
        print(f"interrupted: the trials that ended are saved in {results_dir}; the same command resumes the "
              "search (the trials in progress train again from their start)", file=sys.stderr)
        return 130
    if isinstance(pool, RayActors):
        ray_connection.disconnect()
    if done:
        print(f"cores: {Execution(done, pool.size, time.perf_counter() - started).efficiency()}")
    status = outcome.finish(configurations, base, settings, results_dir)
    (folder / FINISHED).write_text(json.dumps({"trials": settings.num_samples}) + "\n")  # a run again says so
    if after and outcome.rank(configurations, settings):
        _apart(after, results_dir)
    return status


def _apart(function, *arguments) -> None:
    """`function` in a spawned process, so that drawing (matplotlib, plotly, the runs read back:
    50 MB and more) stays out of the driver's memory; spawned, as the driver may hold threads."""
    sys.stdout.flush()  # the child's lines come after the driver's
    sys.stderr.flush()
    child = multiprocessing.get_context("spawn").Process(target=_drawing, args=(function, *arguments),
                                                         name="search figures")
    child.start()
    try:
        child.join()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the trials are saved; the drawing stops
        child.terminate()
        child.join()
        print("\ninterrupted while drawing the search's figures: its trials are all saved; "
              f"lab-report {arguments[0]} draws its report again", file=sys.stderr)
        raise SystemExit(130) from None
    if child.exitcode:
        print(f"could not draw the search's figures (the process drawing them ended with status {child.exitcode})",
              file=sys.stderr)


def _drawing(function, *arguments) -> None:
    """The drawing process: a terminal's Ctrl-C reaches it too, and its driver stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    function(*arguments)


def _resuming(folder: Path, ours: dict) -> bool | str | None:
    """Whether results_dir holds this search already (to resume it), "finished" if it ended all the
    trials asked for; None, and a line naming what differs, when it holds another one. Writes
    search_record.IDENTITY where it is new or changed."""
    saved = search_record.record(folder.parent)
    differ = differences(saved, ours) if saved is not None else []
    if differ:
        more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
        print(f"error: results_dir={folder.parent} holds another search: {differ[0]}{more}; use another "
              f"results_dir, or delete {folder} to start this one there", file=sys.stderr)
        return None
    finished = folder / FINISHED
    ended = json.loads(finished.read_text())["trials"] if saved is not None and finished.exists() else 0
    wanted = ours["settings"]["num_samples"]
    if ended >= wanted:
        print(f"the search in {folder.parent} is finished: its {wanted} trials ended (best configuration in "
              f"{folder / outcome.BEST}); raise hydra.sweeper.num_samples to search on")
        return "finished"
    if saved != ours:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / search_record.IDENTITY).write_text(json.dumps(ours, indent=1) + "\n")
    if saved is not None:
        print(f"continuing the search in {folder} up to {wanted} trials" if ended else
              f"resuming the interrupted search in {folder}")
    return saved is not None


def _trials(base, dims, settings: SearchSettings, pool, save, ended, folder: Path, resume: bool):
    if SCHEDULERS[settings.scheduler].drives_population:
        return Evolve(base, dims, settings, pool, save, ended, folder)
    # Optuna (the search extra) once it drives the search: the Hydra plugin says when it is missing
    from lab.search.study import Optimize, open_study

    job = jobs.job(base)
    pruner = SCHEDULERS[settings.scheduler].pruner(settings, job.run.iterations, job.run.eval_every)
    study, store = open_study(settings, folder, resume, pruner)
    return Optimize(study, store, base, dims, settings, pool, save, ended)
