"""How a trained agent is measured, on every board: `evaluation(agent, run)` gives its run-table
columns (eval_p<seat>_<key>) in the seats it trains in, exactly where the board allows.

3x3 (`tabulated`): no sampled games, no noise. The game has 5,478 reachable positions, so every measure here is a dynamic programme over them,
one depth of lab.game.DEPTHS at a time: backwards for outcomes and line counts, forwards for
reachability, as compiled passes over precomputed arrays of the game tree (2.9 -> 0.25 ms per
exact() call; the numpy version they replace is the specification in
tests/test_evaluation_unchanged.py, results bit for bit the same). The agent is anything with a
`move_table()` (lab.agents.base.Agent: its greedy policy, tied best moves sharing the
probability) or a move table itself, so tie-breaking at random is averaged over exactly.

`exact(agent, player)` gives, from the agent's side in seat `player` (1 = X, 2 = O):

- random_win / random_draw / random_loss, onestep_win / onestep_draw / onestep_loss: the exact
  probabilities of each result against that opponent (lab.opponents);
- winning_lines / drawing_lines / losing_lines / total_lines / never_loses: write-up 004's metric,
  counting lines of play (its three shares are the first three over total_lines);
- optimal_move_rate: how often the agent's move keeps the minimax value.

`ceiling(opponent, player)` gives the best win/draw/loss a perfect player reaches against
`random` or `onestep`: never giving away the minimax value, it exploits the opponent as much as
possible. That is the yardstick for the first six numbers.

Print the ceilings: `python -m lab.evaluate`.

Bigger boards: exact where lab.game.solver enumerates the board (at most 16 cells: 4x4 included),
against random, onestep and perfect; the board is solved once per process (about 3 s and 0.3 GB
on 4x4) and kept. Elsewhere by games (lab.game.bots): `eval_games` games in each seat against
random and the run's opponent (onestep in self-play), each share with its 95% Wilson interval
(`outcome_rates`; lab.stats.games_needed(0.02) = 9,600 games make each at most 2 points wide).
Every evaluated row says which in its `evaluation` column (EXACT or GAMES). Random and onestep
shares land in 3x3's columns; a rate by games adds <result>_low, <result>_high and the number of
games. There the agent is asked for its `policy` at (x, o) positions (what solver.exact asks of
the positions its seat reaches) and its `play(bot, seat, games, seed)`, a tally of its compiled
games against a bot.
"""

import functools

import numpy as np
from numba import njit

from lab import cli, game, opponents, stats
from lab.game import bots, solver
from lab.knobs import RunConfig

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
TIE_TOLERANCE = 1e-12
"""Expected values closer than this count as equal (float sums of the same rationals differ by
rounding only)."""
EXACT = "exact"
"""The `evaluation` column of a row evaluated by lab.game.solver (GAMES: by games)"""
GAMES = "games"
"""The `evaluation` column of a row evaluated by games"""
BOARD_OPPONENTS = tuple(dict.fromkeys((*solver.OPPONENTS, *bots.NAMES)))
"""Whom an agent on a bigger board can be measured against: exactly (lab.game.solver) or by games
(the bots)"""
BOARD_KEYS = {**{f"{o}_{r}": float for o in solver.OPPONENTS for r in RESULTS},
              **{key: kind for key, kind in KEYS.items() if not key.startswith(OPPONENTS)},
              **{f"{bot}_{key}": kind for bot in bots.ANY_BOARD  # perfect: where evaluation is exact
                 for key, kind in [("games", int)] + [(f"{r}{end}", float) for r in RESULTS
                                                      for end in ("", "_low", "_high")]}}
"""The keys of an evaluation on a bigger board (column(seat, key) holds them), with their types:
lines and optimal-move rate where exact, as on 3x3."""


def _level(codes):
    """The non-terminal positions among `codes` with their children (illegal moves -> code 0)."""
    codes = codes[~game.TERMINAL[codes]]
    return codes, np.maximum(game.AFTER[codes], 0), game.LEGAL[codes]


# The depths that have non-terminal positions; best_response visits them from 8 down to 0.
_LEVELS = [_level(codes) for codes in game.DEPTHS if (~game.TERMINAL[codes]).any()]

