"""The Hydra entry point: `python -m lab.sweep [--multirun] key=value ...`.

Without --multirun it trains the one configuration in this process. With --multirun Hydra expands
the grid and the lab's launcher (hydra_plugins/lab_plugins) calls `launch`: every job is composed
(lab.compose.Composer), validated and checked against what results_dir already holds before
anything starts; the remaining runs go out as Ray tasks, longest first (an embedded local Ray,
whose start the driver's forks fill by training the first runs, lab.forks, unless
hydra.launcher.address or RAY_ADDRESS names a cluster; a grid too short for Ray's start to pay
trains in the forks alone, `mode`; a task Ray loses with its worker or node is sent again,
RETRIES times at most); each finished run comes back to this process, which writes it
atomically, so results land in this machine's results_dir whichever node trained them. The driver keeps only a few fields per finished run, so its memory does not grow
with the runs' results, and Ctrl-C stops a sweep cleanly: what finished stays saved.
"""

import itertools
import os
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

import lab
from lab import callbacks, config, forks, provenance, results, schedule
from lab.compose import CONF_PACKAGE, Composer, flat
from lab.config import Job
from lab.run import RunResult, in_the_driver, lost, run, run_batch


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

    A run finished in results_dir by another code version than this one (lab.provenance
    .same_code: another git commit, or another lab version outside git) is skipped with a note
    when on_code_change=reuse (the default) and trained again when on_code_change=rerun.

    Exits with a clear error, before anything is written, on the first invalid knob or unreadable
    results directory.
    """
    train, skip, first, stored = [], [], {}, {}
    duplicates = failed_before = stopped_before = forced = 0
    other_code = {"reuse": Counter(), "rerun": Counter()}  # code version -> runs, per switch value
    current = None
    for index, cfg in enumerate(cfgs):
        try:
            job = config.job(cfg)
            if job.results_dir not in stored:
                stored[job.results_dir] = results.stored(job.results_dir)
        except (config.ConfigError, results.ResultsError) as exc:
            _fail(str(exc))
        if (job.results_dir, job.run_id) in first:
            duplicates += 1
            continue
        first[job.results_dir, job.run_id] = index
        before = stored[job.results_dir].get(job.run_id)
        if before is not None and before.status == "finished" and not job.force:
            current = current or provenance.version()
            if provenance.same_code(before.code, current):
                skip.append(job)
                continue
            other_code[job.on_code_change][provenance.version_of(before.code)] += 1
            if job.on_code_change == "reuse":
                skip.append(job)
                continue
        failed_before += before is not None and before.status == "failed"
        stopped_before += before is not None and before.status == "stopped"
        forced += before is not None and before.status == "finished" and job.force
        train.append(job)
    notes = []
    if duplicates:
        notes.append(f"{duplicates} configurations repeat another one in every knob their "
                     "algorithm uses: trained once")
    if skip:
        notes.append(f"{len(skip)} runs already finished in results_dir: skipped (force=true re-runs them)")
    for switch, what in (("reuse", "reused as they are (on_code_change=rerun trains them again)"),
                         ("rerun", "training them again (on_code_change=rerun)")):
        if other_code[switch]:
            notes.append(_code_change_note(other_code[switch], what))
    if failed_before:
        notes.append(f"{failed_before} runs failed before in results_dir: re-running them")
    if stopped_before:
        notes.append(f"{stopped_before} runs stopped early by a search in results_dir: training them in full")
    if forced:
        notes.append(f"{forced} runs already finished in results_dir: re-running them (force=true)")
    return Plan(train, skip, notes, first)


def _code_change_note(versions: Counter, what: str) -> str:
    """One line: how many finished runs another code version trained, which versions, and what
    happens to them."""
    shown = ", ".join(f"{version} ({n})" for version, n in versions.most_common(3))
    if len(versions) > 3:
        shown += f" and {len(versions) - 3} more"
    return (f"{versions.total()} runs finished in results_dir were trained by other code: {shown}; "
            f"this is {provenance.version_of(provenance.code())}: {what}")


@dataclass(frozen=True)
class Outcome:
    """What the driver keeps of a finished run: never its rows or its checkpoint."""

    run_id: str
    failed: bool
    error: str | None
    """the first line of the error of a failed run"""
    wall_seconds: float
    """the run's time on its worker (0 for a run lost with its worker)"""
    ended: float
    """when it ended, in seconds since the epoch"""

    @classmethod
    def of(cls, result: RunResult) -> "Outcome":
        first = result.rows.iloc[0]
        error = str(first["error"]).splitlines()[0] if result.failed else None
        wall = float(first.get("wall_seconds", 0.0))
        ended = first["finished_utc"].timestamp() if "finished_utc" in first else time.time()
        return cls(result.run_id, result.failed, error, wall if wall == wall else 0.0, ended)


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

    def __init__(self, total: int, ended: str = "finished"):
        self.total, self.done, self.failed, self.ended = total, 0, 0, ended
        self.start = self.finish_at = time.monotonic()
        self.live = sys.stderr.isatty()

    def update(self, result: Outcome | None = None, running: int = 0, said: str | None = None) -> None:
        """A run ended (`result`; `said` replaces the line naming it), or only time went by."""
        now = time.monotonic()
        elapsed = now - self.start
        if result is not None:
            self.done += 1
            self.failed += result.failed
            # Runs take about equally long, so the mean time per finished run predicts the rest;
            # between two finishes the estimate counts down.
            self.finish_at = now + elapsed / self.done * (self.total - self.done)
        eta = max(0.0, self.finish_at - now) if self.done else float("nan")
        counts = (f"{self.done}/{self.total} {self.ended}, {running} running, {self.failed} failed, "
                  f"{_clock(elapsed)} elapsed, ETA {_clock(eta)}")
        if self.live:
            width = shutil.get_terminal_size().columns
            filled = round(10 * self.done / max(self.total, 1))
            line = f"[{'#' * filled}{'.' * (10 - filled)}] {counts}"[:width - 1]
            print(f"\r{line:<{width - 1}}", end="", file=sys.stderr, flush=True)
        elif result is not None:
            said = said or f"run {result.run_id} {'FAILED' if result.failed else 'done'}"
            print(f"{said}; {counts}", file=sys.stderr, flush=True)

    def note(self, line: str) -> None:
        """A line on its own (above the bar, on a terminal)."""
        print(f"\r\033[K{line}" if self.live else line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live:
            print(file=sys.stderr)


RAY_START_SECONDS = 3.0
"""About what starting and stopping an embedded local Ray costs in wall time (2.5 s and 0.3 s on
the 2-core development machine; also 3.3 CPU-seconds, and 0.7 s of imports per worker)."""

RAY_WORTH_SECONDS = 10 * RAY_START_SECONDS
"""Predicted work per core from which parallel=auto starts a local Ray: its start is then at most
a tenth of the sweep. Below, forks of this process, which have the lab imported, finish sooner
(seed 000's grid x 4 seeds, 19 s a core on 2 cores: 17 s in forks, 21.5 s on Ray)."""

FORK_SECONDS = 0.5
"""Below this much predicted work, forking trainers and reading their runs back costs about what
spreading the runs over the cores saves."""

MODES = {True: "ray", False: "driver", "processes": "processes"}
"""hydra.launcher.parallel's values but auto, and where each trains the runs."""


def _cores(num_cpus=None) -> int:
    """The cores a local sweep uses: num_cpus, else every core of this machine."""
    return num_cpus or os.cpu_count() or 1


def mode(jobs: list[Job], parallel, address=None, num_cpus=None) -> str:
    """Where the jobs train: "ray" (a cluster to join, or a local Ray this process starts, whose
    start its forks fill, lab.forks), "processes" (forks of this process, one per core, no Ray) or
    "driver" (this process, one run after another). parallel=true, processes and false choose;
    auto: Ray if a cluster was named; else by the predicted work (lab.schedule.cost): this
    process on one core or for too little work to spread, a local Ray if the work per core is
    worth its start (RAY_WORTH_SECONDS), forks otherwise."""
    if parallel != "auto":
        return MODES[parallel]
    if _joins(address):
        return "ray"
    cores, work = _cores(num_cpus), sum(map(schedule.cost, jobs))
    if cores == 1 or work < FORK_SECONDS:
        return "driver"
    return "ray" if work / cores > RAY_WORTH_SECONDS else "processes"


def _without_ray_note(jobs: list[Job], where: str, num_cpus=None) -> str:
    """Why parallel=auto trains these jobs without Ray, and where."""
    work, cores = sum(map(schedule.cost, jobs)), _cores(num_cpus)
    if where == "driver":
        why = "on one core" if cores == 1 else "too little to spread over cores"
        return (f"the runs' predicted work ({work:.1f} s) is {why}: training them in this process "
                "(hydra.launcher.parallel=true uses Ray anyway)")
    return (f"the runs' predicted work ({work:.1f} s, {work / cores:.1f} s a core) is short beside "
            f"starting Ray (about {RAY_START_SECONDS:.0f} s): training them in {cores} forks of this "
            "process (hydra.launcher.parallel=true uses Ray anyway)")


def _joins(address) -> bool:
    """Whether Ray means a cluster to join (else a local Ray this process starts)."""
    return bool(address or os.environ.get("RAY_ADDRESS"))


def connect(address=None, num_cpus=None, dashboard=False) -> None:
    """Join the Ray cluster at `address` (else RAY_ADDRESS), or start a local Ray of num_cpus
    (with its dashboard if `dashboard`, whose URL is printed).

    Joining ships the `lab` package to the cluster (runtime_env py_modules), so worker nodes need
    the dependencies installed but not this repository.
    """
    import ray

    quiet = {"logging_level": "WARNING", "log_to_driver": False}
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        if dashboard:
            _check_dashboard_packages()
        _token_mode_for_a_local_ray()
        # "local" starts a private Ray even when a `ray start` cluster runs on this machine
        # (plain ray.init() would join it).
        context = ray.init(address="local", num_cpus=num_cpus, include_dashboard=dashboard, **quiet)
    else:
        try:
            context = ray.init(address=address, runtime_env={"py_modules": [str(Path(lab.__file__).parent)]},
                               **quiet)
        except Exception as exc:  # noqa: BLE001 - ConnectionError, Ray's AuthenticationError, ...
            _fail(f"could not join the Ray cluster at {address}: {exc}{_token_hint(address, exc)}")
    if dashboard:
        url = getattr(context, "dashboard_url", None)
        print(f"Ray dashboard: http://{url}" if url else
              "Ray dashboard: none (the cluster was started without one)", flush=True)


def disconnect() -> None:
    """ray.shutdown(), a second sooner when this process started the Ray: Ray stops its autoscaler
    monitor after the GCS, and the monitor, told to stop, keeps trying to tell that GCS until Ray
    kills it a second later (1.0 of the 1.3 s shutdown here). A local Ray never autoscales, so
    its monitor is killed first. (Joining a cluster, this process owns no Ray processes.)"""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)  # the Ray this process started
    for monitor in getattr(node, "all_processes", {}).get("monitor", []):
        monitor.process.kill()
        monitor.process.wait()
    ray.shutdown()


