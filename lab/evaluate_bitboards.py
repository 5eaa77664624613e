"""Evaluation of a greedy agent on a bigger m,n,k board, as results-table columns.

Exact where lab.game.solver can enumerate the board (at most 16 cells: 4x4 included), against
random, onestep and perfect; the board is solved once per process (about 3 s and 0.3 GB on 4x4)
and kept. Elsewhere by games (lab.game.bots): `eval_games` games in each seat against random and
the run's opponent (onestep in self-play), each share with its 95% Wilson interval
(`outcome_rates`; lab.stats.games_needed(0.02) = 9,600 games make each at most 2 points wide). Every
evaluated row says which in its `evaluation` column ("exact" or "games"). The columns are named
as 3x3's (lab.evaluate.column: eval_p<seat>_<opponent>_<result>), so random and onestep shares
land in the same columns on every board; a rate by games adds <result>_low, <result>_high and
the number of games.

An agent evaluated here is a lab.agents.base.Agent of the board: its `policy` at (x, o) positions
(what solver.exact asks of the seat's positions the games reach) and its `play(bot, seat,
games, seed)` (a tally of its compiled games against a bot).
"""

import functools

import numpy as np

from lab import stats
from lab.game import bots, solver
from lab.evaluate import column
from lab.knobs import RunConfig

EXACT = "exact"
"""The `evaluation` column of a row evaluated by lab.game.solver (GAMES: by games)"""
GAMES = "games"
"""The `evaluation` column of a row evaluated by games"""
RESULTS = ("win", "draw", "loss")
OPPONENTS = tuple(dict.fromkeys((*solver.OPPONENTS, *bots.NAMES)))
"""Whom an agent on a bigger board can be measured against: exactly (mnk_exact) or by games (the bots)"""
KEYS = {**{f"{o}_{r}": float for o in solver.OPPONENTS for r in RESULTS},
        **{f"{bot}_{key}": kind for bot in bots.ANY_BOARD  # perfect: where evaluation is exact
           for key, kind in [("games", int)] + [(f"{r}{end}", float) for r in RESULTS
                                                for end in ("", "_low", "_high")]}}
"""The keys of an evaluation on a bigger board (column(seat, key) holds them), with their types."""


@functools.lru_cache(maxsize=1)
def solved(m: int, n: int, k: int) -> solver.Solved:
    """The board's positions and values, solved once per process (the last board asked)."""
    return solver.solve(m, n, k)


def exact(run: RunConfig) -> bool:
    """Whether the run's board is evaluated exactly (else by games)."""
    return run.m * run.n <= solver.MAX_CELLS


def opponents_of(run: RunConfig) -> list[bots.Bot]:
    """Whom an evaluation by games plays: random and the run's opponent (onestep in self-play)."""
    names = dict.fromkeys(("random", "onestep" if run.opponent == "self" else run.opponent))
    return [bots.bot(name, run.mcts_simulations if name == "mcts" else None) for name in names]


def evaluation(agent, run: RunConfig) -> dict:
    """The agent in the seats it trains in (both in self-play), as results-table columns."""
    if exact(run):
        board = solved(*run.game)
        return {"evaluation": EXACT, **{
            column(seat, key): value for seat in run.seats
            for key, value in solver.exact(board, bitboard_policy(agent), seat).items()}}
    out = {"evaluation": GAMES}
    for seat in run.seats:
        for bot in opponents_of(run):
            rates = outcome_rates(agent.play(bot, seat, run.eval_games, run.seed), seat)
            out.update({column(seat, f"{bot.name}_{key}"): value for key, value in rates.items()
                        if key != "evaluation"})
    return out


def bitboard_policy(agent):
    """The agent's policy as solver.exact takes a function: (X's stones, O's stones) -> rows."""
    return lambda x, o: agent.policy(np.stack([x, o], axis=1))


def outcome_rates(tally, seat: int) -> dict:
    """The win/draw/loss shares, from seat `seat`'s side (1 X, 2 O), of a tally [X wins, O wins,
    draws]: {evaluation: "games", games, win, win_low, win_high, draw, ..., loss, ...}, each
    share with its 95% Wilson interval."""
    if seat not in (1, 2):
        raise ValueError(f"seat must be 1 (X) or 2 (O), got {seat!r}")
    x_wins, o_wins, draws = (int(n) for n in tally)
    games = x_wins + o_wins + draws
    rates = {"evaluation": GAMES, "games": games}
    counts = {"win": x_wins, "draw": draws, "loss": o_wins} if seat == 1 else \
        {"win": o_wins, "draw": draws, "loss": x_wins}
    for key, count in counts.items():
        rates[key], rates[f"{key}_low"], rates[f"{key}_high"] = stats.wilson(count, games)
    return rates
