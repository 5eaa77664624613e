"""The search's samplers (`hydra.sweeper.search`) by name: how a trial's configuration is drawn.
lab.search.study builds one for every trial, seeded by the search's seed and the trial's number.
Adding a sampler means writing its entry here; Optuna (the search extra) is imported only when
one is built."""

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Sampler:
    """One search sampler as the lab sees it."""

    name: str
    """the value of hydra.sweeper.search"""
    description: str
    """what it does, in a few words (the knob reference lists it)"""
    build: Callable
    """seed -> its Optuna sampler"""


def _random(seed: int):
    from optuna.samplers import RandomSampler  # the search extra, optional: imported only to build a sampler

    return RandomSampler(seed=seed)


def _tpe(seed: int):
    from optuna.samplers import TPESampler  # the search extra, optional: imported only to build a sampler

    return TPESampler(seed=seed)


SAMPLERS = {s.name: s for s in (
    Sampler("random", "uniform draws over the space, log-uniform on a log scale", _random),
    Sampler("tpe", "Optuna's TPE sampler, which learns from the trials that ended", _tpe),
)}
"""Every sampler by name, in the order the knob reference and the settings' check list them"""
