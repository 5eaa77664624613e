"""How a trained agent is measured, on every board: `evaluation(agent, run)` gives its run-table
columns (eval_p<seat>_<key>) in the seats it trains in, exactly where the board allows.

Exactly (EXACT): lab.game.measures' pass over every position the games reach, on every board
lab.game.solver solves (at most 16 cells; 4x4 solved once per process, about 3 s and 0.3 GB). On
3x3 (`exact`, `tabulated`) the agent's move table (lab.agents.base.Agent.move_table: its greedy
policy, tied best moves sharing the probability) is read at each position's board code, so random
tie-breaking is averaged over exactly; on bigger boards its `policy` at (x, o) positions.
`ceiling` is the yardstick: the best a perfect player does (`python -m lab.evaluation.exact_ceiling 3 3 3`).

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

RESULTS = ("win", "draw", "loss")
"""The results a share is given of, in table order."""
OPPONENTS = ("random", "onestep")
"""The opponents exact() and ceiling() measure against."""
OPPONENT_TITLES = {"random": "random", "onestep": "OneStep"}
"""How figures and tables name them."""
SEATS = {1: "X", 2: "O"}
"""The seats' marks: player 1 is X and moves first."""
KEYS = {**{f"{o}_{r}": float for o in OPPONENTS for r in RESULTS},
        "losing_lines": int, "total_lines": int, "never_loses": bool, "optimal_move_rate": float,
        "winning_lines": int, "drawing_lines": int}
"""The keys of exact()'s result, in order, each with the type of its value."""
EXACT = "exact"
"""The `evaluation` column of a row evaluated by lab.game.solver (GAMES: by games)"""
GAMES = "games"
"""The `evaluation` column of a row evaluated by games"""
BOARD_OPPONENTS = tuple(dict.fromkeys((*measures.OPPONENTS, *bots.NAMES)))
"""Whom an agent on a bigger board can be measured against: exactly (lab.game.solver) or by games
(the bots)"""
BOARD_KEYS = {**{f"{o}_{r}": float for o in measures.OPPONENTS for r in RESULTS},
              **{key: kind for key, kind in KEYS.items() if not key.startswith(OPPONENTS)},
              **{f"{bot}_{key}": kind for bot in bots.ANY_BOARD  # perfect: where evaluation is exact
                 for key, kind in [("games", int)] + [(f"{r}{end}", float) for r in RESULTS
                                                      for end in ("", "_low", "_high")]}}
"""The keys of an evaluation on a bigger board (column(seat, key) holds them), with their types:
lines and optimal-move rate where exact, as on 3x3."""


def ceiling(opponent: str, player: int) -> dict:
    """The best exact {win, draw, loss} of a perfect player against `opponent` in seat `player`:
    lab.evaluation.exact_ceiling's on the 3,3,3 board. A player willing to lose sometimes can win more
    against random as O; such a player is not perfect, and no agent that never loses passes this."""
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    if opponent not in OPPONENTS:
        raise ValueError(f"unknown opponent {opponent!r}; allowed: {', '.join(OPPONENTS)}")
    return exact_ceiling.ceiling(TTT, opponent, player)


@functools.cache
def _codes() -> tuple[solver.Solved, tuple]:
    """3x3 solved (held here: lab.game.solver keeps the last board asked) and each position's
    board code, depth by depth: the row of a 3x3 move table the exact pass reads there."""
    board = solver.solve(*TTT)
    return board, tuple(engine.positions_of(engine.TTT, *solver.split(board, keys)) for keys in board.keys)


def exact(agent, player: int) -> dict:
    """Exact measures of `agent` (an Agent or a move table) playing in seat `player` (1 X, 2 O),
    from its side, under KEYS: lab.game.measures.exact's against random and onestep (the results'
    probabilities, the lines of play by result, never_loses, optimal_move_rate)."""
    table = agent if isinstance(agent, np.ndarray) else agent.move_table()
    if table.shape != (game.N_CODES, 9):
        raise ValueError(f"a move table has shape ({game.N_CODES}, 9), got {table.shape}")
    board, rows = _codes()
    measured = measures.measure(board, table, rows, player, OPPONENTS)
    return {key: measured[key] for key in KEYS}


def column(seat: int, key: str) -> str:
    """The results-table column holding measure `key` of the agent in seat `seat` (1 X, 2 O)."""
    return f"eval_p{seat}_{key}"


ALTERNATED_KEYS = tuple(f"{o}_{r}" for o in OPPONENTS for r in RESULTS)
"""The measures of `alternated`: win/draw/loss against each opponent, seats alternated."""


def alternated(as_x: dict, as_o: dict) -> dict:
    """Win/draw/loss against each opponent with seats alternated (write-up 002's match: the agent
    plays X in half the games and O in the other half), exactly: the mean of exact(agent, 1)
    and exact(agent, 2)."""
    return {key: (as_x[key] + as_o[key]) / 2 for key in ALTERNATED_KEYS}


def alternated_column(key: str) -> str:
    """The results-table column holding measure `key` of `alternated`."""
    return f"eval_alternated_{key}"


def tabulated(agent, run: RunConfig) -> dict:
    """3x3: `exact` of the agent in the seats it trains in (both in self-play), as columns
    eval_p<seat>_<key>; evaluated in both seats, also the seats-alternated results (`alternated`)
    as eval_alternated_<key>."""
    seats = run.seats
    moves = agent.move_table(seats[0] if len(seats) == 1 else None)
    measured = {seat: exact(moves, seat) for seat in seats}
    columns = {column(seat, key): value
               for seat, result in measured.items() for key, value in result.items()}
    if len(measured) == 2:
        columns.update({alternated_column(key): value for key, value in
                        alternated(measured[1], measured[2]).items()})
    return columns


@functools.lru_cache(maxsize=1)
def solved(m: int, n: int, k: int) -> solver.Solved:
    """The board's positions and values, solved once per process (the last board asked)."""
    return solver.solve(m, n, k)


def evaluation(agent, run: RunConfig) -> dict:
    """The agent in the seats it trains in (both in self-play), as results-table columns, on its
    board: 3x3 by `tabulated`, a board the lab solves by lab.game.solver's exact pass, any other
    by games against random and the run's bot (else onestep)."""
    if not run.bigger_board:
        return tabulated(agent, run)
    if run.m * run.n <= solver.MAX_CELLS:
        board = solved(*run.game)

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
