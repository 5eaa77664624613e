"""The Hydra entry point: `python -m lab.sweep [--multirun] key=value ...`.

Without --multirun it trains the one configuration in this process. With --multirun Hydra expands
the grid and the lab's launcher (hydra_plugins/lab_plugins) calls `launch`: every job is composed
(lab.compose.Composer), validated and checked against what results_dir already holds before
anything starts; the remaining runs go out as one Ray task each (an embedded local Ray unless
hydra.launcher.address or RAY_ADDRESS names a cluster); each finished run comes back to this
process, which writes it atomically, so results land in this machine's results_dir whichever node
trained them. The driver keeps only a few fields per finished run, so its memory does not grow
with the runs' results, and Ctrl-C stops a sweep cleanly: what finished stays saved.
"""

import itertools
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, NoReturn

import hydra
from omegaconf import DictConfig

import lab
from lab import config, provenance, results
from lab.compose import CONF_PACKAGE, Composer, flat
from lab.config import Job
from lab.run import RunResult, run


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


class Plan(NamedTuple):
    """What a grid comes to, known before anything trains."""

    train: list[Job]
    skip: list[Job]
    """runs already finished in results_dir"""
    notes: list[str]
    """on what is skipped, trained once or re-run"""
    first: dict[tuple[Path, str], int]
    """(results_dir, run_id) -> index of the first configuration that is that run"""


def plan(cfgs: Iterable[dict]) -> Plan:
    """Validate every configuration and drop duplicates and finished runs.

    Exits with a clear error, before anything is written, on the first invalid knob or unreadable
    results directory.
    """
    train, skip, first, stored = [], [], {}, {}
    duplicates = failed_before = stopped_before = forced = 0
    for index, cfg in enumerate(cfgs):
        try:
            job = config.job(cfg)
            if job.results_dir not in stored:
                stored[job.results_dir] = results.statuses(job.results_dir)
        except (config.ConfigError, results.ResultsError) as exc:
            _fail(str(exc))
        if (job.results_dir, job.run_id) in first:
            duplicates += 1
            continue
        first[job.results_dir, job.run_id] = index
        before = stored[job.results_dir].get(job.run_id)
        if before == "finished" and not job.force:
            skip.append(job)
            continue
        failed_before += before == "failed"
        stopped_before += before == "stopped"
        forced += before == "finished"
        train.append(job)
    notes = []
    if duplicates:
        notes.append(f"{duplicates} configurations repeat another one in every knob their "
                     "algorithm uses: trained once")
    if skip:
        notes.append(f"{len(skip)} runs already finished in results_dir: skipped (force=true re-runs them)")
    if failed_before:
        notes.append(f"{failed_before} runs failed before in results_dir: re-running them")
    if stopped_before:
        notes.append(f"{stopped_before} runs stopped early by a search in results_dir: training them in full")
    if forced:
        notes.append(f"{forced} runs already finished in results_dir: re-running them (force=true)")
    return Plan(train, skip, notes, first)


