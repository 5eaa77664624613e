"""The m,n,k engine (lab/game/bitboards.py) against ground truths: every 3x3 game enumerated with it, and
lab.game's tables on every reachable 3x3 position; its win check against a brute-force walk on
bigger and non-square boards; seeded random games; bad shapes refused."""

import numpy as np
import pytest

from lab import game
from lab.game import bitboards


def enumerate_games(shape):
    """Every complete game from the empty board, played with the engine: ([X wins, O wins, draws]
    of the games, {(x, o): (terminal, winner)} of every position reached). Positions are memoised,
    their game counts summed over the moves that reach them."""
    cells = shape.m * shape.n
    status = {(0, 0): (False, 0)}
    games_from = {}

    def count(x, o, ply):
        if (x, o) not in games_from:
            tally = np.zeros(3, dtype=np.int64)
            empty = int(bitboards.empty_mask(shape, np.uint64(x), np.uint64(o)))
            for cell in (c for c in range(cells) if empty >> c & 1):
                mover = 1 if ply % 2 == 0 else -1
                nx, no = (x | 1 << cell, o) if mover == 1 else (x, o | 1 << cell)
                if bitboards.wins(shape, np.uint64(nx if mover == 1 else no), cell):
                    status[nx, no] = (True, mover)
                    tally[0 if mover == 1 else 1] += 1
                elif ply + 1 == cells:
                    status[nx, no] = (True, 0)
                    tally[2] += 1
                else:
                    status[nx, no] = (False, 0)
                    tally += count(nx, no, ply + 1)
            games_from[x, o] = tally
        return games_from[x, o]

    return count(0, 0, 0), status


def test_every_3x3_game_enumerated_with_the_engine_matches_the_ground_truth():
    tally, _ = enumerate_games(bitboards.board(3, 3, 3))
    assert tally.tolist() == [131_184, 77_904, 46_080] and tally.sum() == 255_168


def test_every_reachable_3x3_position_agrees_with_lab_games_tables():
    _, status = enumerate_games(bitboards.board(3, 3, 3))
    codes = {}
    for (x, o), said in status.items():
        cells = [1 if x >> c & 1 else -1 if o >> c & 1 else 0 for c in range(9)]
        codes[game.encode(cells)] = said
    assert sorted(codes) == np.flatnonzero(game.REACHABLE).tolist()  # 5,478 positions, each once
    assert len(codes) == len(status) == 5478
    for code, (terminal, winner) in codes.items():
        assert (terminal, winner) == (bool(game.TERMINAL[code]), int(game.WINNER[code])), game.BOARDS[code]


def brute_force_wins(grid, row, col, k):
    """Whether the stone at (row, col) is in k of its own in a row: walk each way from it."""
    rows, cols = len(grid), len(grid[0])
    for d_row, d_col in ((0, 1), (1, 0), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            r, c = row + sign * d_row, col + sign * d_col
            while 0 <= r < rows and 0 <= c < cols and grid[r][c] == grid[row][col]:
                run, r, c = run + 1, r + sign * d_row, c + sign * d_col
        if run >= k:
            return True
    return False


@pytest.mark.parametrize("m, n, k", [(4, 4, 4), (5, 5, 4), (7, 6, 4), (8, 8, 5)])
def test_the_win_check_agrees_with_a_brute_force_walk_on_random_positions(m, n, k):
    shape, rng = bitboards.board(m, n, k), np.random.default_rng(m * 100 + n * 10 + k)
    outcomes = []
    for _ in range(3000):
        grid = rng.choice([0, 1, -1], size=(n, m), p=rng.dirichlet([1, 1, 1])).tolist()
        row, col = int(rng.integers(n)), int(rng.integers(m))
        grid[row][col] = 1  # X just moved there
        x = sum(1 << (r * m + c) for r in range(n) for c in range(m) if grid[r][c] == 1)
        engine = bitboards.wins(shape, np.uint64(x), row * m + col)
        assert engine == brute_force_wins(grid, row, col, k), (grid, row, col)
        outcomes.append(engine)
    assert 300 < sum(outcomes) < 2700  # both answers are tested, many times


def test_random_games_are_reproducible_by_seed_and_uniform():
    first = bitboards.random_games(5, 5, 4, 2000, seed=3)
    assert first.sum() == 2000 and (first == bitboards.random_games(5, 5, 4, 2000, seed=3)).all()
    assert (first != bitboards.random_games(5, 5, 4, 2000, seed=4)).any()
    shares = bitboards.random_games(3, 3, 3, 100_000, seed=0) / 100_000
    np.testing.assert_allclose(shares, [737 / 1260, 121 / 420, 8 / 63], atol=0.01)  # exact for random play


def test_empty_mask_is_the_legal_moves():
    shape = bitboards.board(8, 8, 5)
    x, o = np.uint64(1 << 63 | 1), np.uint64(1 << 9)
    empty = int(bitboards.empty_mask(shape, x, o))
    assert [c for c in range(64) if not empty >> c & 1] == [0, 9, 63]


@pytest.mark.parametrize("m, n, k, message", [
    (0, 3, 3, "m (columns) must be a positive integer, got 0"),
    (3, -1, 3, "n (rows) must be a positive integer, got -1"),
    (3, 3, 3.0, "k (stones in a row) must be a positive integer, got 3.0"),
    (9, 8, 4, "m * n must be at most 64 cells (a side's stones are one uint64), got m=9, n=8: 72"),
    (4, 3, 5, "k must be at most max(m, n) = 4 (no line of k cells fits), got 5"),
])
def test_bad_shapes_are_refused_in_one_line(m, n, k, message):
    with pytest.raises(ValueError) as refused:
        bitboards.random_games(m, n, k, 10, seed=0)
    assert str(refused.value) == message


def test_a_negative_number_of_games_is_refused():
    with pytest.raises(ValueError, match="games must be a non-negative integer, got -1"):
        bitboards.random_games(3, 3, 3, -1, seed=0)
