"""What a run is: a flat configuration (conf/config.yaml's keys and its algorithm's knobs) made
once into a `Job` (`job`): its validated knobs, its run id and its results directory, which
everything downstream takes. A knob its algorithm does not use is not part of its identity.
"""

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab import agents, game, stats
from lab.game import bitboards, bots, opponents, solver
from lab.cli import did_you_mean
from lab.knobs import RUN_KEYS, SETTINGS, TTT, ConfigError, Knobs, RunConfig, is_kind, require

GAME_KEYS = ("m", "n", "k", "mcts_simulations", "eval_games")
"""The run knobs bigger boards brought: a 3x3 run's `identity` leaves them out"""


def checkpoint_opponent(value: str, player, shape: tuple) -> str:
    """Validate `opponent=PATH.npz`: a lab checkpoint of an agent on the run's board `shape` that
    moves at every position (3x3's move table is checked; a bigger board's agent must play frozen)
    and, if it was trained in one seat, takes the other seat than the learner's. Returns its
    absolute path (the run's opponent, also on Ray workers)."""
    path = os.path.abspath(os.path.expanduser(value))
    require(os.path.isfile(path), "opponent", value,
            f"a fixed opponent or a checkpoint file that exists ({path} does not)")
    try:
        agent = agents.load(path)
    except (ValueError, OSError) as refused:  # each names the file and what is wrong with it
        raise ConfigError(f"opponent={value!r} is not allowed: {refused}") from None
    try:
        game_played = agents.game_of(agent)
        require(game_played == shape, "opponent", value, f"a checkpoint of an agent on this board, "
                f"m, n, k = {shape} ({path}'s plays m, n, k = {game_played})")
        if shape == TTT:
            moves = agent.move_table()
        else:  # what the learner will play: NotImplementedError from an agent that cannot be frozen
            agent.frozen()
            moves = None
    except ConfigError:
        raise
    except NotImplementedError as refused:
        raise ConfigError(f"opponent={value!r} is not allowed: {refused}") from None
    except Exception as exc:  # noqa: BLE001 - a foreign or damaged file, whatever its fault
        raise ConfigError(f"opponent={value!r} is not allowed: {path} is not a lab checkpoint "
                          f"({type(exc).__name__}: {exc})") from None
    require(moves is None or bool(np.all(np.abs(moves[game.DECISIONS].sum(axis=1) - 1) < 1e-9)), "opponent",
            value, f"a checkpoint whose agent moves at every position ({path}'s does not)")
    require(3 - player in agent.seats, "opponent", value,
            f"a checkpoint of the other seat: its {agent.algorithm} agent was trained as player "
            f"{agent.seats[0]} only, the seat player={player} gives the learner")
    return path


def check_game(cfg: dict, algorithm: str) -> tuple[tuple[int, int, int], list[str]]:
    """Validate m, n, k and the algorithm on that board: the game and the opponents allowed there."""
    m, n, k = (cfg.get(key) for key in ("m", "n", "k"))
    try:
        bitboards.check_shape(m, n, k)
    except ValueError as refused:
        raise ConfigError(f"game m={m}, n={n}, k={k} is not allowed: {refused}") from None
    if (m, n, k) == TTT:
        return TTT, [*opponents.NAMES, "mcts"]
    solved = m * n <= solver.MAX_CELLS
    others = [*bots.ANY_BOARD, *(["self"] if agents.get(algorithm).self_play else [])]
    require(solved or cfg.get("opponent") != "perfect", "opponent", "perfect",
            f"one of {', '.join(others)} on game m={m}, n={n}, k={k}: perfect plays only where "
            f"the lab solves the board (at most {solver.MAX_CELLS} cells, here {m * n})")
    return (m, n, k), list(bots.NAMES if solved else bots.ANY_BOARD)


