"""Where a sweep's work runs, for grids and searches alike: the driver (`InProcess`), forks of
it (`Forks`, which have the lab imported) or Ray actors (`RayActors`). A pool's workers each build
a server (lab.execution.batch.Trainer, lab.search.trial.Trainer) from a class and its arguments
and answer the calls `(method, argument)` they are sent, in order:

    pool.grow()                    ->  the workers ready since the last call (at first: all)
    pool.send(worker, call, name)      (name: what Ray's tools and process titles show)
    pool.answers_ready(timeout)    ->  [(worker, answer), ...]

A worker that dies (a fork killed, an actor or its node lost) answers every call it held with
`Lost` and is sent nothing again; what that means is the client's. Every fork dies with the
driver (Linux: the parent-death signal), so a killed sweep leaves nothing training.
"""

import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import queue
import signal
import threading
import time
from dataclasses import dataclass

from lab.compat.ray import set_process_title
from lab.run import exclude_imports_from_startup, warm_up

FORK = multiprocessing.get_context("fork")
"""Forked, a worker inherits the driver's imports: it trains at once."""


@dataclass
class Lost:
    """The answer of a worker that died with the call, or of a call that raised; `retry`: it may
    succeed elsewhere (its Ray node or worker process was lost); not `begun`: the worker died
    before it began this call (a fork's calls after the one it died in)."""

    error: str
    retry: bool = False
    begun: bool = True


class Interrupt:
    """Ctrl-C, held until the work is at a safe point (`check`: every pool before it looks for
    answers, a search's trial in this process at its evaluation points), never in the middle of
    writing runs or Optuna's journal, nor of a compiled kernel (numba makes it that run's error)."""

    def __init__(self):
        self.requested = False

    def __enter__(self) -> "Interrupt":
        self.previous = signal.signal(signal.SIGINT, lambda signum, frame: setattr(self, "requested", True))
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self.previous)

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


class InProcess:
    """The server in this process: each call is answered when it is made."""

    def __init__(self, server: tuple, interrupt: Interrupt | None = None, worker: int = 0):
        exclude_imports_from_startup()
        cls, args = server
        self.size, self.answers, self.check, self.server = 1, [], (interrupt or Interrupt()).check, cls(*args)
        self.fresh = [worker]

    def grow(self) -> list[int]:
        fresh, self.fresh = self.fresh, []
        return fresh

    def send(self, worker: int, call: tuple, name: str | None = None) -> None:
        method, argument = call
        self.answers.append((worker, getattr(self.server, method)(argument)))

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        self.check()
        answers, self.answers = self.answers, []
        return answers

    def close(self) -> None:
        pass