@dataclass(frozen=True)
class Outcome:
    """What the driver keeps of a finished run: never its rows or its checkpoint."""

    run_id: str
    failed: bool
    error: str | None
    """the first line of the error of a failed run"""

    @classmethod
    def of(cls, result: RunResult) -> "Outcome":
        error = str(result.rows["error"].iloc[0]).splitlines()[0] if result.failed else None
        return cls(result.run_id, result.failed, error)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped `execute`: the runs in flight were cancelled, `saved` runs of this sweep
    are stored."""

    def __init__(self, saved: int):
        super().__init__(saved)
        self.saved = saved


def _clock(seconds: float) -> str:
    """A duration as h:mm:ss (m:ss under an hour); '?' when unknown."""
    if seconds != seconds:  # NaN: nothing finished yet
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Runs finished, running and failed, time elapsed and an ETA.

    On a terminal: one line redrawn in place, with a bar, cut to the terminal's width. Otherwise
    (a log file, CI): one line per finished run, naming it.
    """

    def __init__(self, total: int):
        self.total, self.done, self.failed = total, 0, 0
        self.start = self.finish_at = time.monotonic()
        self.live = sys.stderr.isatty()

    def update(self, result: Outcome | None = None, running: int = 0) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        if result is not None:
            self.done += 1
            self.failed += result.failed
            # Runs take about equally long, so the mean time per finished run predicts the rest;
            # between two finishes the estimate counts down.
            self.finish_at = now + elapsed / self.done * (self.total - self.done)
        eta = max(0.0, self.finish_at - now) if self.done else float("nan")
        counts = (f"{self.done}/{self.total} finished, {running} running, {self.failed} failed, "
                  f"{_clock(elapsed)} elapsed, ETA {_clock(eta)}")
        if self.live:
            width = shutil.get_terminal_size().columns
            filled = round(10 * self.done / max(self.total, 1))
            line = f"[{'#' * filled}{'.' * (10 - filled)}] {counts}"[:width - 1]
            print(f"\r{line:<{width - 1}}", end="", file=sys.stderr, flush=True)
        elif result is not None:
            what = "FAILED" if result.failed else "done"
            print(f"run {result.run_id} {what}; {counts}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live:
            print(file=sys.stderr)


def _run_remote(job: Job, code: dict) -> RunResult:
    return run(job, code)


def connect(address=None, num_cpus=None) -> None:
    """Join the Ray cluster at `address` (else RAY_ADDRESS), or start a local Ray of num_cpus.

    Joining ships the `lab` package to the cluster (runtime_env py_modules), so worker nodes need
    the dependencies installed but not this repository.
    """
    import ray

    quiet = {"logging_level": "WARNING", "log_to_driver": False}
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        # "local" starts a private Ray even when a `ray start` cluster runs on this machine
        # (plain ray.init() would join it).
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **quiet)
        return
    try:
        ray.init(address=address, runtime_env={"py_modules": [str(Path(lab.__file__).parent)]}, **quiet)
    except ConnectionError as exc:
        _fail(f"could not join the Ray cluster at {address}: {exc}. A cluster with token "
              "authentication (Ray's default when ~/.ray/auth_token exists) needs RAY_AUTH_MODE=token "
              "and its token in ~/.ray/auth_token or RAY_AUTH_TOKEN")


def execute(jobs: list[Job], address=None, num_cpus=None, parallel=True) -> list[Outcome]:
    """Run the jobs (on Ray unless parallel is false), saving each result as it arrives.

    Ctrl-C cancels the runs in flight and raises Interrupted; every run saved so far stays.
    """
    if not jobs:
        return []
    progress = Progress(len(jobs))
    done = []
    code = provenance.code()  # the driver's: a worker may run a copy of the package without git

    def finish(job: Job, result: RunResult, running: int) -> None:
        results.save(result, job.results_dir)
        done.append(Outcome.of(result))
        progress.update(done[-1], running=running)

    try:
        if parallel:
            _on_ray(jobs, code, finish, progress, address, num_cpus)
        else:
            for i, job in enumerate(jobs):
                finish(job, run(job, code), running=min(1, len(jobs) - i - 1))
    except KeyboardInterrupt:
        raise Interrupted(len(done)) from None
    finally:
        progress.close()
    return done


def _on_ray(jobs: list[Job], code: dict, finish, progress: Progress, address, num_cpus) -> None:
    """Run the jobs as Ray tasks named after their runs (with the driver's provenance.code()),
    calling finish(job, result, running) as each one ends."""
    import ray

    if not ray.is_initialized():
        connect(address, num_cpus)
    remote = ray.remote(num_cpus=1, max_retries=3, retry_exceptions=False)(_run_remote)
    waiting, pending = iter(jobs), {}
    try:
        while True:
            # Only a window of runs is submitted, twice the cluster's CPUs (read again as nodes
            # join): the driver holds no per-task state for the rest of the grid, and a Ctrl-C
            # has little to cancel.
            slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
            for job in itertools.islice(waiting, max(0, 2 * slots - len(pending))):
                task = remote.options(name=f"{job.run.algorithm}:{job.run_id}")
                pending[task.remote(job, code)] = job
            if not pending:
                return
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            if not ready:
                progress.update(running=min(len(pending), slots))
                continue
            job = pending.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except Exception as exc:  # noqa: BLE001 - a task lost for good is a failed run
                result = RunResult(job.run_id, _failed_rows(job, exc), None)
            finish(job, result, running=min(len(pending), slots))
    finally:
        for ref in pending:  # Ctrl-C or an error here: leave nothing running on the cluster
            ray.cancel(ref, force=True)


