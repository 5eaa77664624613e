"""Where a grid's runs train (`mode`) and training them there (`execute`): this process, forks of
it, or Ray actors (lab.execution.workers) on a cluster it joins or on a local Ray it starts.

Runs in one grid differ in cost by orders of magnitude: sent in override order, the longest could
start last and leave every other core idle. So they go out longest first by a predicted `cost`
(rough on purpose: only the order and batch sizes depend on it, never a result), runs too short to
be worth a call of their own packed into `batches`, each to the first worker free, which holds a
second one while its first is short (AHEAD_SECONDS); each batch's runs go to the driver's Store as
they come back. A batch lost with its Ray actor, process or node is sent again (RETRIES); one lost
with a fork is recorded failed (what killed one fork would kill the next), and if every fork died
this process trains what is left. A local Ray takes seconds to start and its actors to import the
lab: meanwhile a thread keeps forks of this process (one per core but one) fed, until Ray's first
actor is ready. A grid likely to train in forks starts them before it is planned (`fork_ahead`):
numba's start-up in each fork, a third of a second, then overlaps the planning.
"""

import collections
import os
import sys
import threading
import time
import uuid
from typing import Iterator, NamedTuple

from lab.cli import plural
from lab.config.jobs import Job
from lab.execution import ray_connection
from lab.execution.batch import Trainer
from lab.execution.progress import Execution, Progress
from lab.execution.workers import Forks, InProcess, Lost, RayActors
from lab.results import provenance
from lab.sweep.store import Store

RAY_START_SECONDS = 3.0
"""About what starting and stopping an embedded local Ray costs in wall time (2.5 s and 0.3 s on
the 2-core development machine; also 3.3 CPU-seconds, and 0.7 s of imports per worker)."""

RAY_WORTH_SECONDS = 10 * RAY_START_SECONDS
"""Predicted work per core from which parallel=auto starts a local Ray: its start is then at most
a tenth of the sweep. Below, forks of this process, which have the lab imported, finish sooner
(seed 000's grid x 4 seeds, 19 s a core on 2 cores: 17 s in forks, 21.5 s on Ray)."""

FORK_SECONDS = 0.5
"""Below this much predicted work, forks cost about what spreading the runs over the cores saves."""

MODES = {True: "ray", False: "driver", "processes": "processes"}  # hydra.launcher.parallel (not auto) -> where

RETRIES = 3
"""Times a batch is sent again after Ray lost it with its actor, process or node (a run's own error
is stored as a failed run, never retried)."""

AHEAD_SECONDS = 0.5
"""A worker is sent another batch while it holds less predicted work than this (and at most two
batches): the driver's round trip, a millisecond or so, is then no share of its time"""

RUN_SECONDS = 0.015  # every run's own overhead: building its learner, its table and its checkpoint
TASK_SECONDS = 0.2  # a batch's predicted work: well above a Ray call's overhead
TASKS_PER_CORE = 4  # batches stay small enough to give every core at least this many to balance