class Forks:
    """`size` forks of this process, each serving calls over a pair of pipes (one thread reads
    them, another sends the answers, so neither side waits for the other); once every one has
    died, `fallback` (a server) in this process, as worker `size`. Each fork starts numba first
    (lab.run.warm_up), before its first call comes."""

    def __init__(self, size: int, server: tuple, interrupt: Interrupt | None = None, fallback: tuple | None = None):
        self.size, self.check, self.interrupt = size, (interrupt or Interrupt()).check, interrupt
        self.fallback, self.here = fallback, None
        self.calls, self.answers, self.processes = [], [], []
        self.sent, self.received, self.fresh = [0] * size, [0] * size, list(range(size))
        self.begun = FORK.Array("i", size, lock=False)  # calls each fork has begun (its slot, its own)
        self.warmed = FORK.Array("d", size, lock=False)  # seconds each fork took to warm up
        try:
            for worker in range(size):
                their_calls, calls = FORK.Pipe(duplex=False)
                answers, their_answers = FORK.Pipe(duplex=False)
                drivers = [calls, answers, *self.calls, *self.answers]  # the ends the fork must not hold
                process = FORK.Process(target=_serve, args=(their_calls, their_answers, server, self.begun, self.warmed,
                                                            worker, drivers), name="lab-fork", daemon=True)
                process.start()
                their_calls.close()
                their_answers.close()
                self.calls.append(calls)
                self.answers.append(answers)
                self.processes.append(process)
        except BaseException:  # Ctrl-C or SIGTERM while they start: none of them stays
            self.close()
            raise

    @property
    def warm_up_seconds(self) -> float:
        """The forks' start-up so far: work their first calls would have done otherwise."""
        return sum(self.warmed)

    def grow(self) -> list[int]:
        fresh, self.fresh = self.fresh, []
        if self.fallback is not None and self.here is None and all(pipe.closed for pipe in self.answers):
            self.here = InProcess(self.fallback, self.interrupt, worker=self.size)
            fresh += self.here.grow()
        return fresh

    def send(self, worker: int, call: tuple, name: str | None = None) -> None:
        if worker == self.size:
            self.here.send(worker, call)
            return
        self.sent[worker] += 1
        with contextlib.suppress(OSError):  # it died: its answers say so
            self.calls[worker].send(call)

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        if self.here is not None:
            return self.here.answers_ready(timeout)
        self.check()
        ready = multiprocessing.connection.wait([a for a in self.answers if not a.closed], timeout)
        self.check()  # a SIGTERM to the process group ends the forks too: not their loss
        answers = []
        for pipe in ready:
            worker = self.answers.index(pipe)
            try:
                while True:
                    answers.append((worker, pipe.recv()))
                    self.received[worker] += 1
                    if not pipe.poll():
                        break
            except (EOFError, OSError):
                answers += self._lost(worker)
        return answers

    def _lost(self, worker: int) -> list[tuple[int, Lost]]:
        """A fork died: its calls unanswered, those it had begun (the last one is what it died in;
        any before had ended, their answers unsent) and then those it had not."""
        self.answers[worker].close()
        self.processes[worker].join(timeout=5)  # its exit code, once it is gone
        error = f"the fork training it died (exit code {self.processes[worker].exitcode})"
        begun = self.begun[worker] - self.received[worker]
        unanswered = self.sent[worker] - self.received[worker]
        self.received[worker] = self.sent[worker]
        return [(worker, Lost(error, begun=i < begun)) for i in range(unanswered)]

    def close(self) -> None:
        """End the forks (Ctrl-C: whatever they were doing)."""
        for pipe in self.calls + self.answers:
            pipe.close()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.join()


def _serve(calls, answers, server: tuple, begun, warmed, worker: int, drivers: list) -> None:
    """A fork's loop: each call read from `calls` answered on `answers`, in order, until the driver
    closes `calls`. `drivers`, the driver's ends of the pipes, are closed here at once: held here,
    they would keep this fork, and the others, from ever seeing the driver close its own."""
    # Linux: SIGKILL when the driver dies (a killed sweep leaves nothing training nor writing)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    for end in drivers:
        end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    # SIGTERM (the driver's `close`) ends the fork whichever of its threads the kernel hands it
    # to: the driver's Python handler, inherited, runs only when the main thread next runs
    # Python, and a main thread waiting for calls never does if the reader thread took the signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    exclude_imports_from_startup()  # its imports were the driver's: not its first run's start-up
    inbox, outbox, end = queue.SimpleQueue(), queue.SimpleQueue(), object()

    def read() -> None:
        with contextlib.suppress(EOFError, OSError):  # the driver closed the pipe
            while True:
                inbox.put(calls.recv())
        inbox.put(end)

    def send() -> None:
        while (answer := outbox.get()) is not end:  # (an answer may be None)
            answers.send(answer)

    threading.Thread(target=read, daemon=True).start()  # read while it warms up: the driver never waits
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    began = time.perf_counter()
    warm_up()
    warmed[worker] = time.perf_counter() - began
    cls, args = server
    serving = cls(*args)
    while (call := inbox.get()) is not end:
        method, argument = call
        begun[worker] += 1
        outbox.put(getattr(serving, method)(argument))
    outbox.put(end)
    sender.join()


