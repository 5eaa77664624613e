"""The search space: Hydra's override grammar read as Hydra's Optuna sweeper reads it (`space`),
its keys resolved against the searched algorithm's knobs (`resolve`), and every configuration it
can produce validated before anything starts (`validate`: each knob at every extreme value).
"""

import sys
import typing
from dataclasses import dataclass

import numpy as np
from hydra.core.override_parser.types import ChoiceSweep, Glob, IntervalSweep, RangeSweep, Transformer
from omegaconf import OmegaConf

from lab.config import jobs
from lab.knobs import ConfigError, RunConfig
from lab.search.settings import OBJECTIVES, SearchSettings

GRAMMAR = ("interval(a,b), tag(log,interval(a,b)), choice(x,y,...), range(start,stop[,step]), "
           "a comma list x,y,... or a plain value")
"""What a search-space override may be (said by every grammar error)"""
ALIASES = {"epsilon_decay": ("epsilon_decay_per_game", "epsilon_decay_per_update")}
"""Search keys that stand for the knob of the same meaning that the searched algorithm has
(q_table decays epsilon per game, mc_vfa per update)"""
GROUPS = ("algorithm", "opponent", "net", "members", "sweeps")
RESAMPLE = 0.25
"""PBT's explore draws a knob afresh with this probability, else nudges it (`Dimension.perturb`)"""


@dataclass(frozen=True)
class Dimension:
    """One searched knob."""

    kind: str
    """'interval' or 'choice'"""
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    values: tuple = ()

    def sample(self, rng: np.random.Generator):
        """A value drawn uniformly (log-uniformly on a log scale)."""
        if self.kind == "choice":
            return self.values[rng.integers(len(self.values))]
        if self.log:
            return self.within(np.exp(rng.uniform(np.log(self.low), np.log(self.high))))
        return self.within(rng.uniform(self.low, self.high))

    def perturb(self, value, rng: np.random.Generator):
        """PBT's explore: a fresh draw (probability RESAMPLE), else the value x0.8 or x1.2 (a
        neighbouring choice), kept inside the searched interval."""
        if rng.random() < RESAMPLE:
            return self.sample(rng)
        if self.kind == "choice":
            index = self.values.index(value) + (1 if rng.random() < 0.5 else -1)
            return self.values[min(max(index, 0), len(self.values) - 1)]
        return self.within(value * (0.8 if rng.random() < 0.5 else 1.2))

    def within(self, value):
        """An interval's value clipped to it (rounded for an integer knob)."""
        value = min(max(value, self.low), self.high)
        return int(round(value)) if self.integer else float(value)


def _not_allowed(override, why: str) -> ConfigError:
    return ConfigError(f"{override.input_line} is not allowed: {why}; a search space takes {GRAMMAR}")


def space(overrides, later=()) -> tuple[list[str], dict[str, Dimension]]:
    """Hydra Override objects -> (the fixed overrides as strings, the searched knobs as
    Dimensions); one in `later` (the command line) replaces one of `overrides` (a named search's
    hydra.sweeper.params) of the same key. Anything else is a one-line ConfigError."""
    replaced = {o.get_key_element() for o in later}
    overrides = [o for o in overrides if o.get_key_element() not in replaced] + list(later)
    fixed, dims = [], {}
    for override in overrides:
        key = override.get_key_element()
        if key == "seed":
            raise ConfigError(f"{override.input_line} is not allowed: a search does not choose seeds, it trains "
                              "every configuration on seeds 0..K-1 and aggregates them (hydra.sweeper.seeds=K, "
                              "hydra.sweeper.aggregate=mean|median|iqm)")
        if not override.is_sweep_override():
            fixed.append(override.input_line)
            continue
        if override.is_hydra_override() or override.key_or_group in GROUPS or "/" in key \
                or override.is_add() or override.is_delete() or override.is_force_add():
            raise _not_allowed(override, "a search varies knobs (key=...), not config groups, added or "
                                         "deleted keys or Hydra's settings: fix those and search knobs")
        if key in dims:
            raise _not_allowed(override, f"{key} is searched twice")
        value = override.value()
        tags = set(getattr(value, "tags", None) or ())
        if isinstance(value, Glob):
            raise _not_allowed(override, "glob() selects config files, not knob values")
        if tags - {"log"}:
            raise _not_allowed(override, f"the only tag a search knows is log (not {', '.join(sorted(tags - {'log'}))})")
        if isinstance(value, IntervalSweep):
            log = "log" in tags
            if not value.start < value.end or (log and value.start <= 0):
                raise _not_allowed(override, "an interval needs low < high (and low > 0 on a log scale)")
            dims[key] = Dimension("interval", value.start, value.end, log=log)
        elif isinstance(value, (ChoiceSweep, RangeSweep)):
            if tags:
                raise _not_allowed(override, "tag(log, ...) goes with interval(a,b) only")
            # Hydra's encode gives strings for strings: read back as plain values
            values = tuple(OmegaConf.create({"v": v})["v"] if isinstance(v, str) else v
                           for v in override.sweep_iterator(transformer=Transformer.encode))
            if not values:
                raise _not_allowed(override, "it gives no value")
            dims[key] = Dimension("choice", values=values)
        else:
            raise _not_allowed(override, f"{type(value).__name__} is not a search dimension")
    return fixed, dims


