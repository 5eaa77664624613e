"""Exact evaluation of an agent's move table: no sampled games, no noise.

The game has 5,478 reachable positions, so every measure here is a dynamic programme over them,
one depth of lab.game.DEPTHS at a time (backwards for outcomes and line counts, forwards for
reachability), each depth a handful of vectorised numpy gathers. The agent is anything with a
`move_table()` (lab.agents.base.Agent: its greedy policy, tied best moves sharing the
probability) or a move table itself, so tie-breaking at random is averaged over exactly.

`exact(agent, player)` gives, from the agent's side in seat `player` (1 = X, 2 = O):

- random_win / random_draw / random_loss, onestep_win / onestep_draw / onestep_loss: the exact
  probabilities of each result against that opponent (lab.opponents);
- losing_lines / total_lines / never_loses: seed 004's metric, counting lines of play;
- optimal_move_rate: how often the agent's move keeps the minimax value.

`ceiling(opponent, player)` gives the best win/draw/loss a perfect player reaches against
`random` or `onestep`: never giving away the minimax value, it exploits the opponent as much as
possible. That is the yardstick for the first six numbers.

Print the ceilings: `python -m lab.evaluate`.
"""

import numpy as np

from lab import game, opponents

OPPONENTS = ("random", "onestep")
"""The opponents exact() and ceiling() measure against."""
KEYS = {**{f"{o}_{r}": float for o in OPPONENTS for r in ("win", "draw", "loss")},
        "losing_lines": int, "total_lines": int, "never_loses": bool, "optimal_move_rate": float}
"""The keys of exact()'s result, in order, each with the type of its value."""
TIE_TOLERANCE = 1e-12
"""Expected values closer than this count as equal (float sums of the same rationals differ by
rounding only)."""


def _level(codes):
    """The non-terminal positions among `codes` with their children (illegal moves -> code 0)."""
    codes = codes[~game.TERMINAL[codes]]
    return codes, np.maximum(game.AFTER[codes], 0), game.LEGAL[codes]


# Backward passes visit depth 8 down to 0, the forward pass 0 up to 8.
_LEVELS = [_level(codes) for codes in game.DEPTHS if (~game.TERMINAL[codes]).any()]


def _side(player: int) -> int:
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    return 1 if player == 1 else -1


def _as_table(agent, side: int) -> np.ndarray:
    """The agent's move table, checked where the agent moves (probabilities on legal moves)."""
    table = agent if isinstance(agent, np.ndarray) else agent.move_table()
    if table.shape != (game.N_CODES, 9):
        raise ValueError(f"a move table has shape ({game.N_CODES}, 9), got {table.shape}")
    mine = game.DECISIONS[game.TO_MOVE[game.DECISIONS] == side]
    rows, legal = table[mine], game.LEGAL[mine]
    bad = ~np.isfinite(rows).all(axis=1) | (rows < 0).any(axis=1)
    bad |= (np.where(legal, 0, rows) != 0).any(axis=1) | (np.abs(rows.sum(axis=1) - 1) > 1e-9)
    if bad.any():
        code = int(mine[np.argmax(bad)])
        raise ValueError(f"the move table is not a probability distribution over the legal moves "
                         f"at board {game.decode(code).tolist()} (code {code}): {table[code]}")
    return table


def _terminal_outcomes(side: int) -> np.ndarray:
    """(N_CODES, 3) one-hot [win, draw, loss] from the agent's side; used at terminal positions."""
    return np.stack([game.WINNER == side, game.WINNER == 0, game.WINNER == -side], axis=1) * 1.0


def _outcomes(agent_moves: np.ndarray, opponent_moves: np.ndarray, side: int) -> np.ndarray:
    """[win, draw, loss] probabilities from the empty board when both sides play their tables."""
    value = _terminal_outcomes(side)
    for codes, children, _ in reversed(_LEVELS):
        agents_turn = (game.TO_MOVE[codes] == side)[:, None]
        moves = np.where(agents_turn, agent_moves[codes], opponent_moves[codes])
        value[codes] = np.einsum("nm,nmk->nk", moves, value[children])
    return value[game.EMPTY]


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
    win, draw, loss = _outcomes(best_response(opponent, player), opponents.table(opponent),
                                _side(player))
    return {"win": float(win), "draw": float(draw), "loss": float(loss)}


