"""Evaluation of a greedy agent on a bigger m,n,k board, as results-table columns.

Exact where lab.mnk_exact can enumerate the board (at most 16 cells: 4x4 included), against
random, onestep and perfect; the board is solved once per process (about 3 s and 0.3 GB on 4x4)
and kept. Elsewhere by games (lab.mnk_bots): `eval_games` games in each seat against random and
the run's opponent (onestep in self-play), each share with its 95% Wilson interval. Every
evaluated row says which in its `evaluation` column ("exact" or "games"). The columns are named
as 3x3's (lab.evaluate.column: eval_p<seat>_<opponent>_<result>), so random and onestep shares
land in the same columns on every board; a rate by games adds <result>_low, <result>_high and
the number of games.

An agent evaluated here is a lab.agents.base.Agent of the board: its `policy` at (x, o) positions
(what mnk_exact.exact asks of the seat's positions the games reach) and its `play(bot, seat,
games, seed)` (a tally of its compiled games against a bot).
"""

import functools

import numpy as np

from lab import mnk_bots, mnk_exact
from lab.evaluate import column
from lab.knobs import RunConfig

EXACT = "exact"
"""The `evaluation` column of a row evaluated by lab.mnk_exact (GAMES: by games)"""
GAMES = mnk_bots.EVALUATION
RESULTS = ("win", "draw", "loss")
OPPONENTS = tuple(dict.fromkeys((*mnk_exact.OPPONENTS, *mnk_bots.NAMES)))
"""Whom an agent on a bigger board can be measured against: exactly (mnk_exact) or by games (the bots)"""
KEYS = {**{f"{o}_{r}": float for o in mnk_exact.OPPONENTS for r in RESULTS},
        **{f"{bot}_{key}": kind for bot in mnk_bots.ANY_BOARD  # perfect: where evaluation is exact
           for key, kind in [("games", int)] + [(f"{r}{end}", float) for r in RESULTS
                                                for end in ("", "_low", "_high")]}}
"""The keys of an evaluation on a bigger board (column(seat, key) holds them), with their types."""


@functools.lru_cache(maxsize=1)
def solved(m: int, n: int, k: int) -> mnk_exact.Solved:
    """The board's positions and values, solved once per process (the last board asked)."""
    return mnk_exact.solve(m, n, k)


def exact(run: RunConfig) -> bool:
    """Whether the run's board is evaluated exactly (else by games)."""
    return run.m * run.n <= mnk_exact.MAX_CELLS


def bots(run: RunConfig) -> list[mnk_bots.Bot]:
    """Whom an evaluation by games plays: random and the run's opponent (onestep in self-play)."""
    names = dict.fromkeys(("random", "onestep" if run.opponent == "self" else run.opponent))
    return [mnk_bots.bot(name, run.mcts_simulations if name == "mcts" else None) for name in names]


def evaluation(agent, run: RunConfig) -> dict:
    """The agent in the seats it trains in (both in self-play), as results-table columns."""
    if exact(run):
        board = solved(*run.game)
        return {"evaluation": EXACT, **{
            column(seat, key): value for seat in run.seats
            for key, value in mnk_exact.exact(board, bitboard_policy(agent), seat).items()}}
    out = {"evaluation": GAMES}
    for seat in run.seats:
        for bot in bots(run):
            rates = mnk_bots.outcome_rates(agent.play(bot, seat, run.eval_games, run.seed), seat)
            out.update({column(seat, f"{bot.name}_{key}"): value for key, value in rates.items()
                        if key != "evaluation"})
    return out


def bitboard_policy(agent):
    """The agent's policy as mnk_exact.exact takes a function: (X's stones, O's stones) -> rows."""
    return lambda x, o: agent.policy(np.stack([x, o], axis=1))