# The compiled passes walk the game tree as arrays over its 5,478 reachable positions, numbered by
# their rank among the reachable codes, and over its 16,167 edges (legal moves), those of a
# position together in cell order: compact enough for the cache, and no work on illegal moves.
_CODES = np.flatnonzero(game.REACHABLE)
_RANK = np.zeros(game.N_CODES, dtype=np.int64)
_RANK[_CODES] = np.arange(len(_CODES))
_PARENT, _CELL = np.nonzero(game.LEGAL[_CODES])
_CHILD = _RANK[game.AFTER[_CODES[_PARENT], _CELL]]
"""Edge e is the move in cell _CELL[e] from the position of rank _PARENT[e] to that of rank
_CHILD[e]."""
_FIRST = np.searchsorted(_PARENT, np.arange(len(_CODES) + 1))
"""The edges of the position of rank i are _FIRST[i] to _FIRST[i + 1] - 1 (none if terminal)."""
_ORDER = np.concatenate([_RANK[codes] for codes, _, _ in _LEVELS])
"""The ranks of the non-terminal positions, depth by depth (the empty board is _ORDER[0])."""
_STARTS = np.cumsum([0] + [len(codes) for codes, _, _ in _LEVELS])
"""Where each depth starts in _ORDER."""
_MOVER, _WINNER = game.TO_MOVE[_CODES], game.WINNER[_CODES]
_TREE = (_FIRST, _CHILD, _ORDER, _STARTS, _MOVER, _WINNER)
_DECISIONS = {side: np.flatnonzero(~game.TERMINAL[_CODES] & (_MOVER == side)) for side in (1, -1)}
"""The ranks of the positions where X (1) or O (-1) moves, in code order."""
_OPTIMAL = game.OPTIMAL[_CODES[_PARENT], _CELL]
"""Whether each edge's move keeps the minimax value."""


def _side(player: int) -> int:
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    return 1 if player == 1 else -1


@njit(cache=True)
def _edge_pass(moves, positions, codes, first, cell, legal):
    """The probability of each edge's move in the move table at `positions` (ranks, in code
    order; 0 on the other edges), and the first of those positions whose row is not a probability
    distribution over the legal moves (non-negative, 0 where illegal, summing to 1 within 1e-9:
    NaN and infinity fail), -1 if none."""
    probs = np.zeros(len(cell))
    for i in positions:
        code, total, ok = codes[i], 0.0, True
        for m in range(9):
            ok &= (moves[code, m] >= 0.0) & (legal[code, m] | (moves[code, m] == 0.0))
            total += moves[code, m]
        if not (ok and abs(total - 1.0) <= 1e-9):
            return probs, i
        for e in range(first[i], first[i + 1]):
            probs[e] = moves[code, cell[e]]
    return probs, -1


def _edges(table: np.ndarray, side: int) -> np.ndarray:
    """The probability of each edge's move in a move table where `side` moves (0 elsewhere),
    checked: probabilities on the legal moves."""
    probs, bad = _edge_pass(table, _DECISIONS[side], _CODES, _FIRST, _CELL, game.LEGAL)
    if bad >= 0:
        code = int(_CODES[bad])
        raise ValueError(f"the move table is not a probability distribution over the legal moves "
                         f"at board {game.decode(code).tolist()} (code {code}): {table[code]}")
    return probs


def _agent_edges(agent, side: int) -> np.ndarray:
    """The edge probabilities of the agent's move table where it moves (see _edges)."""
    table = agent if isinstance(agent, np.ndarray) else agent.move_table()
    if table.shape != (game.N_CODES, 9):
        raise ValueError(f"a move table has shape ({game.N_CODES}, 9), got {table.shape}")
    return _edges(np.asarray(table, dtype=np.float64), side)


_OPPONENT_EDGES = {side: np.stack([_edges(opponents.table(name), side) for name in OPPONENTS])
                   for side in (1, -1)}
"""_OPPONENT_EDGES[side][o]: the edge probabilities of opponent OPPONENTS[o] moving as `side`."""


def _terminal_outcomes(side: int) -> np.ndarray:
    """(N_CODES, 3) one-hot [win, draw, loss] from the agent's side; used at terminal positions."""
    return np.stack([game.WINNER == side, game.WINNER == 0, game.WINNER == -side], axis=1) * 1.0


@njit(cache=True)
def _backward_pass(agent_probs, side, opponent_probs, first, child, order, starts, mover, winner):
    """Outcomes and lines of play from the empty board, backwards over the depths from the ends.

    At each position the [win, draw, loss] probabilities against each opponent (whose edge
    probabilities are a row of opponent_probs) are sums over the moves of probability x the
    child's (in cell order, as numpy's einsum summed them: the results are the same), and the
    (winning, drawing, losing, total) line counts are sums over the moves the lines follow (see
    exact). Returns (outcomes (opponents, 3), [winning, drawing, losing, total] lines).
    """
    value = np.empty((len(opponent_probs), len(mover), 3))  # every row set just below
    for i in range(len(mover)):
        value[:, i, 0], value[:, i, 1] = winner[i] == side, winner[i] == 0
        value[:, i, 2] = winner[i] == -side
    won = (winner == side).astype(np.int64)
    lost = (winner == -side).astype(np.int64)
    total = np.ones(len(mover), dtype=np.int64)
    drawn = total - won - lost  # at terminal positions; the loop below sets the others
    for level in range(len(starts) - 2, -1, -1):
        for i in order[starts[level]:starts[level + 1]]:
            mine = mover[i] == side
            edges = range(first[i], first[i + 1])
            for o in range(len(opponent_probs)):
                win = draw = loss = 0.0
                for e in edges:
                    p = agent_probs[e] if mine else opponent_probs[o, e]
                    win += p * value[o, child[e], 0]
                    draw += p * value[o, child[e], 1]
                    loss += p * value[o, child[e], 2]
                value[o, i, 0], value[o, i, 1], value[o, i, 2] = win, draw, loss
            won[i] = drawn[i] = lost[i] = total[i] = 0
            for e in edges:
                follows = not mine or agent_probs[e] > 0.0
                won[i] += follows * won[child[e]]
                drawn[i] += follows * drawn[child[e]]
                lost[i] += follows * lost[child[e]]
                total[i] += follows * total[child[e]]
    root = order[0]
    return value[:, root], np.array([won[root], drawn[root], lost[root], total[root]])