def _token_mode_for_a_local_ray() -> None:
    """Ray 2.60 turns token authentication on for a new local cluster, and warns that it did
    unless RAY_AUTH_MODE says so: saying so keeps it on without the warning; a mode the user set
    stays. As Ray does when it sets the mode itself, its configuration cached in this process is
    read again, whoever set the variable and when (else a driver whose cache predates the
    variable would not send the token to its own cluster)."""
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    from ray._raylet import Config

    Config.initialize("")


def _check_dashboard_packages() -> None:
    """Refuse in one line when the packages of Ray's dashboard (ray[default]) are missing."""
    try:
        import ray.dashboard.optional_deps  # noqa: F401 - what Ray imports to decide the same
    except ImportError as exc:
        _fail(f"hydra.launcher.dashboard=true needs the packages of Ray's dashboard ({exc}): "
              "pip install 'ray[default]'")


TOKEN_HINT = ("; a cluster with token authentication (Ray's default when ~/.ray/auth_token exists) "
              "needs RAY_AUTH_MODE=token and its token in ~/.ray/auth_token or RAY_AUTH_TOKEN")


def _token_hint(address: str, exc: BaseException) -> str:
    """TOKEN_HINT where the failure to join is one of authentication, else nothing.

    Ray 2.60 raises its AuthenticationError when token mode is on without a token. A client
    without token mode joining a cluster with it gets no such error: its requests are refused
    until it gives up with the ConnectionError of a cluster that is not there. So the hint also
    goes with a ConnectionError when token mode is off and something listens at the address; not
    when nothing does (a wrong address, a stopped cluster) nor when token mode was on."""
    from ray.exceptions import AuthenticationError

    if isinstance(exc, AuthenticationError):
        return TOKEN_HINT
    if not isinstance(exc, ConnectionError) or os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return ""
    return TOKEN_HINT if _listens(address) else ""