def cost(job: Job) -> float:
    """Predicted seconds of the run on one core: training plus its exact evaluations (measured on
    the 2-core development machine, within about 30% of the runs' wall times)."""
    algorithm, knobs, run = job.run.algorithm, job.knobs, job.run
    layers, neurons = getattr(knobs, "layers", 0), getattr(knobs, "neurons", 0)
    weights = neurons * (9 + neurons * max(layers - 1, 0)) if layers else 9  # a net's hidden layers
    per_episode = {  # microseconds per training game
        "q_table": 1.2, "td_value": 1.0,
        "negamax_q": 1.7,
        "mc_vfa": 3.0 + 0.0012 * weights,
        "q_net": 8.0 + 0.0004 * weights * getattr(knobs, "epochs", 1),
        "alphazero": 25.0 * getattr(knobs, "simulations", 50) + 0.1 * weights,
    }.get(algorithm, 10.0)
    per_update = 0.0  # microseconds per update, beyond its games
    if algorithm == "mc_vfa":  # a gradient step on the update's afterstates (all seen, if kept)
        per_update = (120 + 25 * knobs.layers) * (1.5 if knobs.memory == "keep" else 1.0)
    per_point = 0.7 + (0.0003 * weights if algorithm != "alphazero" else 0.15 * knobs.simulations)
    points = -(-run.iterations // run.eval_every) * len(run.seats)
    return (RUN_SECONDS + 1e-6 * (per_episode * run.episodes_per_update + per_update) * run.iterations
            + 1e-3 * per_point * points)


def batches(jobs: list[Job], cores: int) -> Iterator[list[Job]]:
    """The jobs, longest first, in batches of about TASK_SECONDS of predicted work each (a run
    longer than that alone), never fewer than TASKS_PER_CORE batches per core while runs last."""
    ordered = sorted(jobs, key=cost, reverse=True)  # ties keep grid order
    total = sum(map(cost, ordered))
    target = min(TASK_SECONDS, total / max(1, TASKS_PER_CORE * cores))
    batch, filled = [], 0.0
    for job in ordered:
        batch.append(job)
        filled += cost(job)
        if filled >= target:
            yield batch
            batch, filled = [], 0.0
    if batch:
        yield batch


def cores(num_cpus=None) -> int:
    """The cores a local sweep uses: num_cpus, else every core of this machine."""
    return num_cpus or os.cpu_count() or 1


def mode(jobs: list[Job], parallel, address=None, num_cpus=None) -> str:
    """Where the jobs train: "ray" (a cluster to join, or a local Ray), "processes" (forks of this
    process, one per core) or "driver" (this process), as `parallel` says (MODES). auto: Ray if a
    cluster was named, else by the predicted work (`cost`): this process on one core or
    below FORK_SECONDS, a local Ray from RAY_WORTH_SECONDS a core, forks between."""
    if parallel != "auto":
        return MODES[parallel]
    if ray_connection.joins(address):
        return "ray"
    n, work = cores(num_cpus), sum(map(cost, jobs))
    if n == 1 or work < FORK_SECONDS:
        return "driver"
    return "ray" if work / n > RAY_WORTH_SECONDS else "processes"


def without_ray_note(jobs: list[Job], where: str, num_cpus=None) -> str:
    """Why parallel=auto trains these jobs without Ray, and where."""
    work, n = sum(map(cost, jobs)), cores(num_cpus)
    if where == "driver":
        why = "on one core" if n == 1 else "too little to spread over cores"
        return (f"the runs' predicted work ({work:.1f} s) is {why}: training them in this process "
                "(hydra.launcher.parallel=true uses Ray anyway)")
    return (f"the runs' predicted work ({work:.1f} s, {work / n:.1f} s a core) is under the "
            f"{RAY_WORTH_SECONDS:.0f} s a core for which starting Ray (about {RAY_START_SECONDS:.0f} s) pays: "
            f"training them in {n} forks of this process (hydra.launcher.parallel=true uses Ray anyway)")


class ForksAhead(NamedTuple):
    """Forks started before the grid was planned (`fork_ahead`), and what their trainers were given."""

    pool: Forks
    code: dict
    token: str


def fork_ahead(count: int, parallel, address=None, num_cpus=None) -> ForksAhead | None:
    """Forks for a grid of `count` runs, started before it is planned, so that they warm up
    (lab.run.warm_up, about 0.35 s) while it is: where it will likely train in forks (parallel
    auto or processes, no Ray cluster, several cores, at least two runs a core). `execute` trains
    in them or closes them."""
    n = cores(num_cpus)
    if (parallel not in ("auto", "processes") or n == 1 or count < 2 * n or ray_connection.joins(address)
            or ray_connection.ray_started()):
        return None
    code, token = provenance.code(), uuid.uuid4().hex
    trainer = (Trainer, (code, token))
    return ForksAhead(Forks(n, trainer, fallback=trainer), code, token)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped `execute`: the runs in flight cancelled, `saved` runs of this sweep stored."""

    def __init__(self, saved: int):
        super().__init__(saved)
        self.saved = saved


def execute(jobs: list[Job], address=None, num_cpus=None, parallel="auto",
            started: float | None = None, dashboard: bool = False, hooks=None, ahead: ForksAhead | None = None) -> Execution:
    """Run the jobs where `mode` says, storing each batch of runs as it ends and telling `hooks` of
    each; `started`: the sweep's start (time.perf_counter); `ahead`: forks to train in, if they
    train in forks (else closed). Ctrl-C: the runs in flight cancelled, Interrupted raised; every
    run saved so far stays."""
    started = time.perf_counter() if started is None else started
    if not jobs:
        return Execution([], 1, 0.0)
    progress = Progress(len(jobs))
    code = ahead.code if ahead else provenance.code()  # the driver's: a worker may run a copy without git
    with Store(jobs, progress, hooks, ahead.token if ahead else None) as store:
        try:
            where, local = mode(jobs, parallel, address, num_cpus), (Trainer, (code, store.token))
            if ahead and where != "processes":
                ahead.pool.close()
            used, retried, warm_up = 1, 0, 0.0
            if where == "ray":  # a Ray started here is stopped before it returns
                used, retried, warm_up = on_ray(jobs, code, store, address, num_cpus, dashboard)
            elif where == "processes":
                used = cores(num_cpus)
                pool = ahead.pool if ahead else Forks(used, local, fallback=local)
                Grid(jobs, used, store).run([pool])
                warm_up = pool.warm_up_seconds
            else:
                Grid(jobs, 1, store).run([InProcess(local)])
        except KeyboardInterrupt:
            raise Interrupted(len(store.done)) from None
        finally:
            progress.close()
    return Execution(store.done, used, time.perf_counter() - started, retried, warm_up)


def report(jobs: list[Job], execution: Execution) -> int:
    """Print where results are, what failed and how busy the cores were; the exit status."""
    failed = [o for o in execution.done if o.failed]
    dirs = sorted({str(j.results_dir) for j in jobs})
    retried = (f", {execution.retried} retried after their worker or node was lost"
               if execution.retried else "")
    where = f"; results in {', '.join(dirs)}" if dirs else ""
    print(f"{plural(len(execution.done) - len(failed), 'run')} finished, {len(failed)} failed{retried}{where}")
    for outcome in failed:
        print(f"  failed {outcome.run_id}: {outcome.error}", file=sys.stderr)
    if execution.done:
        print(f"cores: {execution.efficiency()}")
    return 1 if failed else 0


def on_ray(jobs: list[Job], code: dict, store: Store, address, num_cpus, dashboard: bool) -> tuple[int, int, float]:
    """The jobs on Ray's actors; the CPUs they had, the runs sent again and the early forks'
    warm-up (Forks.warm_up_seconds). No token: an actor sends its runs home, for the driver to
    store (one on a node the driver counts as lost, cut off but not dead, could otherwise still
    write a run sent elsewhere, or after a killed driver's resume)."""
    ours = not ray_connection.ray_started()
    actors, warm_up = (Trainer, (code,)), 0.0
    if not ours or ray_connection.joins(address):
        if ours:
            ray_connection.connect(address, num_cpus, dashboard)
        pool = RayActors(actors)
        grid = Grid(jobs, max(1, pool.size), store)
        grid.run([pool])
    else:
        n = cores(num_cpus)
        grid = Grid(jobs, n, store)
        early = Forks(max(1, n - 1), (Trainer, (code, store.token)))  # before Ray's threads exist here
        ready = threading.Event()
        feeding = threading.Thread(target=grid.feed, args=(early, ready), name="early forks")
        feeding.start()
        try:
            ray_connection.connect(None, num_cpus, dashboard)
            pool = RayActors(actors)  # once its first actor is ready
        except BaseException:  # Ctrl-C, SIGTERM or a failure while Ray starts: no fork outlives it
            ready.set()
            feeding.join()
            grid.stop([early])
            raise
        ready.set()
        feeding.join()
        grid.run([early, pool], early=early)
        warm_up = early.warm_up_seconds
    if ours:
        ray_connection.disconnect()  # now, not at exit: part of the sweep's reported wall time
    return grid.cpus, grid.retried, warm_up


class Grid:
    """The driver's side of a grid: its batches handed to workers, what comes back stored."""

    def __init__(self, jobs: list[Job], cores: int, store: Store):
        self.todo = collections.deque((b, 0) for b in batches(jobs, cores))  # (batch, sent before)
        self.held = collections.defaultdict(collections.deque)  # (pool, worker) -> its (batch, sent before)
        self.live = []  # (pool, worker) of the workers that may be sent work
        self.store = store
        self.cpus, self.retried, self.error = cores, 0, None

    def send(self, pool, worker: int) -> None:
        """Send the worker the next batches while it holds little (AHEAD_SECONDS)."""
        held = self.held[pool, worker]
        while self.todo and (not held or len(held) < 2 and
                             sum(cost(job) for batch, _ in held for job in batch) < AHEAD_SECONDS):
            batch, attempt = self.todo.popleft()
            held.append((batch, attempt))
            more = f"+{len(batch) - 1}" * (len(batch) > 1)  # the call's name: `<algorithm>:<run id>+<more>`
            pool.send(worker, ("train", batch), f"{batch[0].run.algorithm}:{batch[0].run_id}{more}")

    def running(self) -> int:
        return sum(1 for calls in self.held.values() if calls)

    def feed(self, early: Forks, ready: threading.Event) -> None:
        """Keep the early forks busy until `ready` (a thread's, while Ray starts); `run` raises its error."""
        try:
            self.run([early], until=ready)
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            self.error = exc

    def run(self, pools: list, early=None, until: threading.Event | None = None) -> None:
        """Until every batch has come back (or `until` is set): workers kept busy, answers stored, the
        pools closed at the end (Ctrl-C, an error: `stop`); `early` (on_ray's forks): sent nothing more."""
        if self.error is not None:
            self.stop(pools)
            raise self.error
        self.live = [(pool, worker) for pool, worker in self.live if pool is not early]
        try:
            while (self.todo or self.running()) and not (until and until.is_set()):
                for pool in pools:
                    if pool is not early:
                        self.live += [(pool, worker) for worker in pool.grow()]
                self.cpus = max(self.cpus, pools[-1].size)
                for pool, worker in self.live:
                    self.send(pool, worker)
                busy = [p for p in pools if any(calls for (q, _), calls in self.held.items() if q is p)]
                for pool in busy:
                    self._answers(pool, pool.answers_ready(timeout=0.02 if len(busy) > 1 or until else 1.0))
                if not busy:
                    time.sleep(0.02)  # Ray's actors starting, or lost and the cluster without CPUs yet
                if early in pools and early not in busy:  # the early forks' last batch is in
                    early.close()
                    pools = [p for p in pools if p is not early]
                self.store.progress.update(running=self.running())
        except BaseException:
            if until is None:
                self.stop(pools)
            raise
        if until is None:
            for pool in pools:
                pool.close()

    def _answers(self, pool, answers: list) -> None:
        arrived, again = [], []
        for worker, answer in answers:
            batch, attempt = self.held[pool, worker].popleft()
            if isinstance(answer, Lost) and (pool, worker) in self.live:
                self.live.remove((pool, worker))
            if isinstance(answer, Lost) and not answer.begun:
                again.append((batch, attempt))
            elif isinstance(answer, Lost):
                self._lost(batch, attempt, answer)
            else:
                arrived += zip(batch, answer)
        self.todo.extendleft(reversed(again))
        if arrived:
            self.store.receive(arrived, self.running())

    def _lost(self, batch: list[Job], attempt: int, lost: Lost) -> None:
        """A batch lost with its worker: sent again if it was Ray's, else its runs failed."""
        if lost.retry and attempt < RETRIES:
            more = ", ..." * (len(batch) > 1)
            self.store.progress.note(f"{plural(len(batch), 'run')} ({batch[0].run_id}{more}) lost with "
                                     f"{lost.error.split(':')[0]}: sent again ({attempt + 1} of {RETRIES})")
            self.retried += len(batch) if attempt == 0 else 0
            self.todo.appendleft((batch, attempt + 1))
        else:
            self.store.lost(batch, RuntimeError(lost.error), self.running())

    def stop(self, pools: list) -> None:
        """Ctrl-C or an error: end every worker now, record the runs they had stored and not yet said so."""
        for pool in pools:
            pool.close()
        self.store.found([job for calls in self.held.values() for batch, _ in calls for job in batch])
        self.held.clear()
