"""A search's settings, `hydra.sweeper.*` of `hydra/sweeper=search`, defined once: the lab's Hydra
plugins build both sweepers' configs from `SearchSettings` (the search sweeper's with these defaults,
the grid sweeper's with every field optional, so that a named search in sweeps/ can set them),
and lab.search reads them back into it."""

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from lab.cli import did_you_mean
from lab.knobs import ConfigError
from lab.search.samplers import SAMPLERS
from lab.search.schedulers import SCHEDULERS

OBJECTIVES = ("random", "onestep")
AGGREGATES = ("mean", "median", "iqm")


def either(names) -> str:
    """Names as a sentence lists the choices: "a, b or c"."""
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


@dataclass
class SearchSettings:
    num_samples: int = 8
    """trials: configurations, each trained on `seeds` seeds"""
    search: str = "random"
    """how a trial's configuration is drawn (lab.search.samplers)"""
    scheduler: str = "none"
    """what stops configurations early, or drives the search (lab.search.schedulers)"""
    objective: str = "random"
    """exact win - loss of the greedy agent against random or onestep, in its seat (the mean of
    both in self-play); opponent: the fixed opponent the trials train against"""
    seeds: int = 1
    """training seeds per configuration: seeds 0..seeds-1, each a run of its own"""
    aggregate: str = "mean"
    """how a configuration's objective at an evaluation point comes from its seeds': mean, median
    or iqm (the interquartile mean: the mean of the middle half)"""
    seed: int = 0
    """seeds the search itself: the same seed gives the same trials"""
    grace_period: Optional[int] = None
    """successive halving: iterations every configuration trains before it can be stopped; null:
    about iterations / 9"""
    reduction_factor: int = 3
    """successive halving: about 1 in this many configurations goes on at each rung"""
    max_concurrent: Optional[int] = None
    """trials training at once; null: one per core (on a cluster, one per CPU)"""
    perturbation_interval: Optional[int] = None
    """pbt: iterations between two exploit/explore steps, a multiple of eval_every; null: the
    multiple of eval_every nearest iterations / 10"""
    storage: Optional[str] = None
    """where Optuna keeps the search: null, a journal file in results_dir/_search; or any Optuna
    storage URL (sqlite:///search.db, postgresql://..., mysql://...)"""

    def check(self) -> None:
        """ConfigError naming the first setting that is not allowed."""
        def need(ok, key, allowed, choices=()):
            if not ok:
                near = did_you_mean(str(getattr(self, key)), choices)
                raise ConfigError(f"hydra.sweeper.{key}={getattr(self, key)!r} is not allowed{near}: {key} must be "
                                  f"{allowed}")

        def count(value, least=1, optional=False):
            return (optional and value is None) or (isinstance(value, int) and not isinstance(value, bool)
                                                    and value >= least)

        need(count(self.num_samples), "num_samples", "a positive integer")
        need(self.search in SAMPLERS, "search", either(SAMPLERS), SAMPLERS)
        need(self.scheduler in SCHEDULERS, "scheduler", either(SCHEDULERS), SCHEDULERS)
        need(self.objective in OBJECTIVES + ("opponent",), "objective",
             " or ".join(OBJECTIVES) + ", or opponent (the one the trials train against)", OBJECTIVES + ("opponent",))
        need(count(self.seeds), "seeds", "a positive integer (each configuration trains on seeds 0..seeds-1)")
        need(self.aggregate in AGGREGATES, "aggregate", either(AGGREGATES), AGGREGATES)
        need(count(self.seed, least=0), "seed", "a non-negative integer")
        need(count(self.grace_period, optional=True), "grace_period", "a positive number of iterations or null")
        need(count(self.reduction_factor, least=2), "reduction_factor", "an integer of at least 2")
        need(count(self.max_concurrent, optional=True), "max_concurrent", "a positive integer or null")
        need(count(self.perturbation_interval, optional=True), "perturbation_interval",
             "a positive number of iterations or null")
        need(self.storage is None or (isinstance(self.storage, str) and "://" in self.storage), "storage",
             "null (a journal file in results_dir/_search) or an Optuna storage URL such as sqlite:///search.db")
        need(self.search == "random" or not SCHEDULERS[self.scheduler].drives_population, "search",
             f"random with scheduler={self.scheduler} (it samples its population itself)")

    def aggregated(self, values) -> float:
        """A configuration's objective from its seeds' (`aggregate`)."""
        values = np.sort(np.asarray(values, dtype=float))
        if self.aggregate == "median":
            return float(np.median(values))
        if self.aggregate == "iqm":  # the middle half: a quarter cut off each end (none below 4 seeds)
            cut = math.floor(len(values) / 4)
            values = values[cut:len(values) - cut]
        return float(np.mean(values))
