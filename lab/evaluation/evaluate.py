"""How a trained agent is measured, on every board: `evaluation(agent, run)` gives its run-table
columns (eval_p<seat>_<key>) in the seats it trains in, exactly where the board allows.

Exactly (EXACT): lab.game.measures' pass over every position the games reach, on every board
lab.game.solver solves (at most 16 cells; 4x4 solved once per process, about 3 s and 0.3 GB),
reading the agent's `policy` at (x, o) positions, on 3x3 (`exact`) its move table at board codes
(lab.agents.base.Agent.move_table: tied best moves share the probability, so tie-breaking is
averaged over exactly). `ceiling` is the yardstick: the best a perfect player does.

Elsewhere by games (GAMES): `eval_games` games in each seat against random and the run's opponent
(onestep in self-play and against a checkpoint), from the agent's `play(bot, seat, games, seed)`,
each share with its 95% Wilson interval (`outcome_rates`; lab.stats.games_needed(0.02) = 9,600
games make each at most 2 points wide): <result>, <result>_low, <result>_high and games.
"""

import functools

import numpy as np

from lab import game, stats
from lab.evaluation import exact_ceiling
from lab.game import bots, engine, measures, solver
from lab.knobs import TTT, RunConfig

OPPONENTS = ("random", "onestep")
"""The opponents exact() and ceiling() measure against."""
OPPONENT_TITLES = {"random": "random", "onestep": "OneStep"}
"""How figures and tables name them."""
SEATS = {1: "X", 2: "O"}
"""The seats' marks: player 1 is X and moves first."""
KEYS = {**{f"{o}_{r}": float for o in OPPONENTS for r in measures.RESULTS},
        "losing_lines": int, "total_lines": int, "never_loses": bool, "optimal_move_rate": float,
        "winning_lines": int, "drawing_lines": int}
"""The keys of exact()'s result, in order, each with the type of its value."""
EXACT, GAMES = "exact", "games"
"""The `evaluation` column of a row evaluated exactly (lab.game.solver), by games"""
BOARD_OPPONENTS = tuple(dict.fromkeys((*measures.OPPONENTS, *bots.NAMES)))
"""Whom an agent on a bigger board can be measured against: exactly (lab.game.solver) or by games
(the bots)"""
BOARD_KEYS = {**{f"{o}_{r}": float for o in measures.OPPONENTS for r in measures.RESULTS},
              **{key: kind for key, kind in KEYS.items() if not key.startswith(OPPONENTS)},
              **{f"{bot}_{key}": kind for bot in bots.ANY_BOARD  # perfect: where evaluation is exact
                 for key, kind in [("games", int)] + [(f"{r}{end}", float) for r in measures.RESULTS
                                                      for end in ("", "_low", "_high")]}}
"""The keys of an evaluation on a bigger board (column(seat, key) holds them), with their types."""


def ceiling(opponent: str, player: int) -> dict:
    """3x3's exact ceiling (lab.evaluation.exact_ceiling's) against `opponent` in seat `player`. A
    player willing to lose sometimes can win more against random as O; no agent that never loses
    passes this."""
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    if opponent not in OPPONENTS:
        raise ValueError(f"unknown opponent {opponent!r}; allowed: {', '.join(OPPONENTS)}")
    return exact_ceiling.ceiling(TTT, opponent, player)


@functools.cache
def _codes() -> tuple[solver.Solved, tuple]:
    """3x3 solved, and each position's board code by depth: its row in a move table."""
    board = solver.solve(*TTT)
    return board, tuple(engine.positions_of(engine.TTT, *solver.split(board, keys)) for keys in board.keys)


def exact(agent, player: int) -> dict:
    """lab.game.measures.exact's KEYS of `agent` (an Agent or a 3x3 move table) in seat `player`
    (1 X, 2 O), from its side, against random and onestep."""
    table = agent if isinstance(agent, np.ndarray) else agent.move_table()
    if table.shape != (game.N_CODES, 9):
        raise ValueError(f"a move table has shape ({game.N_CODES}, 9), got {table.shape}")
    board, rows = _codes()
    measured = measures.measure(board, table, rows, player, OPPONENTS)
    return {key: measured[key] for key in KEYS}


def column(seat: int, key: str) -> str:
    """The results-table column holding measure `key` of the agent in seat `seat` (1 X, 2 O)."""
    return f"eval_p{seat}_{key}"


ALTERNATED_KEYS = tuple(f"{o}_{r}" for o in OPPONENTS for r in measures.RESULTS)
"""The measures of `alternated`."""


def alternated(as_x: dict, as_o: dict) -> dict:
    """Win/draw/loss against each opponent, seats alternated (write-up 002's match: X in half the
    games), exactly: the mean of exact(agent, 1) and exact(agent, 2)."""
    return {key: (as_x[key] + as_o[key]) / 2 for key in ALTERNATED_KEYS}


def alternated_column(key: str) -> str:
    """The results-table column holding measure `key` of `alternated`."""
    return f"eval_alternated_{key}"


def evaluation(agent, run: RunConfig) -> dict:
    """The agent in the seats it trains in (both in self-play), as results-table columns: 3x3 by
    `exact` (in both seats also eval_alternated_<key>, `alternated`), a board the lab solves
    exactly, any other by games against random and the run's bot (else onestep)."""
    if not run.bigger_board:
        moves = agent.move_table(run.seats[0] if len(run.seats) == 1 else None)
        measured = {seat: exact(moves, seat) for seat in run.seats}
        columns = {column(seat, key): value
                   for seat, result in measured.items() for key, value in result.items()}
        if len(measured) == 2:
            columns.update({alternated_column(key): value for key, value in
                            alternated(measured[1], measured[2]).items()})
        return columns
    if run.m * run.n <= solver.MAX_CELLS:
        board = solver.solve(*run.game)

        def policy(x, o):  # as measures.exact asks: (X's stones, O's stones) -> rows
            return agent.policy(np.stack([x, o], axis=1))
        return {"evaluation": EXACT, **{
            column(seat, key): value for seat in run.seats
            for key, value in measures.exact(board, policy, seat).items()}}
    out = {"evaluation": GAMES}
    names = dict.fromkeys(("random", run.opponent if run.opponent in bots.NAMES else "onestep"))
    for seat in run.seats:
        for bot in (bots.bot(name, run.mcts_simulations if name == "mcts" else None) for name in names):
            rates = outcome_rates(agent.play(bot, seat, run.eval_games, run.seed), seat)
            out.update({column(seat, f"{bot.name}_{key}"): value for key, value in rates.items()
                        if key != "evaluation"})
    return out


def outcome_rates(tally, seat: int) -> dict:
    """The win/draw/loss shares of a tally [X wins, O wins, draws] from seat `seat`'s side, each
    with its 95% Wilson interval: {evaluation, games, win, win_low, win_high, draw, ...}."""
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
