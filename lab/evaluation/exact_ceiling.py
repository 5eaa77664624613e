"""The ceiling on the m,n,k boards lab.game.solver solves (at most 16 cells): the best win/draw/loss
a perfect player reaches against random, onestep and perfect, per seat.

At its own positions the player keeps the minimax value (a perfect player never gives a result
away) and among those moves maximises its expected (win - loss) under the opponent's moves (as
lab.game.measures has them play), then the win (within TIE_TOLERANCE), then takes the lowest
cell: one backward pass over the solved depths per opponent and seat. Against onestep the
ceiling is random's: a player that keeps the value never leaves an immediate win.

4x4 k4's figures are stored in KNOWN (tests/test_perfect.py computes them again), so figures
never solve the board; `python -m lab.evaluation.exact_ceiling [m n k]` computes and times any board's.
"""

import functools
import resource
import time

import numpy as np
from numba import njit

from lab import cli
from lab.game import measures, solver

TIE_TOLERANCE = 1e-12
"""Expected values closer than this count as equal (sums of the same rationals, rounded)."""
KNOWN = {
    (4, 4, 4): {
        ("random", 1): {"win": 0.9928649128649131, "draw": 0.007135087135087135, "loss": 0.0},
        ("random", 2): {"win": 0.9745892237103172, "draw": 0.02541077628968253, "loss": 0.0},
        ("onestep", 1): {"win": 0.9928649128649131, "draw": 0.007135087135087135, "loss": 0.0},
        ("onestep", 2): {"win": 0.9745892237103172, "draw": 0.02541077628968253, "loss": 0.0},
        ("perfect", 1): {"win": 0.0, "draw": 0.9999999999999997, "loss": 0.0},
        ("perfect", 2): {"win": 0.0, "draw": 0.9999999999999999, "loss": 0.0},
    },
}
"""Computed ceilings (`python -m lab.evaluation.exact_ceiling 4 4 4`): {(opponent, seat): {win, draw, loss}}"""


@njit(cache=True)
def _outcomes(kind, side, mover, winner, children, value, value_next, winner_next, after, tolerance):
    """The (win, draw, loss) from `side`'s view of one depth's positions given `after`, the next
    depth's: terminal ones by their winner, the player's by its best value-keeping move, the
    opponent's (OPPONENTS[kind], `mover` here) by its move weights."""
    out = np.zeros((len(winner), 3))
    weights = np.empty(children.shape[1])
    for i in range(len(winner)):
        if winner[i] != 0:
            out[i, 0 if winner[i] == side else 2] = 1.0
            continue
        row = children[i]
        if mover == side:
            best_score = -np.inf
            for j in range(len(row)):
                if value_next[row[j]] == value[i]:
                    best_score = max(best_score, after[row[j], 0] - after[row[j], 2])
            best, best_win = -1, -np.inf
            for j in range(len(row)):
                child = row[j]
                if value_next[child] == value[i] and after[child, 0] - after[child, 2] >= \
                        best_score - tolerance and after[child, 0] > best_win:
                    best, best_win = child, after[child, 0]
            out[i] = after[best]
        else:
            # the exact pass's own move weights, so the opponents mean the same here
            measures._fixed_weights(kind, row, mover, value[i], value_next, winner_next, weights)
            for j in range(len(row)):
                out[i] += weights[j] * after[row[j]]
    return out


def _ceiling(solved: solver.Solved, opponent: str, player: int) -> dict:
    side, last = (1 if player == 1 else -1), len(solved.winner) - 1
    winner = solved.winner[last]  # every position is over: a line, or a full board drawn
    after = np.stack([winner == side, winner == 0, winner == -side], axis=1).astype(np.float64)
    for depth in range(len(solved.children) - 1, -1, -1):
        after = _outcomes(measures.OPPONENTS.index(opponent), side, 1 if depth % 2 == 0 else -1,
                          solved.winner[depth], solved.children[depth], solved.value[depth],
                          solved.value[depth + 1], solved.winner[depth + 1], after,
                          TIE_TOLERANCE)
    return dict(zip(measures.RESULTS, after[0].tolist()))


@functools.lru_cache(maxsize=4)
def computed(m: int, n: int, k: int) -> dict:
    """{(opponent, seat): {win, draw, loss}} on the m,n,k board: solved, a pass per opponent and seat."""
    solved = solver.solve(m, n, k)
    return {(opponent, player): _ceiling(solved, opponent, player)
            for opponent in measures.OPPONENTS for player in (1, 2)}


def ceiling(game: tuple, opponent: str, player: int) -> dict | None:
    """The ceiling {win, draw, loss} of seat `player` against `opponent` on board game = (m, n, k),
    None on a board the lab does not solve or against an opponent it does not model."""
    m, n, k = game
    if m * n > solver.MAX_CELLS or opponent not in measures.OPPONENTS:
        return None
    return (KNOWN[(m, n, k)] if (m, n, k) in KNOWN else computed(m, n, k))[(opponent, player)]


@cli.one_line()  # a full disk or a closed pipe on stdout: one line
def main(argv=None) -> None:
    """`python -m lab.evaluation.exact_ceiling [m n k]`: a board's ceilings, timed."""
    parser = cli.ArgumentParser(prog="python -m lab.evaluation.exact_ceiling", description=(
        "Solve an m,n,k board (at most 16 cells) and compute the ceiling: the best win/draw/loss "
        "of a perfect player against random, onestep and perfect, per seat; timed."))
    parser.add_argument("m", type=int, nargs="?", default=4, help="columns (default 4)")
    parser.add_argument("n", type=int, nargs="?", help="rows (default m)")
    parser.add_argument("k", type=int, nargs="?", help="stones in a row that win (default the shorter side)")
    args = parser.parse_args(argv)
    args.n = args.m if args.n is None else args.n
    args.k = min(args.m, args.n) if args.k is None else args.k
    try:
        solver.check_size(args.m, args.n, args.k)
    except ValueError as refused:
        parser.error(str(refused))
    peak_mb = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    started = time.perf_counter()
    solver.solve(args.m, args.n, args.k)
    solved_at = time.perf_counter()
    found = computed(args.m, args.n, args.k)
    print(f"{args.m}x{args.n} k{args.k}: solved in {solved_at - started:.1f} s, ceilings in "
          f"{time.perf_counter() - solved_at:.1f} s; peak RSS {peak_mb():.0f} MB")
    print(f"{'opponent':<9} {'seat':<6} {'win':>19} {'draw':>22} {'loss':>22}")
    for (opponent, player), c in found.items():
        print(f"{opponent:<9} {'XO'[player - 1]} ({player})  "
              + " ".join(f"{c[r]!r:>22}" for r in measures.RESULTS))


if __name__ == "__main__":
    main()