def _listens(address: str) -> bool:
    """Whether a TCP connection to HOST:PORT succeeds (False for other address forms)."""
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "/" in host:
        return False
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
            return True
    except OSError:
        return False


@dataclass
class Execution:
    """What `execute` did: the runs' outcomes, on how many cores, and the sweep's wall time from
    its start (composing and planning included) until the runs were saved and Ray stopped."""

    done: list[Outcome]
    cores: int
    seconds: float
    retried: int = 0
    """runs sent again after Ray lost them with their worker or node"""

    def efficiency(self) -> str:
        """Core utilisation (the runs' wall seconds over cores x the sweep's) and the fixed cost
        (the sweep's wall time before the first run began and after the last one ended)."""
        busy = sum(o.wall_seconds for o in self.done)
        span = max(o.ended for o in self.done) - min(o.ended - o.wall_seconds for o in self.done)
        return (f"{busy / (self.cores * self.seconds):.0%} of {self.cores} core"
                f"{'s' * (self.cores > 1)} busy over {self.seconds:.1f} s; fixed cost "
                f"{max(0.0, self.seconds - span):.1f} s (planning, starting workers, saving)")


def execute(jobs: list[Job], address=None, num_cpus=None, parallel="auto",
            started: float | None = None, dashboard: bool = False, hooks=None) -> Execution:
    """Run the jobs, longest first (lab.schedule), on Ray, in forks of this process or in this
    process (`mode`), saving each result as it arrives. `started` is the sweep's start
    (time.perf_counter; default now). A Ray it starts (with its dashboard if `dashboard`) is
    stopped before it returns. `hooks` (lab.callbacks.Hooks) hears of each run saved.

    Ctrl-C cancels the runs in flight and raises Interrupted; every run saved so far stays.
    """
    started = time.perf_counter() if started is None else started
    if not jobs:
        return Execution([], 1, 0.0)
    progress = Progress(len(jobs))
    done = []
    code = provenance.code()  # the driver's: a worker may run a copy of the package without git
    writers = {}  # results_dir -> results.Writer: the runs and their index

    def finish(job: Job, result: RunResult, running: int) -> None:
        writers.setdefault(job.results_dir, results.Writer(job.results_dir)).save(result)
        if hooks is not None:
            hooks.saved(job.results_dir, result)
        done.append(Outcome.of(result))
        progress.update(done[-1], running=running)

    cores, retried = 1, 0
    try:
        where = mode(jobs, parallel, address, num_cpus)
        if where == "ray":
            cores, retried = _on_ray(jobs, code, finish, progress, address, num_cpus, dashboard)
        elif where == "processes":
            cores = _cores(num_cpus)
            _in_forks(jobs, code, finish, progress, cores)
        else:
            in_the_driver()
            for i, job in enumerate(schedule.longest_first(jobs)):
                finish(job, run(job, code), running=min(1, len(jobs) - i - 1))
    except KeyboardInterrupt:
        raise Interrupted(len(done)) from None
    finally:
        progress.close()
        for writer in writers.values():
            writer.flush()
    return Execution(done, cores, time.perf_counter() - started, retried)


