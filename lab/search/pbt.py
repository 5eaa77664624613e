"""Population-based training, synchronous, on the search's workers: `num_samples` members, sampled
at random in the space, train in generations of `perturbation_interval` iterations, each seed going
on from its snapshot. Between generations the bottom quarter copies the state of a top-quarter
member and perturbs its knobs (Dimension.perturb). A member's rows keep the knobs each iteration
trained with and, in PBT_TRIAL, the member that trained it. The population is written to
results_dir/_search/pbt/ after each generation, from where the same command resumes (the generation
in progress trains again, to the same rows).
"""

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from lab.config import jobs
from lab.files import write_atomic
from lab.search.outcome import Configuration
from lab.search.settings import SearchSettings
from lab.search.space import Dimension
from lab.search.trial import Task, lost_runs, seed_jobs
from lab.execution.workers import Lost

FOLDER = "pbt"
QUANTILE = 0.25
"""The share of the population that is exploited (the top) and that exploits (the bottom)"""


def interval(settings: SearchSettings, iterations: int, eval_every: int) -> int:
    """Iterations per generation: perturbation_interval, or the multiple of eval_every nearest a
    tenth of the run (every generation ends at an evaluation point, where members are ranked)."""
    if settings.perturbation_interval is not None:
        if settings.perturbation_interval % eval_every:
            raise jobs.ConfigError(
                f"hydra.sweeper.perturbation_interval={settings.perturbation_interval} is not allowed: "
                f"it must be a multiple of eval_every ({eval_every}), where members are ranked")
        return settings.perturbation_interval
    return max(1, round(iterations / 10 / eval_every)) * eval_every


@dataclass
class Member:
    name: str
    params: dict
    curve: list
    """(iteration, the objective of each seed) at every evaluation point of its runs so far"""
    status: str = "training"
    """training, or how its runs ended: finished, or failed"""
    error: str | None = None
    """why its runs failed, where they failed with their worker"""
    lost: bool = False
    """its runs failed because their worker died (a fault of the machine: the search exits 1)"""


