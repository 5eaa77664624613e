"""The shipped defaults at the ceiling (issues 12 and 27): `algorithm=A opponent=O player=P
seed=S` and nothing else trains, in at most 100,000 episodes, an agent whose exact win - loss
against O in seat P is within 2 points of a perfect player's, losing at most 1% of games, on seed
0 and on the median of seeds 0-4 (docs/search.md's table). Issue 27 asks for a margin, within 1.5
points and at most 0.8% lost; one cell misses it (SHORT_OF_THE_MARGIN, docs/search.md says why),
and its test fails the day it meets it, so that the list can only shrink. alphazero's defaults are
checked by its own never-losing tests."""

import multiprocessing
import statistics
from concurrent.futures import ProcessPoolExecutor

import pytest

from lab import agents, evaluate
from lab.compose import compose
from lab.config import parse

CELLS = [(player, opponent) for player in (1, 2) for opponent in ("random", "onestep")]
SEEDS = range(5)
CRITERIA = {"ceiling": (0.02, 0.01), "margin": (0.015, 0.008)}
"""(how far win - loss may be below the ceiling's, the largest loss): issue 12's and issue 27's"""
SHORT_OF_THE_MARGIN = {("mc_vfa", 2, "random")}
"""cells that meet issue 12's criterion but not issue 27's margin (measured 2026-11-25)"""


def win_loss(algorithm, player, opponent, seed) -> tuple[float, float]:
    """(win - loss, loss) against `opponent` of the defaults trained on `seed`."""
    run_cfg, knobs = parse(compose(f"algorithm={algorithm}", f"opponent={opponent}",
                                   f"player={player}", f"seed={seed}"))
    assert run_cfg.iterations * run_cfg.episodes_per_update <= 100_000
    learner = agents.get(algorithm).Learner(knobs, run_cfg)
    for _ in range(run_cfg.iterations):
        learner.iterate()
    result = evaluate.exact(learner.agent(), player)
    return result[f"{opponent}_win"] - result[f"{opponent}_loss"], result[f"{opponent}_loss"]


@pytest.fixture(scope="module")
def pool():
    """Two processes (CI has two cores) for the seeds: spawned, as this process may hold Ray's threads."""
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as workers:
        yield workers


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["mc_vfa", "q_net", "q_table", "td_value", "negamax_q"])
@pytest.mark.parametrize("player,opponent", CELLS)
def test_defaults_reach_the_ceiling(algorithm, player, opponent, pool):
    best = evaluate.ceiling(opponent, player)
    seeds = list(pool.map(win_loss, *zip(*[(algorithm, player, opponent, seed) for seed in SEEDS])))
    median = (statistics.median(s[0] for s in seeds), statistics.median(s[1] for s in seeds))
    met = {}
    for criterion, (below, max_loss) in CRITERIA.items():
        floor = best["win"] - best["loss"] - below
        met[criterion] = all(value >= floor and loss <= max_loss for value, loss in (seeds[0], median))
    figures = f"seed 0 {seeds[0]}, median {median} (win - loss, loss)"
    assert met["ceiling"], figures
    assert met["margin"] != ((algorithm, player, opponent) in SHORT_OF_THE_MARGIN), (
        f"{figures}: margin {'met' if met['margin'] else 'missed'}; update SHORT_OF_THE_MARGIN")
