"""A search's outcome: what each configuration did, the best one as a config file ready to train
again (results_dir/_search/best.yaml), and the record of its trials the analysis reads
(results_dir/_search/trials.json, lab.results.search_record)."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from lab import files, results
from lab.cli import plural
from lab.config import jobs
from lab.results import search_record
from lab.search import schedulers
from lab.search.settings import SearchSettings

BEST = "best.yaml"


@dataclass
class Configuration:
    """One trial of a search: a configuration trained on its seeds."""

    name: str
    """'trial N' (Optuna's trial number) or 'member N' (PBT)"""
    params: dict
    """its searched knobs (a PBT member's last ones)"""
    status: str
    """finished, stopped or failed"""
    curve: list
    """[iteration, [the objective of each seed]] at every evaluation point"""
    runs: list[str]
    """its runs' ids, one per seed"""
    error: str | None = None
    """why it failed (the first line of its first error)"""
    lost: bool = False
    """it failed because its worker died (a fault of the machine, not of the configuration)"""

    def objective(self, settings: SearchSettings) -> float | None:
        """Its aggregated objective at its last evaluation point."""
        return settings.aggregated(self.curve[-1][1]) if self.curve else None


def _episodes(base: dict, configuration: Configuration, seeds: int) -> int:
    per_update = configuration.params.get("episodes_per_update", base["episodes_per_update"])
    return (configuration.curve[-1][0] if configuration.curve else 0) * per_update * seeds


def finish(configurations: list[Configuration], base: dict, settings: SearchSettings,
           results_dir: Path) -> int:
    """Print how the search went and its best configuration, write best.yaml. The exit status: 0
    when the search completed, failed trials or not (a diverged network is an outcome); 1 when
    none finished or a worker died."""
    counts = {s: sum(c.status == s for c in configurations) for s in ("finished", "stopped", "failed")}
    episodes = sum(_episodes(base, c, settings.seeds) for c in configurations)
    print(f"{plural(len(configurations), 'trial')}: {counts['finished']} finished, {counts['stopped']} stopped early, "
          f"{counts['failed']} failed; {episodes:,} training episodes in all")
    for line in failures(configurations):
        print(line)
    ranked = rank(configurations, settings)
    if not ranked:
        print("no trial finished: no best configuration", file=sys.stderr)
        return 1
    best = ranked[0]
    again = write_best(best, base, settings, results_dir)
    seeds = f", {settings.aggregate} of {settings.seeds} seeds" if settings.seeds > 1 else ""
    print(f"best: objective {best.objective(settings):.4f} (exact {settings.objective} win - loss{seeds}), {best.name}")
    print("  " + again)
    print(f"best configuration in {results_dir / results.SEARCH / BEST}")
    return 1 if any(c.lost for c in configurations) else 0


def failures(configurations: list[Configuration]) -> list[str]:
    """One line per reason trials failed: how many, the reason, the first of them."""
    failed = {}
    for c in configurations:
        if c.status == "failed":
            failed.setdefault(c.error or "no reason recorded", []).append(c.name)
    return [f"{plural(len(names), 'trial')} failed: {reason} (first: {names[0]})"
            for reason, names in failed.items()]


def rank(configurations: list[Configuration], settings: SearchSettings) -> list[Configuration]:
    """The finished configurations, best first (ties: the earlier trial)."""
    finished = [c for c in configurations if c.status == "finished" and c.curve]
    return sorted(finished, key=lambda c: (-c.objective(settings), int(c.name.split()[-1])))


def write_best(best: Configuration, base: dict, settings: SearchSettings, results_dir: Path) -> str:
    """results_dir/_search/best.yaml: the best configuration, with no seed (it was trained on
    seeds 0..seeds-1), as a config file for `+_search=best`; returns its override line."""
    job = jobs.job({**base, **best.params})
    derived = ("eval_every",) if base.get("eval_every") is None else ()  # else set as the search set it
    knobs = {k: v for k, v in job.identity().items() if k not in ("seed", *derived) and v is not None}
    # a knob the identity leaves out at its old value is still set: a matchup file may change it
    knobs.update({k: getattr(job.knobs, k) for k in job.knobs.ADDED})
    groups = {k: knobs.pop(k) for k in ("algorithm", "opponent")}
    again = " ".join(f"{k}={v}" for k, v in {**groups, **knobs}.items())
    values = ", ".join(f"{v:.4f}" for v in best.curve[-1][1])
    seeds = settings.seeds
    over = f"{settings.aggregate} of seeds 0..{seeds - 1}" if seeds > 1 else "seed 0"
    lines = ["# @package _global_",
             f"# The best configuration of the search in {results_dir} ({best.name}; runs {', '.join(best.runs)}):",
             f"# exact {settings.objective} win - loss {best.objective(settings):.4f} after "
             f"{_episodes(base, best, 1):,} episodes ({over}: {values}).",
             f"# Use it: python -m lab.sweep --config-dir {results_dir} +{results.SEARCH}=best [results_dir=...]",
             *([f"#   its {seeds} seeds: python -m lab.sweep --multirun --config-dir {results_dir} "
                f"+{results.SEARCH}=best 'seed=range(0,{seeds})'"] if seeds > 1 else []),
             f"# or:     python -m lab.sweep {again}",
             "defaults:"]
    lines += [f"  - override /{k}: {v}" for k, v in groups.items()]
    lines += [f"{k}: {json.dumps(v)}" for k, v in knobs.items()]
    folder = results_dir / results.SEARCH
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BEST).write_text("\n".join(lines) + "\n")
    return again


def records(configurations: list[Configuration], settings: SearchSettings) -> list[dict]:
    """Each configuration as lab.results.search_record keeps it: its fields, its objective at every
    evaluation point aggregated over its seeds (`aggregated`), its last (`objective`), and its rank
    among the finished ones (1 = best; None for the others)."""
    ranks = {c.name: place for place, c in enumerate(rank(configurations, settings), 1)}
    return [{**vars(c), "aggregated": [settings.aggregated(seeds) for _, seeds in c.curve],
             "objective": c.objective(settings), "rank": ranks.get(c.name)} for c in configurations]


def record(configurations: list[Configuration], settings: SearchSettings, results_dir: Path) -> None:
    """results_dir/_search/trials.json, replaced whole, encoded a record at a time: one string of a
    thousand trials' curves would raise the driver's peak memory by a few times the file's size."""
    def write(f):
        f.write(b'{"title": ' + json.dumps(schedulers.title(settings)).encode() + b', "configurations": [')
        for i, trial in enumerate(records(configurations, settings)):
            f.write(b", " * bool(i) + json.dumps(trial).encode())
        f.write(b"]}")

    files.write_atomic(results_dir / results.SEARCH / search_record.TRIALS, write)