class Evolve:
    """The generations of a PBT search; `save` and `progress` as lab.search.study.Optimize's."""

    def __init__(self, base: dict, dims: dict[str, Dimension], settings: SearchSettings, pool, save, progress,
                 folder: Path):
        self.base, self.dims, self.settings = base, dims, settings
        self.pool, self.save, self.progress, self.folder = pool, save, progress, folder / FOLDER
        self.workers: list[int] = []  # the pool's workers so far (every one idle between generations)
        job = jobs.job(base)
        self.iterations, self.step = job.run.iterations, interval(settings, job.run.iterations, job.run.eval_every)

    def run(self) -> None:
        generation, members, snapshots = self._load() or (0, self._sample(), {})
        ends = list(range(self.step, self.iterations, self.step)) + [self.iterations]
        for until in ends[generation:-1]:
            snapshots = self._generation(members, snapshots, until)
            generation += 1
            self._exploit(members, snapshots, generation)
            self._store(generation, members, snapshots)
        if generation < len(ends):
            self._generation(members, snapshots, self.iterations)
            self._store(len(ends), members, {})

    def left(self) -> int:
        """Members to end: all of them, less those whose runs failed before an interruption."""
        loaded = self._load()
        return sum(m.status == "training" for m in loaded[1]) if loaded else self.settings.num_samples

    def write(self, always: bool = False) -> None:
        """Nothing waits to be written: a PBT search saves its runs as they end."""

    def configurations(self) -> list[Configuration]:
        return [self._configuration(m) for m in self._load()[1]]

    def _configuration(self, m: Member) -> Configuration:
        return Configuration(f"member {m.name}", m.params, m.status, m.curve, self.runs(m), m.error, m.lost)

    def runs(self, member: Member) -> list[str]:
        """Its runs' ids, one per seed: its knobs change as it trains, so a run is named by the
        search's base configuration, the search's seed, its member and its seed."""
        base = {k: v for k, v in jobs.job(self.base).identity().items() if k != "seed"}
        named = ({"base": base, "search_seed": self.settings.seed, "member": member.name, "seed": seed}
                 for seed in range(self.settings.seeds))
        texts = (json.dumps(n, sort_keys=True, default=str) for n in named)
        return [hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts]

    def _sample(self) -> list[Member]:
        rng = np.random.default_rng([self.settings.seed, 0])
        return [Member(str(i), {key: dim.sample(rng) for key, dim in self.dims.items()}, [])
                for i in range(self.settings.num_samples)]

    def _jobs(self, member: Member) -> list:
        seeded = seed_jobs(self.base, member.params, self.settings.seeds)
        return [replace(job, run_id=run) for job, run in zip(seeded, self.runs(member))]

    def _generation(self, members: list[Member], snapshots: dict, until: int) -> dict:
        """Every living member trained to `until`; their new snapshots."""
        waiting = [i for i, m in enumerate(members) if m.status == "training"]
        idle, busy, after = list(self.workers), {}, {}
        while waiting or busy:
            grown = self.pool.grow()
            self.workers += grown
            idle += grown
            while idle and waiting:
                index = waiting.pop(0)
                member = members[index]
                busy[idle[0]] = index
                task = Task(index, self._jobs(member), self.settings.objective, until=until,
                            member=member.name, starts=snapshots.get(member.name))
                self.pool.send(idle.pop(0), ("start", task))
            for worker, done in self.pool.answers_ready(timeout=1.0):
                member = members[busy.pop(worker)]
                if isinstance(done, Lost):  # the worker is not used again; the member failed
                    self.workers.remove(worker)
                    self._lost(member, done.error, len(busy))
                    continue
                idle.append(worker)
                member.curve += [[iteration, values] for iteration, values in done.curve]
                if done.results:  # its runs ended: the last generation, or they failed
                    self.save(done.results)
                    member.status = done.status
                    self.progress(self._configuration(member), done.busy, len(busy))
                else:
                    after[member.name] = done.snapshots
        return after

    def _lost(self, member: Member, error: str, running: int) -> None:
        """A member whose worker died: its runs saved as failed (the next search trains them again)."""
        self.save(lost_runs(self._jobs(member), error))
        member.status, member.error, member.lost = "failed", error, True
        self.progress(self._configuration(member), 0.0, running)

    def _exploit(self, members: list[Member], snapshots: dict, generation: int) -> None:
        rng = np.random.default_rng([self.settings.seed, generation])
        living = [m for m in members if m.status == "training"]
        ranked = sorted(living, key=lambda m: (-self.settings.aggregated(m.curve[-1][1]), int(m.name)))
        count = max(1, int(len(ranked) * QUANTILE)) if len(ranked) > 1 else 0
        for member in ranked[len(ranked) - count:]:
            donor = ranked[int(rng.integers(count))]
            snapshots[member.name] = snapshots[donor.name]
            member.curve = [list(point) for point in donor.curve]
            member.params = {key: dim.perturb(donor.params[key], rng) for key, dim in self.dims.items()}

    def _store(self, generation: int, members: list[Member], snapshots: dict) -> None:
        """The population after `generation` generations, for a resumed search: snapshots first,
        then state.json (renamed into place) naming their folder, then older folders removed."""
        folder = self.folder / f"g{generation:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, states in snapshots.items():
            for seed, state in enumerate(states):
                (folder / f"{name}-{seed}.npz").write_bytes(state)
        text = json.dumps({"generation": generation, "members": [asdict(m) for m in members]})
        write_atomic(self.folder / "state.json", text.encode())
        for old in self.folder.glob("g*"):
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)

    def _load(self):
        """(generation, members, snapshots) of an interrupted search, or None."""
        path = self.folder / "state.json"
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        folder = self.folder / f"g{state['generation']:04d}"
        members = [Member(**m) for m in state["members"]]
        snapshots = {m.name: [(folder / f"{m.name}-{seed}.npz").read_bytes() for seed in range(self.settings.seeds)]
                     for m in members if m.status == "training"}
        return state["generation"], members, snapshots