def _in_forks(jobs: list[Job], code: dict, finish, progress: Progress, cores: int) -> None:
    """Run the jobs in `cores` forks of this process (lab.forks), longest first, short runs
    batched (lab.schedule); calls finish(job, result, running) as each run ends. A fork that
    dies fails the runs it held; if every fork died, this process trains what none took."""
    queue = forks.Queue(list(schedule.batches(jobs, cores)))
    trainers = forks.Forks(queue, code, cores)

    def save(job: Job, result: RunResult) -> None:
        finish(job, result, trainers.alive)

    try:
        while trainers.alive:
            for job, result in trainers.results():
                save(job, result)
            progress.update(running=trainers.alive)
            time.sleep(0.05)
        trainers.finish(save)
        in_the_driver()  # if every fork died, this process trains what none took
        while (taken := queue.take()) is not None:
            for job in queue.batches[taken]:
                save(job, run(job, code))
    finally:
        if trainers.alive:  # Ctrl-C or an error: keep what they finished
            trainers.abort(save)
        trainers.close()


RETRIES = 3
"""Times a task is sent again after Ray lost it with its worker or node (`_lost_with_its_node`); a
run's own error is stored as a failed run, never retried."""


def _lost_with_its_node(exc: Exception) -> bool:
    """Whether a task failed because Ray lost the process or node that ran it, or its result with
    that node (what Ray's own max_retries retries), rather than because of the task itself."""
    from ray import exceptions

    return isinstance(exc, (exceptions.WorkerCrashedError, exceptions.NodeDiedError,
                            exceptions.LocalRayletDiedError, exceptions.ObjectLostError,
                            exceptions.OutOfMemoryError))