def resolve_objective(settings: SearchSettings, base: dict) -> None:
    """objective=opponent: the fixed opponent the trials train against (named searches use it,
    so that `opponent=random` on the command line also changes what the search maximises)."""
    if settings.objective == "opponent":
        if base.get("opponent") not in OBJECTIVES:
            raise ConfigError(f"hydra.sweeper.objective=opponent is not allowed with opponent={base.get('opponent')}: "
                              f"it needs opponent {' or '.join(OBJECTIVES)}; set hydra.sweeper.objective="
                              f"{' or '.join(OBJECTIVES)}")
        settings.objective = base["opponent"]


def resolve(base: dict, dims: dict[str, Dimension]) -> dict[str, Dimension]:
    """The dimensions as the searched algorithm's knobs: aliases (ALIASES) replaced by its knob,
    intervals of integer knobs made integer. ConfigError when a key is not a knob it uses."""
    algorithm = jobs.job(base).algorithm
    hints = {**typing.get_type_hints(RunConfig), **typing.get_type_hints(algorithm.Config)}
    uses = [k for k in jobs.RUN_KEYS if k not in ("eval_every", "seed")] + list(algorithm.Config.names())
    out = {}
    for key, dim in dims.items():
        if key in ALIASES:
            targets = [k for k in ALIASES[key] if k in uses]
            if not targets:
                raise ConfigError(f"{key} is not a knob algorithm={base.get('algorithm')} uses: it stands for "
                                  f"{' or '.join(ALIASES[key])}, and {base.get('algorithm')} has neither")
            print(f"searching {key} as {targets[0]} (algorithm={base.get('algorithm')})", file=sys.stderr)
            key = targets[0]
        if key not in uses:
            raise ConfigError(f"{key} is not a knob algorithm={base.get('algorithm')} uses: searching it "
                              f"changes nothing (its knobs: {', '.join(sorted(uses))})")
        if key in out:
            raise ConfigError(f"{key} is searched twice")
        if dim.kind == "interval" and hints.get(key) not in NUMBERS:
            raise ConfigError(f"{key}=interval({dim.low:g},{dim.high:g}) is not allowed: {_rule(base, key)}; "
                              f"a search takes its values as choice(a,b)")
        if dim.kind == "interval" and hints.get(key) in (int, int | None):
            low, high = int(np.ceil(dim.low)), int(np.floor(dim.high))
            if not low < high:
                raise ConfigError(f"{key}=interval({dim.low:g},{dim.high:g}) is not allowed: {key} is an "
                                  "integer, and the interval holds fewer than two integers")
            dim = Dimension("interval", low, high, log=dim.log, integer=True)
        out[key] = dim
    return out


NUMBERS = (int, float, int | None, float | None)
"""The knob types an interval can be drawn for"""


def _rule(base: dict, key: str) -> str:
    """What a knob allows, in the words a grid uses ("memory must be 'clear' or 'keep'")."""
    try:
        jobs.job({**base, key: "\0"})  # no knob allows this value
    except ConfigError as exc:
        return str(exc).split(": ", 1)[-1]
    return f"{key} is not a number"


def validate(base: dict, dims: dict[str, Dimension]) -> None:
    """Every searched knob (resolved) at every extreme value, the others at the base's:
    ConfigError names the first knob and value the lab cannot run."""
    jobs.job(base)
    for key, dim in dims.items():
        for value in (dim.low, dim.high) if dim.kind == "interval" else dim.values:
            jobs.job({**base, key: value})