def lost_with_its_node(exc: Exception) -> bool:
    """Whether a call failed because Ray lost the actor, process or node that ran it (or its result
    with that node), not because of the call itself."""
    from ray import exceptions  # not loaded until a sweep runs on Ray: ~0.3 s of start-up

    return isinstance(exc, (exceptions.RayActorError, exceptions.WorkerCrashedError, exceptions.NodeDiedError,
                            exceptions.LocalRayletDiedError, exceptions.ObjectLostError,
                            exceptions.OutOfMemoryError))


class Actor:
    """A Ray actor serving one server: each call titled with its name while it runs, as Ray
    titles a task's process (`ray::<name>`), so that `ps` on a node shows what trains there."""

    def __init__(self, cls: type, args: tuple):
        self.server, self.idle = cls(*args), f"ray::{cls.__name__}"

    def call(self, method: str, argument, name: str | None):
        if name:
            set_process_title(f"ray::{name}")
        try:
            return getattr(self.server, method)(argument)
        finally:
            if name:
                set_process_title(self.idle)


class RayActors:
    """One actor per CPU of the Ray cluster this process has joined (at most `most`), more as
    nodes join (`grow`), each given out once it has started; a lost one is replaced where the
    cluster has a CPU for it."""

    def __init__(self, server: tuple, interrupt: Interrupt | None = None, most: int | None = None):
        import ray  # not loaded until a sweep runs on Ray: ~0.3 s of start-up

        self.ray, self.server, self.check, self.most = ray, server, (interrupt or Interrupt()).check, most
        self.actor = ray.remote(num_cpus=1, max_restarts=0)(Actor)
        # every actor started (by worker); those lost; start-up call -> worker; call -> worker
        self.actors, self.lost, self.starting, self.pending = [], set(), {}, {}
        deadline = time.monotonic() + 30
        while not (fresh := self.ready(wait=True)) and time.monotonic() < deadline:  # nodes may still be joining
            time.sleep(0.5)
        self.fresh = fresh

    @property
    def size(self) -> int:
        return len(self.actors) - len(self.lost)

    def ready(self, wait: bool = False) -> list[int]:
        """Start actors for the CPUs the cluster has free; the workers whose actor has started."""
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        wanted = min(cpus, self.most or cpus) - self.size
        for _ in range(max(0, wanted)):
            actor = self.actor.remote(*self.server)
            self.starting[actor.__ray_ready__.remote()] = len(self.actors)
            self.actors.append(actor)
        if not self.starting:
            return []
        started, _ = self.ray.wait([*self.starting], num_returns=len(self.starting), timeout=5 if wait else 0)
        return [self.starting.pop(ref) for ref in started]

    def grow(self) -> list[int]:
        fresh, self.fresh = self.fresh, []
        return fresh + self.ready()

    def send(self, worker: int, call: tuple, name: str | None = None) -> None:
        method, argument = call
        remote = self.actors[worker].call
        self.pending[(remote.options(name=name) if name else remote).remote(method, argument, name)] = worker

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        self.check()
        if not self.pending:
            time.sleep(min(timeout, 0.05))  # actors starting: their readiness is looked for by `grow`
            return []
        ready, rest = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready and rest:  # and every other answer that is there already
            ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        answers = []
        for ref in ready:
            worker = self.pending.pop(ref)
            try:
                answers.append((worker, self.ray.get(ref)))
            except Exception as exc:  # noqa: BLE001 - the actor or its node died, or the call raised
                answers.append((worker, Lost(f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                                             lost_with_its_node(exc))))
                if worker not in self.lost:  # sent nothing again: a call that raised may have broken it
                    self.lost.add(worker)
                    with contextlib.suppress(Exception):
                        self.ray.kill(self.actors[worker])
        return answers

    def close(self) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
