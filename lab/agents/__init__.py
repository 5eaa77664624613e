"""The learners, one module per algorithm, and `load` for their checkpoints.

Each module `lab/agents/<name>.py` reads top to bottom and defines:

- `Config`: a frozen dataclass of the knobs the algorithm uses (shared ones such as `alpha`
  included), each with a one-line docstring; defaults live in `conf/algorithm/<name>.yaml`.
- `SELF_PLAY`: whether it also trains with `opponent=self`.
- `Learner(cfg, run)`: `iterate()` plays `run.episodes_per_update` episodes, updates once and
  returns the [X wins, O wins, draws] of those episodes; `agent()` returns the current greedy
  agent.
- an `Agent` subclass (see lab.agents.base) that saves to and loads from `.npz`.
"""

import importlib

import numpy as np

ALGORITHMS = ("mc_vfa", "q_table", "td_value", "negamax_q", "q_net", "alphazero")


def module(name: str):
    """The module of algorithm `name`."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; allowed: {', '.join(ALGORITHMS)}")
    return importlib.import_module(f"lab.agents.{name}")


def load(path):
    """The trained agent in a checkpoint written by `Agent.save`. Never runs code from the file."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    algorithm = str(arrays.pop("algorithm", ""))
    if algorithm not in ALGORITHMS:
        raise ValueError(f"{path}: not a lab checkpoint (algorithm {algorithm!r})")
    return module(algorithm).Agent.from_arrays(arrays)