def _on_ray(jobs: list[Job], code: dict, finish, progress: Progress, address, num_cpus,
            dashboard: bool = False) -> tuple[int, int]:
    """Run the jobs as Ray tasks, longest first, short runs batched (lab.schedule), each task
    named after its first run and carrying the driver's provenance.code(); calls
    finish(job, result, running) as each run ends. Returns the CPUs the runs had and how many
    runs were sent again after their worker or node was lost.

    This process retries lost tasks itself (up to RETRIES times; Ray's own retries are off) so
    that it can count them and say so: a run comes back once, from whichever node trained it.

    Starting a local Ray, this process forks head starts first (lab.forks): they take batches
    from the same queue while Ray starts, until a Ray worker begins to train."""
    import ray

    in_flight = 0  # runs in Ray's tasks, submitted and not yet back
    head = None
    slots = _cores(num_cpus)

    def running() -> int:
        return min(in_flight, slots) + (head.alive if head else 0)

    def save(job: Job, result: RunResult) -> None:
        finish(job, result, running())

    if ray.is_initialized():
        ours = False
    elif _joins(address):
        ours = True
        connect(address, num_cpus, dashboard)
    else:
        ours = True
        queue = forks.Queue(list(schedule.batches(jobs, slots)))
        head = forks.Forks(queue, code, max(1, slots - 1))  # before Ray's threads exist here
        connect(None, num_cpus, dashboard)
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if head is None:
        queue = forks.Queue(list(schedule.batches(jobs, slots)))
    remote = ray.remote(num_cpus=1, max_retries=0)(run_batch)
    pending = {}  # task -> (its batch, times sent before)
    retried = 0

    def submit(batch: list[Job], attempt: int = 0) -> None:
        nonlocal in_flight
        name = f"{batch[0].run.algorithm}:{batch[0].run_id}" + (
            f"+{len(batch) - 1}" if len(batch) > 1 else "")
        signal_ = head.ray_signal if head is not None and head.alive else None
        pending[remote.options(name=name).remote(batch, code, signal_)] = batch, attempt
        in_flight += len(batch)

    try:
        while True:
            if head is not None:
                for job, result in head.results():
                    save(job, result)
            # Only a window of tasks is submitted, twice the cluster's CPUs (read again as nodes
            # join): the driver holds no per-task state for the rest of the grid, and a Ctrl-C
            # has little to cancel.
            slots = max(slots, int(ray.cluster_resources().get("CPU", 1)))
            while len(pending) < 2 * slots and (taken := queue.take()) is not None:
                submit(queue.batches[taken])
            if not pending:
                if head is None or not head.alive:
                    break
                time.sleep(0.05)  # the head starts' last batches
                continue
            # While head starts train, their runs and Ray's signal are looked for every 50 ms:
            # they end after their batch in hand once Ray trains.
            timeout = 0.05 if head is not None and head.alive else 1.0
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
            if head is not None and head.alive and head.ray_trains():
                head.stop()
            if not ready:
                progress.update(running=running())
                continue
            batch, attempt = pending.pop(ready[0])
            in_flight -= len(batch)
            try:
                outcomes = ray.get(ready[0])
            except Exception as exc:  # noqa: BLE001 - sent again if lost with its node, else its runs failed
                if attempt < RETRIES and _lost_with_its_node(exc):
                    progress.note(f"{len(batch)} run{'s' * (len(batch) > 1)} ({batch[0].run_id}"
                                  f"{', ...' * (len(batch) > 1)}) lost with {type(exc).__name__}: "
                                  f"sent again ({attempt + 1} of {RETRIES})")
                    retried += len(batch) if attempt == 0 else 0
                    submit(batch, attempt + 1)
                    continue
                outcomes = [lost(job, exc) for job in batch]
            for job, result in zip(batch, outcomes):
                save(job, result)
        if head is not None:
            head.finish(save)
    finally:
        for ref in pending:  # Ctrl-C or an error here: leave nothing running on the cluster
            ray.cancel(ref, force=True)
        if head is not None:
            if head.alive:  # Ctrl-C or an error: keep what they finished
                head.abort(save)
            head.close()
    if ours:
        disconnect()  # now, not at exit: part of the sweep's reported wall time
    return slots, retried


