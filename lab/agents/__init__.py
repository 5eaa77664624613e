"""The registry of learning algorithms, and `load` for their checkpoints.

Each module `lab/agents/<name>.py` ends with its `ALGORITHM`, a `lab.agents.base.Algorithm` (its
`Config`, `Learner` and `Agent`: the contract, docs/architecture.md); adding an algorithm means
writing that module and listing it here. Every algorithm is offered every board; a Learner
refuses, in its `check_run`, a board it cannot train on.
"""

import functools
import zipfile

from lab.game import opponents
from lab.agents import alphazero, mc_vfa, negamax_q, q_net, q_table, td_value
from lab.agents.base import Algorithm
from lab.files import npz_arrays
from lab.knobs import TTT

REGISTRY: dict[str, Algorithm] = {
    m.ALGORITHM.name: m.ALGORITHM for m in (mc_vfa, q_table, td_value, negamax_q, q_net, alphazero)
}
ALGORITHMS = tuple(REGISTRY)


def get(name: str) -> Algorithm:
    """The algorithm called `name`."""
    if name not in REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; allowed: {', '.join(REGISTRY)}")
    return REGISTRY[name]


@functools.cache  # asked once per configuration a sweep plans
def knob_names() -> tuple[str, ...]:
    """Every algorithm's knobs, each once, in registry order."""
    return tuple(dict.fromkeys(n for a in REGISTRY.values() for n in a.Config.names()))


def game_of(agent) -> tuple[int, int, int]:
    """(m, n, k) of the game a trained agent plays: 3x3's, or a bigger-board agent's `shape`."""
    return getattr(agent, "shape", TTT)


def load(path):
    """The trained agent in a checkpoint written by `Agent.save`. Never runs code from the file. A
    file that is not a zip archive is refused first: numpy would read it as a pickle and tell the
    user to allow pickles."""
    with open(path, "rb") as f:  # opened here, so closed here whatever numpy raises
        if f.read(4) != b"PK\x03\x04":
            raise ValueError(f"{path}: not a lab checkpoint (a run's .npz, RESULTS_DIR/_checkpoints/<run_id>.npz)")
        f.seek(0)
        try:
            arrays = npz_arrays(f)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise ValueError(f"{path}: a damaged checkpoint ({exc}); train the run again") from None
    name = str(arrays.pop("algorithm", ""))
    algorithm = REGISTRY.get(name)
    if algorithm is None:
        raise ValueError(f"{path}: not a lab checkpoint (algorithm {name!r})")
    try:
        return algorithm.Agent.from_arrays(arrays)
    except (KeyError, TypeError, IndexError, ValueError) as exc:  # arrays missing, or of other shapes
        raise ValueError(f"{path}: a damaged checkpoint ({type(exc).__name__}: {exc}); train the run again") from None


opponents.read_checkpoints_with(load)
