"""How a trained agent is measured, on every board: `evaluation(agent, run)` gives its run-table
columns (eval_p<seat>_<key>) in the seats it trains in, exactly where the board allows.

Exactly: lab.game.solver's pass over every position the games reach, on every board it solves
(at most 16 cells). On 3x3 (`exact`, `tabulated`) the agent is anything with a `move_table()`
(lab.agents.base.Agent: its greedy policy, tied best moves sharing the probability) or a move
table itself, read at each position's board code, so tie-breaking at random is averaged over
exactly; no sampled games, no noise.

`exact(agent, player)` gives, from the agent's side in seat `player` (1 = X, 2 = O):

- random_win / random_draw / random_loss, onestep_win / onestep_draw / onestep_loss: the exact
  probabilities of each result against that opponent (lab.opponents);
- winning_lines / drawing_lines / losing_lines / total_lines / never_loses: write-up 004's metric,
  counting lines of play (its three shares are the first three over total_lines);
- optimal_move_rate: how often the agent's move keeps the minimax value.

`ceiling(opponent, player)` gives the best win/draw/loss a perfect player reaches against
`random` or `onestep` (lab.exact_ceiling's on the 3,3,3 board): never giving away the minimax
value, it exploits the opponent as much as possible. That is the yardstick for the first six
numbers; `python -m lab.exact_ceiling 3 3 3` prints them.

Bigger boards: exact where lab.game.solver enumerates the board (at most 16 cells: 4x4 included),
against random, onestep and perfect; the board is solved once per process (about 3 s and 0.3 GB
on 4x4) and kept. Elsewhere by games (lab.game.bots): `eval_games` games in each seat against
random and the run's opponent (onestep in self-play), each share with its 95% Wilson interval
(`outcome_rates`; lab.stats.games_needed(0.02) = 9,600 games make each at most 2 points wide).
Every evaluated row says which in its `evaluation` column (EXACT or GAMES). Random and onestep
shares land in 3x3's columns; a rate by games adds <result>_low, <result>_high and the number of
games. There the agent is asked for its `policy` at (x, o) positions (what measures.exact asks of
the positions its seat reaches) and its `play(bot, seat, games, seed)`, a tally of its compiled
games against a bot.
"""

import functools

import numpy as np

from lab import exact_ceiling, game, opponents, stats
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


def _level(codes):
    """The non-terminal positions among `codes` with their children (illegal moves -> code 0)."""
    codes = codes[~game.TERMINAL[codes]]
    return codes, np.maximum(game.AFTER[codes], 0)


def _side(player: int) -> int:
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    return 1 if player == 1 else -1


def best_response(opponent: str, player: int) -> np.ndarray:
    """The move table of the perfect player that best exploits `opponent` in seat `player`: the
    player whose results are `ceiling(opponent, player)`, written as a table over lab.game's codes.

    At each of its positions it considers only the moves that keep the minimax value
    (lab.game.OPTIMAL: a perfect player never gives a result away) and plays the one maximising
    its expected (win - loss) under the opponent's move table; among moves equal on that (within
    lab.exact_ceiling.TIE_TOLERANCE) the one with the higher win probability, then the lowest
    cell index (equal win and loss means equal draw, so this last choice never changes a result).
    """
    side = _side(player)
    opponent_moves = opponents.table(opponent)
    value = np.stack([game.WINNER == side, game.WINNER == 0, game.WINNER == -side], axis=1) * 1.0
    moves = np.zeros((game.N_CODES, 9))
    levels = [_level(codes) for codes in game.DEPTHS if (~game.TERMINAL[codes]).any()]
    for codes, children in reversed(levels):
        child = value[children]  # (n, 9, 3)
        score = np.where(game.OPTIMAL[codes], child[..., 0] - child[..., 2], -np.inf)
        tied = score >= score.max(axis=1, keepdims=True) - exact_ceiling.TIE_TOLERANCE
        best = np.where(tied, child[..., 0], -np.inf).argmax(axis=1)
        mine = game.TO_MOVE[codes] == side
        here = np.where(mine[:, None], np.eye(9)[best], opponent_moves[codes])
        moves[codes[mine]] = here[mine]
        value[codes] = np.einsum("nm,nmk->nk", here, child)
    return moves


def ceiling(opponent: str, player: int) -> dict:
    """The best exact {win, draw, loss} of a perfect player against `opponent` in seat `player`.

    Objective: maximise the expected (win - loss) from the agent's side, the opponent playing its
    move table (lab.opponents), over the players that never give away the minimax value (so the
    loss is 0 and this maximises wins): lab.exact_ceiling's pass on the 3,3,3 board, the results
    of best_response. A player willing to lose sometimes can win more against random as O; such
    a player is not perfect, and no agent that never loses can pass this line.
    """
    _side(player)
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
    """Exact measures of `agent` (an Agent or a move table) playing in seat `player` (1 X, 2 O):
    lab.game.solver's, against random and onestep, under KEYS (see the module doc).

    - `<opponent>_win/_draw/_loss`: the probability of each result from the agent's side, both
      sides playing their move tables (the agent's tied best moves each with their share).
    - `total_lines`: the number of distinct move sequences from the empty board to the end of a
      game in which every agent move has non-zero probability in its table (so every tied greedy
      move is followed) and the opponent plays any legal move; `losing_lines`: how many of them
      the agent loses, `winning_lines` / `drawing_lines` how many it wins / draws (the three add
      up to total_lines); `never_loses`: losing_lines == 0, i.e. no opponent can ever beat it.
      Lines are counted, not weighted by probability (write-up 004's metric).
    - `optimal_move_rate`: over the agent's decision positions reachable in those lines, the mean
      probability its table puts on moves that keep the minimax value (lab.game.OPTIMAL); 1 means
      it never gives away a won or drawn position.
    """
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


def solvable(run: RunConfig) -> bool:
    """Whether the run's board is evaluated exactly (else by games)."""
    return run.m * run.n <= solver.MAX_CELLS


def opponents_of(run: RunConfig) -> list[bots.Bot]:
    """Whom an evaluation by games plays: random and the run's opponent (onestep in self-play)."""
    names = dict.fromkeys(("random", "onestep" if run.opponent == "self" else run.opponent))
    return [bots.bot(name, run.mcts_simulations if name == "mcts" else None) for name in names]


def evaluation(agent, run: RunConfig) -> dict:
    """The agent in the seats it trains in (both in self-play), as results-table columns, on its
    board: 3x3 by `tabulated`, a board the lab solves by lab.game.solver's exact pass, any other
    by games against bots."""
    if not run.bigger_board:
        return tabulated(agent, run)
    if solvable(run):
        board = solved(*run.game)
        return {"evaluation": EXACT, **{
            column(seat, key): value for seat in run.seats
            for key, value in measures.exact(board, bitboard_policy(agent), seat).items()}}
    out = {"evaluation": GAMES}
    for seat in run.seats:
        for bot in opponents_of(run):
            rates = outcome_rates(agent.play(bot, seat, run.eval_games, run.seed), seat)
            out.update({column(seat, f"{bot.name}_{key}"): value for key, value in rates.items()
                        if key != "evaluation"})
    return out


def bitboard_policy(agent):
    """The agent's policy as measures.exact takes a function: (X's stones, O's stones) -> rows."""
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