def _followed(agent_moves: np.ndarray, codes, legal, side: int) -> np.ndarray:
    """(n, 9) the moves a line of play follows: the agent's moves of non-zero probability (every
    tied greedy move), every legal move of the opponent."""
    mine = (game.TO_MOVE[codes] == side)[:, None]
    return np.where(mine, agent_moves[codes] > 0, legal)


def _lines(agent_moves: np.ndarray, side: int) -> tuple[int, int]:
    """(losing lines, total lines) of the game tree the agent leaves open (see exact)."""
    total = np.ones(game.N_CODES, dtype=np.int64)
    lost = (game.WINNER == -side).astype(np.int64)
    for codes, children, legal in reversed(_LEVELS):
        follow = _followed(agent_moves, codes, legal, side)
        total[codes] = (follow * total[children]).sum(axis=1)
        lost[codes] = (follow * lost[children]).sum(axis=1)
    return int(lost[game.EMPTY]), int(total[game.EMPTY])


def _optimal_move_rate(agent_moves: np.ndarray, side: int) -> float:
    """Mean over the agent's reachable decision positions of its probability of an optimal move."""
    reached = np.zeros(game.N_CODES, dtype=bool)
    reached[game.EMPTY] = True
    for codes, children, legal in _LEVELS:
        follow = _followed(agent_moves, codes, legal, side) & reached[codes][:, None]
        reached[children[follow]] = True
    mine = game.DECISIONS[reached[game.DECISIONS] & (game.TO_MOVE[game.DECISIONS] == side)]
    return float((agent_moves[mine] * game.OPTIMAL[mine]).sum(axis=1).mean())


def exact(agent, player: int) -> dict:
    """Exact measures of `agent` (an Agent or a move table) playing in seat `player` (1 X, 2 O).

    - `<opponent>_win/_draw/_loss` for opponent in random, onestep: the probability of each
      result from the agent's side, both sides playing their move tables (the agent's tied best
      moves each with their share of probability).
    - `total_lines`: the number of distinct move sequences from the empty board to the end of a
      game in which every agent move has non-zero probability in its table (so every tied greedy
      move is followed) and the opponent plays any legal move; `losing_lines`: how many of them
      the agent loses; `never_loses`: losing_lines == 0, i.e. no opponent can ever beat it.
      Lines are counted, not weighted by probability (seed 004's metric).
    - `optimal_move_rate`: over the agent's decision positions reachable in those lines, the mean
      probability its table puts on moves that keep the minimax value (lab.game.OPTIMAL); 1 means
      it never gives away a won or drawn position.
    """
    side = _side(player)
    moves = _as_table(agent, side)
    result = {}
    for name in OPPONENTS:
        win, draw, loss = _outcomes(moves, opponents.table(name), side)
        result.update({f"{name}_win": float(win), f"{name}_draw": float(draw),
                       f"{name}_loss": float(loss)})
    losing, total = _lines(moves, side)
    result.update(losing_lines=losing, total_lines=total, never_loses=losing == 0,
                  optimal_move_rate=_optimal_move_rate(moves, side))
    return result


def column(seat: int, key: str) -> str:
    """The results-table column holding measure `key` of the agent in seat `seat` (1 X, 2 O)."""
    return f"eval_p{seat}_{key}"


def _ceiling_table() -> str:
    lines = ["Ceiling: the perfect player that best exploits each opponent (exact)",
             f"{'opponent':<9} {'seat':<6} {'win':>8} {'draw':>8} {'loss':>8}"]
    for name in OPPONENTS:
        for player, seat in ((1, "X (1)"), (2, "O (2)")):
            c = ceiling(name, player)
            lines.append(f"{name:<9} {seat:<6} {c['win']:8.5f} {c['draw']:8.5f} {c['loss']:8.5f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_ceiling_table())
