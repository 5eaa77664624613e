"""The search's samplers (`hydra.sweeper.search`) by name: how a trial's configuration is drawn
(lab.search.study.sampler). Adding a sampler means writing its entry here."""

from typing import NamedTuple


class Sampler(NamedTuple):
    name: str
    """the value of hydra.sweeper.search"""
    description: str
    """what it does, in a few words (the knob reference lists it)"""
    optuna: str
    """its class in optuna.samplers, built with a seed"""


SAMPLERS = {s.name: s for s in (
    Sampler("random", "uniform draws over the space, log-uniform on a log scale", "RandomSampler"),
    Sampler("tpe", "Optuna's TPE sampler, which learns from the trials that ended", "TPESampler"),
)}
"""Every sampler by name, in the order the knob reference and the settings' check list them"""