def report(jobs: list[Job], execution: Execution) -> int:
    """Print where results are, what failed and how busy the cores were; the exit status."""
    failed = [o for o in execution.done if o.failed]
    dirs = sorted({str(j.results_dir) for j in jobs}) or ["(nothing to run)"]
    retried = (f", {execution.retried} retried after their worker or node was lost"
               if execution.retried else "")
    print(f"{len(execution.done) - len(failed)} runs finished, {len(failed)} failed{retried}; "
          f"results in {', '.join(dirs)}")
    for outcome in failed:
        print(f"  failed {outcome.run_id}: {outcome.error}", file=sys.stderr)
    if execution.done:
        print(f"cores: {execution.efficiency()}")
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


def analyse(results_dirs, figures=True) -> None:
    """Draw the figures and write the summary and the report of each results directory
    (lab.report.analyse; figures="all" draws every figure); print where they are. Never fails
    the sweep: the runs are stored whatever happens here."""
    import lab.report  # the module, not this module's report() of a sweep's runs

    for results_dir in sorted(set(map(Path, results_dirs))):
        if results.run_files(results_dir):
            lab.report.analyse(results_dir, every=figures == "all")


def _ray_started() -> bool:
    import ray

    return ray.is_initialized()


GRID_SWEEPERS = ("hydra_plugins.lab_plugins.lab_plugins.LabSweeper",
                 "hydra._internal.core_plugins.basic_sweeper.BasicSweeper")
"""The sweepers that expand a grid (the lab's, Hydra's basic one): they take no interval()"""
HYDRA_FOLDERS = {  # Hydra's folder knob -> (its value in conf/config.yaml, why the lab ignores it)
    "hydra.run.dir": (".", "a run's results go to results_dir"),
    "hydra.sweep.dir": ("${results_dir}/_sweeps", "a sweep's results go to results_dir"),
    "hydra.sweep.subdir": ("${hydra.job.num}", "every run of a sweep lands in results_dir as one "
                           "<run_id>.parquet file, with no folder per job"),
}