# The integer run knobs, in the order checked: key -> (least allowed, what is allowed, value for null)
COUNTS = {
    "episodes_per_update": (1, "a positive integer", None),
    "iterations": (1, "a positive integer", None),
    "seed": (0, "an integer from 0 to 2**32 - 1", None),
    "eval_every": (1, "a positive integer, or null for about 50 evaluations per run",
                   lambda counts: max(1, counts["iterations"] // 50)),
    "mcts_simulations": (1, "a positive integer (MCTS playouts per move)", None),
    "eval_games": (1, "a positive integer, or null for 9,600 (95% intervals at most 2 points wide)",
                   lambda counts: stats.games_needed(0.02)),  # 2-point intervals
}

COUNT_LIMITS = {"seed": 2**32 - 1}
"""The most a count may be: the compiled kernels' random stream takes a 32-bit seed (2**32 would
train as 0 does)"""


def parse(cfg) -> tuple[RunConfig, Knobs]:
    """A flat configuration validated into the run's knobs and its algorithm's (else ConfigError
    naming the first bad key and what it allows)."""
    cfg = dict(cfg)
    known = set(RUN_KEYS + SETTINGS + agents.knob_names())
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise ConfigError(f"{unknown[0]!r} is not a knob of the lab{did_you_mean(unknown[0], known)}: "
                          f"the knobs are {', '.join(sorted(known))}")
    algorithm = cfg.get("algorithm")
    require(algorithm in agents.ALGORITHMS, "algorithm", algorithm, f"one of {', '.join(agents.ALGORITHMS)}")
    algo = agents.get(algorithm)
    (m, n, k), fixed = check_game(cfg, algorithm)
    bigger = (m, n, k) != TTT
    allowed_opponents = tuple(fixed) + (("self",) if algo.self_play else ())
    if opponents.is_checkpoint(cfg.get("opponent")):
        cfg["opponent"] = checkpoint_opponent(cfg["opponent"], cfg.get("player"), (m, n, k))
    else:
        require(cfg.get("opponent") in allowed_opponents, "opponent", cfg.get("opponent"),
                f"one of {', '.join(allowed_opponents)} for algorithm={algorithm}"
                + (f" on game m={m}, n={n}, k={k}" if bigger else "") + ", or a checkpoint file PATH.npz")
    require(cfg.get("player") in (1, 2) and is_kind(cfg.get("player"), int), "player", cfg.get("player"),
            "1 (X, moves first) or 2 (O)")
    counts = {}
    for key, (least, allowed, null) in COUNTS.items():
        value = null(counts) if cfg.get(key) is None and null else cfg.get(key)
        require(is_kind(value, int) and least <= value <= COUNT_LIMITS.get(key, value), key, value, allowed)
        counts[key] = value
    # A self-play agent plays both seats: the seat knob does not change the run.
    player = None if cfg["opponent"] == "self" else cfg["player"]
    run = RunConfig(**{**{key: cfg.get(key) for key in RUN_KEYS}, **counts, "player": player})
    names = algo.Config.names()
    missing = [n for n in names if n not in cfg]
    if missing:
        raise ConfigError(f"algorithm={algorithm} needs the knobs {', '.join(missing)}")
    knobs = algo.Config(**{n: cfg[n] for n in names})
    algo.Learner.check_run(knobs, run)
    return run, knobs


def check_settings(cfg) -> tuple[Path, bool, str]:
    """Validate where and whether a run happens: (absolute results_dir, force, on_code_change)."""
    force = cfg.get("force", False)
    require(isinstance(force, bool), "force", force, "true or false")
    on_code_change = cfg.get("on_code_change", "reuse")
    require(on_code_change in ("reuse", "rerun"), "on_code_change", on_code_change,
            "reuse (keep runs finished by another code version) or rerun (train them again)")
    raw = cfg.get("results_dir")
    require(isinstance(raw, str) and raw.strip() != "", "results_dir", raw, "a directory path")
    path = Path(raw).expanduser()
    in_ray_job = "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ  # set by Ray for a submitted job's driver
    require(path.is_absolute() or not in_ray_job, "results_dir", raw,
            "an absolute path under `ray job submit` (the driver runs in a temporary copy of "
            "--working-dir; use a path on the head node or on shared storage)")
    path = Path(os.path.abspath(path))
    existing = next(p for p in (path, *path.parents) if p.exists())
    require(existing.is_dir(), "results_dir", raw, f"a directory ({existing} is a file)")
    return path, force, on_code_change


def identity(run: RunConfig, knobs: Knobs) -> dict:
    """Everything that determines what a run computes, and nothing else: the game keys only where
    they matter (m, n, k off 3x3, mcts_simulations against mcts, eval_games where evaluation is by
    games), so a 3x3 run keeps the identity and run id it had before bigger boards; likewise an
    algorithm's knob added later, at the value runs had before it (its Config's ADDED)."""
    unused = {"mcts_simulations": run.opponent != "mcts",
              "eval_games": not run.bigger_board or run.m * run.n <= solver.MAX_CELLS,
              **dict.fromkeys(("m", "n", "k"), not run.bigger_board)}
    # fields, not dataclasses.asdict: every knob is a plain value, and asdict deep-copies each
    # (a third of planning a grid of short runs)
    algorithm = {f.name: getattr(knobs, f.name) for f in dataclasses.fields(knobs)}
    return {**{f.name: getattr(run, f.name) for f in dataclasses.fields(run) if not unused.get(f.name)},
            **{key: value for key, value in algorithm.items() if key not in knobs.ADDED or value != knobs.ADDED[key]}}


def run_id(run: RunConfig, knobs: Knobs) -> str:
    """A short stable hash of the run's identity: equal configurations share one id."""
    text = json.dumps(identity(run, knobs), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Job:
    """One validated run, ready to train: built once by the driver, handed to lab.run. `knobs`: its
    algorithm's Config; `results_dir`: absolute; `force` and `on_code_change`: whether to re-run it
    if results_dir holds it finished (by another code version)."""

    run: RunConfig
    knobs: Knobs
    run_id: str
    results_dir: Path
    force: bool
    on_code_change: str = "reuse"

    @property
    def algorithm(self) -> agents.Algorithm:
        return agents.get(self.run.algorithm)

    def identity(self) -> dict:
        return identity(self.run, self.knobs)


def job(cfg) -> Job:
    """Validate a flat configuration into a Job; raises ConfigError naming the first bad key."""
    run, knobs = parse(cfg)
    results_dir, force, on_code_change = check_settings(cfg)
    return Job(run, knobs, run_id(run, knobs), results_dir, force, on_code_change)