def _failed_rows(job: Job, exc: Exception):
    import pandas as pd

    return pd.DataFrame([{
        "run_id": job.run_id, **job.identity(), "iteration": 0, "episodes": 0,
        "train_seconds": 0.0, "status": "failed", "error": f"{type(exc).__name__}: {exc}",
    }])


def report(jobs: list[Job], done: list[Outcome]) -> int:
    """Print where results are and what failed; the exit status of the sweep."""
    failed = [o for o in done if o.failed]
    dirs = sorted({str(j.results_dir) for j in jobs}) or ["(nothing to run)"]
    print(f"{len(done) - len(failed)} runs finished, {len(failed)} failed; results in {', '.join(dirs)}")
    for outcome in failed:
        print(f"  failed {outcome.run_id}: {outcome.error}", file=sys.stderr)
    return 1 if failed else 0


def _interrupted(stop: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C: one line on what is saved, exit status 130 (128 + SIGINT), no traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not break Ray's shutdown
    saved = stop.saved if isinstance(stop, Interrupted) else 0
    print(f"\ninterrupted: {saved} finished runs of this sweep are saved; the same command resumes "
          "the rest", file=sys.stderr)
    sys.exit(130)


def list_plan(p: Plan, job_overrides) -> None:
    """List what would train and what is skipped, each with the overrides of its configuration."""
    for what, jobs in (("train", p.train), ("skip ", p.skip)):
        for job in jobs:
            overrides = " ".join(job_overrides[p.first[job.results_dir, job.run_id]])
            print(f"{what} {job.run_id}  {overrides}")
    print("dry run: nothing trained, nothing written")


def analyse(results_dirs) -> None:
    """Draw the figures and write the summary of each results directory; print where they are.

    Never fails the sweep: the runs are stored whatever happens here.
    """
    from lab import plots, summary

    for results_dir in sorted(set(map(Path, results_dirs))):
        if not results.run_files(results_dir):
            continue
        try:
            figures = plots.all_figures(results_dir)
            _, summary_files = summary.write_summary(results_dir)
        except Exception as exc:  # noqa: BLE001 - a plotting problem must not lose a sweep
            print(f"could not draw the figures of {results_dir} ({type(exc).__name__}: {exc}); "
                  f"try: python analysis/plot_winrates.py {results_dir}", file=sys.stderr)
            continue
        print(f"{len(figures)} figures in {results_dir / results.FIGURES}\n"
              f"summary in {summary_files[-1]} (and .csv)\n"
              f"agents in {results_dir / results.CHECKPOINTS} (play one: python -m lab.play CHECKPOINT)")


def launch(config_loader, sweep_config, job_overrides, address=None, num_cpus=None, parallel=True,
           figures=True, dry_run=False):
    """Called by the lab's Hydra launcher with the whole grid."""
    from hydra.core.utils import JobReturn, JobStatus

    composer = Composer(config_loader, sweep_config)
    try:
        p = plan(composer(o) for o in job_overrides)
        print(f"{len(job_overrides)} configurations, {len(p.train)} runs to train")
        for note in p.notes:
            print(note)
        if dry_run:
            list_plan(p, job_overrides)
            return []
        sys.stdout.flush()  # the notes before the progress (on stderr)
        done = execute(p.train, address=address, num_cpus=num_cpus, parallel=parallel)
    except KeyboardInterrupt as stop:
        _interrupted(stop)
    status = report(p.train, done)
    if figures:
        analyse(j.results_dir for j in p.train + p.skip)
    if status:
        sys.exit(status)
    return [JobReturn(overrides=list(o), status=JobStatus.COMPLETED) for o in job_overrides]


@hydra.main(version_base="1.3", config_path=f"pkg://{CONF_PACKAGE}", config_name="config")
def main(cfg: DictConfig) -> None:
    """One run in this process (Hydra's run mode)."""
    try:
        p = plan([flat(cfg)])
        for note in p.notes:
            print(note)
        done = execute(p.train, parallel=False)
    except KeyboardInterrupt as stop:
        _interrupted(stop)
    status = report(p.train, done)
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