class HydraKnobs(Callback):
    """Hydra's own knobs the lab does not follow are refused in one line (exit 2), before Hydra
    creates a folder or a sweeper starts: the folder knobs (HYDRA_FOLDERS: results go to
    results_dir), and interval() in a grid. Registered as a Hydra callback in conf/config.yaml."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        _check_hydra_folders(config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        _check_hydra_folders(config)
        _check_grid(config)


def _check_hydra_folders(config: DictConfig) -> None:
    for key, (default, why) in HYDRA_FOLDERS.items():
        value = OmegaConf.to_container(OmegaConf.select(config, key.rsplit(".", 1)[0]), resolve=False)
        value = value.get(key.rsplit(".", 1)[1])
        if value != default:
            _fail(f"{key}={value} is not used by the lab: {why} (set results_dir=DIR instead)")


def _check_grid(config: DictConfig) -> None:
    """interval() is a search's, not a grid's."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if OmegaConf.select(config, "hydra.sweeper._target_") not in GRID_SWEEPERS:
        return  # a search (hydra/sweeper=search, Hydra's optuna, ...) takes interval()
    sweeper = OmegaConf.to_container(config.hydra.sweeper, resolve=False)
    if any(value is not None for key, value in sweeper.items() if key not in ("_target_", "max_batch_size", "params")):
        return  # a named search (sweeps/search_*.yaml) sets the search's settings: the grid sweeper hands it over
    params = OmegaConf.select(config, "hydra.sweeper.params")
    params = OmegaConf.to_container(params, resolve=False) if OmegaConf.is_config(params) else {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    try:
        parsed = OverridesParser.create().parse_overrides(arguments)
    except Exception:  # noqa: BLE001 - the sweeper parses them again and reports Hydra's error
        return
    for override in parsed:
        if override.is_sweep_override() and not override.is_discrete_sweep():
            _fail(f"{override.input_line}: a grid takes comma lists (a,b,c), range(), choice() or "
                  "glob(); interval() belongs to a search sweeper, which samples from it")


def _cwd() -> str | None:
    """The working directory, or None where it is gone (a Ray job's unpacked working_dir can be
    replaced under a running driver)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def record(results_dirs, sweep_config: DictConfig, counts: dict) -> list[Path]:
    """Write a copy of the sweep's composed primary config, its command line and overrides, the
    host its driver runs on, the code that runs it and what it trains into
    RESULTS_DIR/_sweeps/<UTC time>.yaml of each results_dir it trains into; the readers of
    results_dir skip that folder. Returns the files."""
    now = time.gmtime()
    primary = OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])
    try:
        composed = OmegaConf.to_container(primary, resolve=True)
    except Exception:  # noqa: BLE001 - an interpolation only a job can resolve: kept as written
        composed = OmegaConf.to_container(primary, resolve=False)
    hydra_node = sweep_config.get("hydra")

    def node(key):
        found = OmegaConf.select(hydra_node, key) if hydra_node is not None else None
        return OmegaConf.to_container(found, resolve=False) if OmegaConf.is_config(found) else found

    code = provenance.code()
    doc = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", now),
        "command": code["command"],
        "cwd": _cwd(),
        "host": provenance.machine()["host"],
        "code": {k: code[k] for k in ("lab_version", "git_commit", "git_dirty")},
        "overrides": node("overrides.task") or [],
        "hydra_overrides": node("overrides.hydra") or [],
        "sweeper": node("sweeper"),
        "launcher": node("launcher"),
        "runs": counts,
        "config": composed,
    }
    text = ("# A sweep that trained into this results_dir (written by lab.sweep.record): its command,\n"
            "# overrides and composed primary config. Re-run it with the same command.\n"
            + OmegaConf.to_yaml(OmegaConf.create(doc)))
    written = []
    for results_dir in sorted(set(map(Path, results_dirs))):
        folder = results_dir / results.SWEEPS
        folder.mkdir(parents=True, exist_ok=True)
        stem = time.strftime("%Y%m%dT%H%M%SZ", now)
        for n in itertools.count(1):  # two sweeps started in the same second keep both records
            path = folder / (f"{stem}.yaml" if n == 1 else f"{stem}-{n}.yaml")
            try:
                with open(path, "x") as f:
                    f.write(text)
                break
            except FileExistsError:
                continue
        written.append(path)
    return written


def launch(config_loader, sweep_config, job_overrides, address=None, num_cpus=None, parallel="auto",
           figures=True, dry_run=False, dashboard=False, track=None, hydra_callbacks=None):
    """Called by the lab's Hydra launcher with the whole grid.

    Before training: joins the Ray cluster if one is named and writes the sweep's record into
    each results_dir it trains into (`record`); a local Ray is started by `execute` (with its
    dashboard if asked). Each run saved goes to Hydra's job callbacks and the tracker
    (lab.callbacks). None of this happens on a dry run, an invalid knob or when nothing is
    left to train."""
    from hydra.core.utils import JobReturn, JobStatus

    started = time.perf_counter()
    if parallel not in (True, False, "processes", "auto"):
        _fail(f"hydra.launcher.parallel={parallel!r} is not allowed: true (Ray), processes (forks "
              "of this process, no Ray), false (this process) or auto")
    if figures not in (True, False, "all"):
        _fail(f"hydra.launcher.figures={figures!r} is not allowed: true (the summary, the report and the "
              "figures of up to 16 configurations), all (every figure) or false (none)")
    composer = Composer(config_loader, sweep_config)
    try:
        p = plan(composer(o) for o in job_overrides)
        try:
            hooks = callbacks.for_grid(hydra_callbacks, sweep_config, track, composer, job_overrides, p.first)
        except config.ConfigError as exc:
            _fail(str(exc))
        print(f"{len(job_overrides)} configurations, {len(p.train)} runs to train")
        for note in p.notes:
            print(note)
        where = mode(p.train, parallel, address, num_cpus) if p.train else None
        if parallel == "auto" and where in ("processes", "driver"):
            print(_without_ray_note(p.train, where, num_cpus))
        if dry_run:
            list_plan(p, job_overrides)
            return []
        joins = where == "ray" and _joins(address) and not _ray_started()
        if joins:  # a cluster that cannot be joined stops the sweep before its record is written
            connect(address, num_cpus, dashboard)
        if p.train:
            record({j.results_dir for j in p.train}, sweep_config,
                   {"configurations": len(job_overrides), "train": len(p.train), "skip": len(p.skip)})
        sys.stdout.flush()  # the notes before the progress (on stderr)
        execution = execute(p.train, address=address, num_cpus=num_cpus, parallel=parallel,
                            started=started, dashboard=dashboard, hooks=hooks)  # starts a local Ray itself
        if joins:
            disconnect()
            execution.seconds = time.perf_counter() - started
    except KeyboardInterrupt as stop:
        _interrupted(stop)
    status = report(p.train, execution)
    if figures:
        analyse((j.results_dir for j in p.train + p.skip), figures)
    if status:
        sys.exit(status)
    return [JobReturn(overrides=list(o), status=JobStatus.COMPLETED) for o in job_overrides]


@hydra.main(version_base="1.3", config_path=f"pkg://{CONF_PACKAGE}", config_name="config")
def main(cfg: DictConfig) -> dict:
    """One run in this process (Hydra's run mode); returns its final exact evaluation, the
    return_value Hydra hands to on_job_end (lab.callbacks)."""
    try:
        p = plan([flat(cfg)])
        try:
            hooks = callbacks.for_run(HydraConfig.get().launcher.get("track"))
        except config.ConfigError as exc:
            _fail(str(exc))
        for note in p.notes:
            print(note)
        execution = execute(p.train, parallel=False, hooks=hooks)
    except KeyboardInterrupt as stop:
        _interrupted(stop)
    status = report(p.train, execution)
    if status:
        sys.exit(status)
    return callbacks.final_evaluation(*(p.train or p.skip))


if __name__ == "__main__":
    main()
