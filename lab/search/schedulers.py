"""The search's schedulers (`hydra.sweeper.scheduler`) by name: what stops a configuration early.
An entry builds its Optuna pruner and names the evaluation points where it may decide; pbt drives
its own population (lab.search.pbt). Adding a scheduler means writing its entry here. Optuna (the
search extra) is imported only to build a pruner."""

import warnings
from dataclasses import dataclass
from typing import Callable


def grace_period(settings, iterations: int, eval_every: int) -> int:
    """Iterations before successive halving can stop a configuration."""
    return settings.grace_period or max(eval_every, iterations // 9)


def rungs(settings, iterations: int, eval_every: int) -> tuple:
    """The first evaluation point at or after each rung of successive halving (every bracket's, for
    Hyperband), at grace_period x reduction_factor^k iterations, but the last: sent only these, the
    pruner decides as seeing every one."""
    points, step = set(), grace_period(settings, iterations, eval_every)
    while step < iterations:
        points.add(min(-(-step // eval_every) * eval_every, iterations))
        step *= settings.reduction_factor
    return tuple(sorted(points - {iterations}))


@dataclass(frozen=True)
class Scheduler:
    name: str
    """the value of hydra.sweeper.scheduler"""
    description: str
    """what it does, in a few words (the knob reference lists it)"""
    pruner: Callable | None
    """(settings, iterations, eval_every) -> its Optuna pruner; None: it drives its own population"""
    decisions: Callable = lambda settings, iterations, eval_every: ()
    """(settings, iterations, eval_every) -> the evaluation points where its pruner may decide"""

    @property
    def drives_population(self) -> bool:
        """It trains a population itself (lab.search.pbt), not trials asked of an Optuna study."""
        return self.pruner is None


def _optuna():
    import optuna  # the search extra, optional: imported only to build a pruner

    return optuna


def _successive_halving(settings, iterations: int, eval_every: int):
    pruners = _optuna().pruners
    return pruners.SuccessiveHalvingPruner(min_resource=grace_period(settings, iterations, eval_every),
                                           reduction_factor=settings.reduction_factor)


def _hyperband(settings, iterations: int, eval_every: int):
    pruners = _optuna().pruners
    return pruners.HyperbandPruner(min_resource=grace_period(settings, iterations, eval_every),
                                   max_resource=iterations, reduction_factor=settings.reduction_factor)


PATIENCE = 2
"""patient_asha: evaluation points a configuration's objective may go without improving before
successive halving may stop it"""


def _patient_successive_halving(settings, iterations: int, eval_every: int):
    """Successive halving asked only once patience ran out: its rungs hold only such configurations."""
    optuna = _optuna()
    with warnings.catch_warnings():  # experimental in Optuna: tests/test_search_patient_asha.py pins it
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.pruners.PatientPruner(_successive_halving(settings, iterations, eval_every), PATIENCE)


SCHEDULERS = {s.name: s for s in (
    Scheduler("none", "every configuration trains in full",
              lambda settings, iterations, eval_every: _optuna().pruners.NopPruner()),
    Scheduler("asha", "successive halving: stop hopeless configurations early", _successive_halving, rungs),
    Scheduler("hyperband", "Optuna's Hyperband over successive halving brackets", _hyperband, rungs),
    # its patience counts evaluation points, so the pruner hears of every one but the last (the end)
    Scheduler("patient_asha", f"Optuna's PatientPruner around successive halving: it stops a configuration "
              f"only once its objective has not improved for {PATIENCE} evaluation points",
              _patient_successive_halving,
              lambda settings, iterations, eval_every: tuple(range(eval_every, iterations, eval_every))),
    Scheduler("pbt", "population-based training", None),
)}
"""Every scheduler by name, in the order the knob reference and the settings' check list them"""


def title(settings) -> str:
    """How a search is driven, in words (its dry run, its figure, its report)."""
    scheduler = SCHEDULERS[settings.scheduler]
    if scheduler.drives_population:  # no sampler: it samples its population itself
        return scheduler.description
    return f"{settings.search} search, scheduler {scheduler.name}"