@njit(cache=True)
def _forward_pass(agent_probs, side, optimal, positions, first, cell, child, order, mover):
    """The agent's probability of an optimal move at each of its `positions` (ranks, in code
    order) that the lines of play reach, found forwards over the depths from the empty board."""
    reached = np.zeros(len(mover), dtype=np.bool_)
    reached[order[0]] = True
    for i in order:  # depth by depth: every parent of a position comes before it
        if reached[i]:
            for e in range(first[i], first[i + 1]):
                if mover[i] != side or agent_probs[e] > 0.0:
                    reached[child[e]] = True
    rates = np.empty(len(positions))
    count = 0
    r = np.empty(9)
    for i in positions:
        if reached[i]:
            r[:] = 0.0
            for e in range(first[i], first[i + 1]):
                r[cell[e]] = agent_probs[e] * optimal[e]
            # numpy's pairwise order for a row of 9, so the rate is the one numpy summed
            rates[count] = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])) + r[8]
            count += 1
    return rates[:count]


def best_response(opponent: str, player: int) -> np.ndarray:
    """The move table of the perfect player that best exploits `opponent` in seat `player`.

    At each of its positions it considers only the moves that keep the minimax value
    (lab.game.OPTIMAL: a perfect player never gives a result away) and plays the one maximising
    its expected (win - loss) under the opponent's move table; among moves equal on that (within
    TIE_TOLERANCE) the one with the higher win probability, then the lowest cell index (equal win
    and loss means equal draw, so this last choice never changes a result).
    """
    side = _side(player)
    opponent_moves = opponents.table(opponent)
    value = _terminal_outcomes(side)
    moves = np.zeros((game.N_CODES, 9))
    for codes, children, _ in reversed(_LEVELS):
        child = value[children]  # (n, 9, 3)
        score = np.where(game.OPTIMAL[codes], child[..., 0] - child[..., 2], -np.inf)
        tied = score >= score.max(axis=1, keepdims=True) - TIE_TOLERANCE
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
    loss is 0 and this maximises wins); see best_response. A player willing to lose sometimes can
    win more against random as O; such a player is not perfect, and no agent that never loses
    can pass this line.
    """
    side = _side(player)
    outcomes, _ = _backward_pass(_edges(best_response(opponent, player), side), side,
                                    _edges(opponents.table(opponent), -side)[None], *_TREE)
    win, draw, loss = outcomes[0]
    return {"win": float(win), "draw": float(draw), "loss": float(loss)}


def exact(agent, player: int) -> dict:
    """Exact measures of `agent` (an Agent or a move table) playing in seat `player` (1 X, 2 O).

    - `<opponent>_win/_draw/_loss` for opponent in random, onestep: the probability of each
      result from the agent's side, both sides playing their move tables (the agent's tied best
      moves each with their share of probability).
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
    side = _side(player)
    probs = _agent_edges(agent, side)
    outcomes, lines = _backward_pass(probs, side, _OPPONENT_EDGES[-side], *_TREE)
    winning, drawing, losing, total = (int(n) for n in lines)
    result = {}
    for name, (win, draw, loss) in zip(OPPONENTS, outcomes):
        result.update({f"{name}_win": float(win), f"{name}_draw": float(draw),
                       f"{name}_loss": float(loss)})
    rates = _forward_pass(probs, side, _OPTIMAL, _DECISIONS[side], _FIRST, _CELL, _CHILD, _ORDER,
                          _MOVER)
    result.update(losing_lines=losing, total_lines=total, never_loses=losing == 0,
                  optimal_move_rate=float(rates.sum() / len(rates)),  # = rates.mean(), faster
                  winning_lines=winning, drawing_lines=drawing)
    return result


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


def _ceiling_table() -> str:
    lines = ["Ceiling: the perfect player that best exploits each opponent (exact)",
             f"{'opponent':<9} {'seat':<6} {'win':>8} {'draw':>8} {'loss':>8}"]
    for name in OPPONENTS:
        for player, seat in ((1, "X (1)"), (2, "O (2)")):
            c = ceiling(name, player)
            lines.append(f"{name:<9} {seat:<6} {c['win']:8.5f} {c['draw']:8.5f} {c['loss']:8.5f}")
    return "\n".join(lines)


@cli.one_line()  # a full disk or a closed pipe on stdout: one line
def main(argv=None) -> None:
    """`python -m lab.evaluate`: the ceiling table; it takes no arguments."""
    cli.ArgumentParser(prog="python -m lab.evaluate", description="Print the exact ceiling table.").parse_args(argv)
    print(_ceiling_table(), flush=True)


if __name__ == "__main__":
    main()
