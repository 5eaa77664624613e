"""What a run is: its knobs, their validation, and its identity.

A run's configuration is flat (the keys of conf/config.yaml plus the knobs of its algorithm's
yaml). Knobs every run has are checked here; each algorithm's own knobs are the fields of its
`Config` dataclass, checked by `Knobs.__post_init__`. A knob the algorithm does not use is not part
of the run's identity, so a grid that varies it does not train the same run twice.
"""

import dataclasses
import hashlib
import json
import os
import typing
from dataclasses import dataclass
from pathlib import Path


class ConfigError(ValueError):
    """A knob has a value the lab cannot run; the message names the key and what is allowed."""


def require(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} is not allowed: {key} must be {allowed}")


def _is(value, kind) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


SHARED_RULES = {
    "layers": (lambda v: v >= 1, "a positive integer"),
    "neurons": (lambda v: v >= 1, "a positive integer"),
    "alpha": (lambda v: 0 < v <= 1, "in (0, 1]"),
}
"""The rules of the shared knobs, the same in every algorithm that uses them."""


class Knobs:
    """Base of every algorithm's Config: checks each field's type and the shared knobs' rules,
    then the algorithm's own rules."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            kind = typing.get_type_hints(type(self))[f.name]
            require(_is(value, kind), f.name, value, _KIND_NAMES[kind])
            if f.name in SHARED_RULES:
                ok, allowed = SHARED_RULES[f.name]
                require(ok(value), f.name, value, allowed)
        self.check()

    def check(self) -> None:
        """Algorithm-specific rules; raise ConfigError through `require`."""


@dataclass(frozen=True)
class RunConfig:
    """The knobs every run has, whatever its algorithm."""

    algorithm: str
    """which learner trains the agent (one of lab.agents.ALGORITHMS)"""
    opponent: str
    """who the agent trains against: random, onestep, block, perfect, or self (self-play)"""
    player: int | None
    """the agent's seat: 1 = X (moves first), 2 = O; None in self-play, where it plays both"""
    episodes_per_update: int
    """training episodes (games) between two updates"""
    iterations: int
    """number of updates; total episodes = episodes_per_update x iterations"""
    seed: int
    """seeds every random stream of the run"""
    eval_every: int
    """exact evaluation of the greedy agent every this many iterations (and at the last)"""


RUN_KEYS = tuple(f.name for f in dataclasses.fields(RunConfig))
SETTINGS = ("results_dir", "force")
"""Keys that steer where and whether a run happens, never what it computes."""


def default_eval_every(iterations: int) -> int:
    """About 50 evaluation points per learning curve."""
    return max(1, iterations // 50)


def parse(cfg) -> tuple[RunConfig, Knobs]:
    """Validate a flat configuration (mapping) into the run's knobs and its algorithm's knobs.

    Raises ConfigError naming the first bad key and what it allows.
    """
    from lab import agents, opponents

    cfg = dict(cfg)
    known = set(RUN_KEYS + SETTINGS).union(*(
        (f.name for f in dataclasses.fields(agents.module(name).Config)) for name in agents.ALGORITHMS))
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise ConfigError(f"{unknown[0]!r} is not a knob of the lab: the knobs are {', '.join(sorted(known))}")
    algorithm = cfg.get("algorithm")
    require(algorithm in agents.ALGORITHMS, "algorithm", algorithm, f"one of {', '.join(agents.ALGORITHMS)}")
    module = agents.module(algorithm)
    allowed_opponents = opponents.NAMES + (("self",) if module.SELF_PLAY else ())
    require(cfg.get("opponent") in allowed_opponents, "opponent", cfg.get("opponent"),
            f"one of {', '.join(allowed_opponents)} for algorithm={algorithm}")
    require(cfg.get("player") in (1, 2) and _is(cfg.get("player"), int), "player", cfg.get("player"),
            "1 (X, moves first) or 2 (O)")
    for key in ("episodes_per_update", "iterations"):
        require(_is(cfg.get(key), int) and cfg[key] >= 1, key, cfg.get(key), "a positive integer")
    require(_is(cfg.get("seed"), int) and cfg["seed"] >= 0, "seed", cfg.get("seed"), "a non-negative integer")
    eval_every = cfg.get("eval_every")
    if eval_every is None:
        eval_every = default_eval_every(cfg["iterations"])
    require(_is(eval_every, int) and eval_every >= 1, "eval_every", eval_every,
            "a positive integer, or null for about 50 evaluations per run")
    # A self-play agent plays both seats: the seat knob does not change the run.
    player = None if cfg["opponent"] == "self" else cfg["player"]
    run = RunConfig(**{k: cfg.get(k) for k in RUN_KEYS if k not in ("player", "eval_every")},
                    player=player, eval_every=eval_every)
    names = [f.name for f in dataclasses.fields(module.Config)]
    missing = [n for n in names if n not in cfg]
    if missing:
        raise ConfigError(f"algorithm={algorithm} needs the knobs {', '.join(missing)}")
    return run, module.Config(**{n: cfg[n] for n in names})


def check_settings(cfg) -> tuple[Path, bool]:
    """Validate where and whether a run happens: (absolute results_dir, force).

    A relative results_dir is taken from the directory the sweep is launched from. Under `ray job
    submit` that directory is a temporary copy of --working-dir on the head node, deleted with the
    job's runtime environment, so there results_dir must be absolute.
    """
    force = cfg.get("force", False)
    require(isinstance(force, bool), "force", force, "true or false")
    raw = cfg.get("results_dir")
    require(isinstance(raw, str) and raw.strip() != "", "results_dir", raw, "a directory path")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        in_ray_job = "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ  # set by Ray for a submitted job's driver
        require(not in_ray_job, "results_dir", raw,
                "an absolute path under `ray job submit` (the driver runs in a temporary copy of "
                "--working-dir; use a path on the head node or on shared storage)")
    path = Path(os.path.abspath(path))
    existing = next(p for p in (path, *path.parents) if p.exists())
    require(existing.is_dir(), "results_dir", raw, f"a directory ({existing} is a file)")
    return path, force


def identity(run: RunConfig, knobs: Knobs) -> dict:
    """Everything that determines what a run computes, and nothing else."""
    return {**dataclasses.asdict(run), **dataclasses.asdict(knobs)}


def run_id(run: RunConfig, knobs: Knobs) -> str:
    """A short stable hash of the run's identity: equal configurations share one id."""
    text = json.dumps(identity(run, knobs), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compose(*overrides: str) -> dict:
    """The flat configuration Hydra would build for these overrides (for tests and notebooks)."""
    from hydra import compose as hydra_compose, initialize_config_dir

    from lab.sweep import CONF_DIR, knobs

    with initialize_config_dir(version_base="1.3", config_dir=str(CONF_DIR)):
        return knobs(hydra_compose("config", overrides=list(overrides)))
