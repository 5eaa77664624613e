"""Where a search's trials train: forks of the driver on this machine, Ray actors on a cluster,
or the driver itself. Each worker holds a `Trainer` (lab.search.trial) and answers one call at a
time, `("start", task)` or `("advance", go)`, with the trial's next Point or its Done.

- `Forks`: one fork of the driver per core, which has the lab imported already, so a trial
  starts at once; calls and answers travel over a pipe each.
- `RayActors` (a cluster was joined: hydra.launcher.address or RAY_ADDRESS): one actor per CPU
  of the cluster (more as nodes join), each a Trainer in a Ray worker process; an answer is the
  result of the call.
- `InProcess`: the Trainer in the driver (one core, or hydra.launcher.parallel=false).

A worker that dies (a fork killed, a node lost) answers with `Lost`: its trial fails and the
worker is not used again.
"""

import multiprocessing
import multiprocessing.connection
import signal
import time
from dataclasses import dataclass

from lab.forks import die_with_the_driver
from lab.run import exclude_imports_from_startup
from lab.search.trial import Trainer

FORK = multiprocessing.get_context("fork")


@dataclass
class Lost:
    """A worker that died with its trial."""

    error: str


class WorkersLost(RuntimeError):
    """No worker is left to train the search's trials (or a PBT generation lost one)."""


class Interrupt:
    """Ctrl-C, held until the search is at a safe point (`check`, which every pool calls before it
    looks for answers, and a trial trained in this process at each of its evaluation points):
    never in the middle of writing runs or Optuna's journal (a half-released lock file), nor of a
    compiled kernel (numba turns it into that run's error: the trial would end as failed)."""

    def __init__(self):
        self.requested = False

    def __enter__(self) -> "Interrupt":
        self.previous = signal.signal(signal.SIGINT, self._request)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self.previous)

    def _request(self, signum, frame) -> None:
        self.requested = True

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


class InProcess:
    """The Trainer in this process: each call is answered when it is made."""

    def __init__(self, code: dict, interrupt: Interrupt):
        exclude_imports_from_startup()
        self.size, self.answers, self.interrupt = 1, [], interrupt
        self.trainer = Trainer(code, check=interrupt.check)

    def grow(self) -> list[int]:
        return []

    def send(self, worker: int, call: tuple) -> None:
        method, argument = call
        self.answers.append((worker, getattr(self.trainer, method)(argument)))

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        self.interrupt.check()
        answers, self.answers = self.answers, []
        return answers

    def close(self) -> None:
        pass


class Forks:
    """`size` forks of this process, each serving a Trainer over a pipe."""

    def __init__(self, size: int, code: dict, interrupt: Interrupt):
        self.size, self.pipes, self.processes, self.interrupt = size, [], [], interrupt
        for _ in range(size):
            ours, theirs = FORK.Pipe()
            process = FORK.Process(target=_serve, args=(theirs, code), name="lab-search", daemon=True)
            process.start()
            theirs.close()
            self.pipes.append(ours)
            self.processes.append(process)

    def grow(self) -> list[int]:
        return []

    def send(self, worker: int, call: tuple) -> None:
        try:
            self.pipes[worker].send(call)
        except OSError:  # it died: its answer is that it is lost
            pass

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        """The answers that came (waiting at most `timeout` seconds for the first)."""
        self.interrupt.check()
        ready = multiprocessing.connection.wait([p for p in self.pipes if not p.closed], timeout)
        self.interrupt.check()  # a SIGTERM to the process group ends the forks too: not their loss
        answers = []
        for pipe in ready:
            worker = self.pipes.index(pipe)
            try:
                answers.append((worker, pipe.recv()))
            except (EOFError, OSError):
                pipe.close()
                self.processes[worker].join(timeout=5)  # its exit code, once it is gone
                code = self.processes[worker].exitcode
                answers.append((worker, Lost(f"the fork training it died (exit code {code})")))
        return answers

    def close(self) -> None:
        """End the forks (Ctrl-C: whatever they were training)."""
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.join()


def _serve(pipe, code: dict) -> None:
    die_with_the_driver()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    exclude_imports_from_startup()  # its imports were the driver's: not its first run's start-up
    trainer = Trainer(code)
    while True:
        try:
            method, argument = pipe.recv()
        except EOFError:  # the driver closed the pipe
            return
        pipe.send(getattr(trainer, method)(argument))


class RayActors:
    """One Trainer actor per CPU of the Ray cluster this process has joined (at most `most`),
    more as nodes join (`grow`)."""

    def __init__(self, code: dict, interrupt: Interrupt, most: int | None = None):
        import ray

        self.code, self.most, self.interrupt = code, most, interrupt
        self.actors, self.pending = [], {}  # pending: call in flight -> worker
        self.actor = ray.remote(num_cpus=1, max_restarts=0)(Trainer)
        deadline = time.monotonic() + 30
        while not self.grow() and time.monotonic() < deadline:  # a cluster whose nodes are still joining
            time.sleep(0.5)

    @property
    def size(self) -> int:
        return len(self.actors)

    def grow(self) -> list[int]:
        """Start an actor for every CPU the cluster has gained; the new workers."""
        import ray

        cpus = int(ray.cluster_resources().get("CPU", 0))
        wanted = min(cpus, self.most or cpus)
        new = list(range(len(self.actors), wanted))
        self.actors += [self.actor.remote(self.code) for _ in new]
        return new

    def send(self, worker: int, call: tuple) -> None:
        method, argument = call
        self.pending[getattr(self.actors[worker], method).remote(argument)] = worker

    def answers_ready(self, timeout: float) -> list[tuple[int, object]]:
        import ray

        self.interrupt.check()
        if not self.pending:
            return []
        ready, rest = ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready and rest:  # and every other answer that is there already
            ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        answers = []
        for ref in ready:
            worker = self.pending.pop(ref)
            try:
                answers.append((worker, ray.get(ref)))
            except Exception as exc:  # noqa: BLE001 - the actor or its node died
                answers.append((worker, Lost(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")))
        return answers

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
