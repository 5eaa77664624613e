"""The exact pass on m,n,k boards (lab/game/solver.py) against ground truths: lab.game's tables and
lab.evaluation.evaluate's exact figures on 3x3, a brute-force walk of small boards, and on 4x4 (slow) the
game's known value, a perfect player that never loses, and sampled random games."""

from math import comb

import numpy as np
import pytest

from lab import game
from lab.evaluation import evaluate
from lab.game import opponents
from lab.game import bitboards, measures, solver
from lab.bench.exact import report as exact_report
from references import optimal_moves


@pytest.fixture(scope="module")
def ttt():
    return solver.solve(3, 3, 3)


def codes(x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """lab.game's board codes of 3x3 bitboards (the cells are numbered alike)."""
    digits = [(x >> np.uint64(c) & np.uint64(1)) + 2 * (o >> np.uint64(c) & np.uint64(1)) for c in range(9)]
    return (np.stack(digits, axis=1).astype(np.int64) * game.POW3).sum(axis=1)


def test_3x3_positions_are_lab_games_reachable_ones_depth_by_depth(ttt):
    found = solver.counts(ttt)
    assert found["by_depth"] == [len(codes_) for codes_ in game.DEPTHS] and found["positions"] == 5478
    reachable = np.flatnonzero(game.REACHABLE)
    assert found["x_wins"] == (game.WINNER[reachable] == 1).sum() == 626
    assert found["o_wins"] == (game.WINNER[reachable] == -1).sum() == 316
    assert found["x_wins"] + found["o_wins"] + found["draws"] == game.TERMINAL[reachable].sum() == 958
    for depth, keys in enumerate(ttt.keys):
        assert (np.sort(codes(*solver.split(ttt, keys))) == game.DEPTHS[depth]).all()


def test_3x3_values_and_optimal_moves_are_lab_games(ttt):
    for keys, value in zip(ttt.keys, ttt.value):
        x, o = solver.split(ttt, keys)
        assert (value == game.VALUE[codes(x, o)]).all()
        for xi, oi, code in zip(x.tolist(), o.tolist(), codes(x, o)):
            assert optimal_moves(ttt, xi, oi) == np.flatnonzero(game.OPTIMAL[code]).tolist()


@pytest.mark.parametrize("name", measures.OPPONENTS)
@pytest.mark.parametrize("player", [1, 2])
def test_3x3_fixed_players_are_lab_opponents_move_tables(ttt, name, player):
    rows = codes(*measures.decisions(ttt, player))
    assert len(rows) == (game.TO_MOVE[game.DECISIONS] == (1 if player == 1 else -1)).sum()
    assert (measures.table(ttt, name, player) == opponents.table(name)[rows]).all()


def lab_policies():
    """Move tables over lab.game's codes: the fixed players and a greedy one of random scores."""
    scores = np.random.default_rng(7).normal(size=(len(game.DECISIONS), 9)).round(1)  # ties too
    return {"random": opponents.table("random"), "perfect": opponents.table("perfect"),
            "greedy": game.greedy_table(game.DECISIONS, scores)}


@pytest.mark.parametrize("player", [1, 2])
@pytest.mark.parametrize("name", ["random", "perfect", "greedy"])
def test_3x3_exact_figures_are_lab_evaluates_for_a_table_and_a_function(ttt, name, player):
    moves = lab_policies()[name]
    expected = evaluate.exact(moves, player)
    as_table = measures.exact(ttt, moves[codes(*measures.decisions(ttt, player))], player)
    as_function = measures.exact(ttt, lambda x, o: moves[codes(x, o)], player)
    assert as_table == as_function
    assert_evaluates_alike(as_table, expected)


def assert_evaluates_alike(measured: dict, expected: dict) -> None:
    """The exact pass's measures are lab.evaluation.evaluate's: every key, lines counted alike, shares and
    rates to rounding (the two passes sum in other orders)."""
    assert set(measured) == set(evaluate.KEYS) | {f"perfect_{r}" for r in measures.RESULTS}
    for key, value in expected.items():
        if evaluate.KEYS[key] is float:
            assert measured[key] == pytest.approx(value, abs=1e-12), key
        else:
            assert measured[key] == value and type(measured[key]) is type(value), key


@pytest.mark.parametrize("player", [1, 2])
def test_3x3_lines_and_optimal_rates_are_lab_evaluates_with_mixed_probabilities(ttt, player):
    rng = np.random.default_rng(player)
    for _ in range(6):  # random supports (ties, zeros) and probabilities on them
        weights = rng.random((game.N_CODES, 9)) * game.LEGAL * (rng.random((game.N_CODES, 9)) < 0.6)
        weights = np.where(weights.sum(axis=1, keepdims=True) > 0, weights, game.LEGAL)
        moves = weights / np.where(weights.sum(axis=1, keepdims=True) > 0, weights.sum(axis=1, keepdims=True), 1)
        measured = measures.exact(ttt, moves[codes(*measures.decisions(ttt, player))], player)
        assert_evaluates_alike(measured, evaluate.exact(moves, player))


def test_3x3_random_against_random_is_the_known_fraction(ttt):
    as_x = measures.exact(ttt, "random", 1)
    assert as_x["random_win"] == pytest.approx(737 / 1260, abs=1e-12)
    assert as_x["random_loss"] == pytest.approx(121 / 420, abs=1e-12)
    assert as_x["random_draw"] == pytest.approx(8 / 63, abs=1e-12)


def test_3x3_the_perfect_opponent_is_the_perfect_policy_seen_from_the_other_seat(ttt):
    for player in (1, 2):
        perfect = measures.exact(ttt, "perfect", player)
        random = measures.exact(ttt, "random", 3 - player)
        for ours, theirs in (("win", "loss"), ("draw", "draw"), ("loss", "win")):
            assert random[f"perfect_{ours}"] == pytest.approx(perfect[f"random_{theirs}"], abs=1e-12)
        assert perfect["perfect_draw"] == pytest.approx(1.0, abs=1e-12) and random["perfect_win"] == 0.0


def test_a_function_is_asked_only_where_the_game_reaches(ttt):
    asked = []
    perfect = opponents.table("perfect")

    def lowest_optimal(x, o):
        asked.extend(codes(x, o).tolist())
        return np.eye(9)[perfect[codes(x, o)].argmax(axis=1)]

    assert measures.exact(ttt, lowest_optimal, 1)["random_loss"] == 0.0
    assert len(asked) == len(set(asked)) < len(measures.decisions(ttt, 1)[0]) / 2
    assert game.BOARDS[asked[0]].tolist() == [0] * 9 and all(game.TO_MOVE[asked] == 1)


def brute_force(m, n, k):
    """{(depth, x, o): (winner, value)} of every reachable position, by a memoised walk."""
    shape, cells, found = bitboards.board(m, n, k), m * n, {}

    def visit(x, o, depth):
        if (depth, x, o) not in found:
            mover, values = 1 if depth % 2 == 0 else -1, []
            for cell in (c for c in range(cells) if not (x | o) >> c & 1):
                nx, no = (x | 1 << cell, o) if mover == 1 else (x, o | 1 << cell)
                if bitboards.wins(shape, np.uint64(nx if mover == 1 else no), cell):
                    found[depth + 1, nx, no] = (mover, mover)
                elif depth + 1 == cells:
                    found[depth + 1, nx, no] = (0, 0)
                else:
                    visit(nx, no, depth + 1)
                values.append(found[depth + 1, nx, no][1])
            found[depth, x, o] = (0, max(values) if mover == 1 else min(values))

    visit(0, 0, 0)
    return found


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (2, 2, 2), (3, 2, 2), (2, 3, 3), (4, 2, 3),
                                     (3, 3, 1), (2, 4, 2)])
def test_small_boards_match_a_brute_force_walk(m, n, k):
    solved, walked = solver.solve(m, n, k), brute_force(m, n, k)
    listed = {}
    for depth, keys in enumerate(solved.keys):
        x, o = solver.split(solved, keys)
        for xi, oi, winner, value in zip(x.tolist(), o.tolist(), solved.winner[depth], solved.value[depth]):
            listed[depth, xi, oi] = (int(winner), int(value))
    assert listed == walked
    assert solver.counts(solver.solve(2, 2, 2))["positions"] == 29  # a published count
    games = brute_games(bitboards.board(m, n, k), 0, 0, 0)  # X wins, O wins, draws
    for player, (won, lost) in ((1, (games[0], games[1])), (2, (games[1], games[0]))):
        measured = measures.exact(solved, "random", player)  # random's lines: every game
        assert (measured["winning_lines"], measured["losing_lines"], measured["drawing_lines"]) == \
            (won, lost, games[2])
        rate = measures.exact(solved, "perfect", player)["optimal_move_rate"]
        assert rate == pytest.approx(1.0, abs=1e-12) if player == 1 or k > 1 else np.isnan(rate)  # k=1: X wins at once, O never moves


def brute_games(shape, x, o, depth):
    """[X wins, O wins, draws]: the games from (x, o), every move sequence played out."""
    cells, mover, tally = shape.m * shape.n, depth % 2, np.zeros(3, np.int64)
    for cell in (c for c in range(cells) if not (x | o) >> c & 1):
        nx, no = (x | 1 << cell, o) if mover == 0 else (x, o | 1 << cell)
        if bitboards.wins(shape, np.uint64(no if mover else nx), cell):
            tally[mover] += 1
        elif depth + 1 == cells:
            tally[2] += 1
        else:
            tally += brute_games(shape, nx, no, depth + 1)
    return tally


@pytest.mark.parametrize("m, n, k, message", [
    (5, 5, 4, "the exact pass takes m * n at most 16 cells (4x4: 9.7 million positions; 20 cells: "
              "up to 740 million), got m=5, n=5: 25"),
    (9, 8, 4, "m * n must be at most 64 cells (a side's stones are one uint64), got m=9, n=8: 72"),
    (4, 4, 5, "k must be at most max(m, n) = 4 (no line of k cells fits), got 5"),
])
def test_boards_too_big_or_malformed_are_refused_in_one_line(m, n, k, message):
    with pytest.raises(ValueError) as refused:
        solver.solve(m, n, k)
    assert str(refused.value) == message


def test_bad_policies_and_seats_are_refused_in_one_line(ttt):
    table = measures.table(ttt, "random", 1)
    with pytest.raises(ValueError, match=r"^player must be 1 \(X, moves first\) or 2 \(O\), got 0$"):
        measures.exact(ttt, table, 0)
    with pytest.raises(ValueError, match=r"^unknown player 'block'; allowed: random, onestep, perfect$"):
        measures.exact(ttt, "block", 1)
    with pytest.raises(ValueError, match=r"^a move table for this seat has shape \(2423, 9\) "):
        measures.exact(ttt, table[1:], 1)
    with pytest.raises(ValueError, match=r"^a policy is one of random, onestep, perfect, a move table"):
        measures.exact(ttt, [0.5, 0.5], 1)
    table[5] = np.eye(9)[0]  # the 6th position where X moves has O on cell 0
    with pytest.raises(ValueError, match=r"^the policy's moves are not a probability distribution over "
                                         r"the empty cells at O\.\./\.\.X/\.\.\.: \[1\.0, 0\.0, "):
        measures.exact(ttt, table, 1)
    with pytest.raises(ValueError, match=r"shape \(9,\) for 1 positions, expected \(1, 9\)"):
        measures.exact(ttt, lambda x, o: np.ones(9) / 9, 1)


def test_unreachable_positions_are_refused(ttt):
    for x, o in ((0b11, 0), (1, 1), (1 << 9, 0), (1 << 70, 0)):  # two X, a shared cell, off the board
        with pytest.raises(ValueError, match=f"^no reachable position has X on {x:#x} and O on {o:#x}$"):
            optimal_moves(ttt, x, o)
    assert optimal_moves(ttt, 0b111, 0b11000) == []  # X has won: nothing to play


@pytest.fixture(scope="module")
def four():
    return solver.solve(4, 4, 4)


@pytest.mark.slow
def test_4x4_counts_and_its_value_a_draw(four):
    found = solver.counts(four)
    assert found["positions"] == 9_722_011 and len(found["by_depth"]) == 17
    for depth in range(7):  # no line before X's 4th stone: every placement is reachable
        assert found["by_depth"][depth] == comb(16, depth) * comb(depth, (depth + 1) // 2)
    assert (found["x_wins"], found["o_wins"], found["draws"]) == (401_096, 252_940, 5_356)
    assert four.value[0][0] == 0  # 4x4 with four in a row is a draw
    assert optimal_moves(four, 0, 0) == list(range(16))


@pytest.mark.slow
@pytest.mark.parametrize("player", [1, 2])
def test_4x4_the_perfect_player_never_loses(four, player):
    deterministic = measures.lowest_optimal(four, player)  # a function, as a greedy agent's
    for policy in ("perfect", deterministic):
        result = measures.exact(four, policy, player)
        assert result["random_loss"] == result["onestep_loss"] == result["perfect_loss"] == 0.0
        assert result["random_win"] > 0.5 and result["perfect_draw"] == pytest.approx(1.0, abs=1e-12)
    assert 0 < deterministic.asked < len(measures.decisions(four, player)[0]) / 100


@pytest.mark.slow
def test_4x4_random_against_random_matches_sampled_games(four):
    result = measures.exact(four, "random", 1)
    shares = np.array([result["random_win"], result["random_loss"], result["random_draw"]])
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)
    games = 200_000
    sampled = bitboards.random_games(4, 4, 4, games, seed=11) / games  # X wins, O wins, draws
    within = 4 * np.sqrt(shares * (1 - shares) / games)  # 4 standard errors: about 1 in 16,000 fails
    assert (abs(sampled - shares) < within).all(), (sampled, shares)


def test_a_board_too_big_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        solver.solve(5, 5, 4)
    assert str(refused.value) == ("the exact pass takes m * n at most 16 cells (4x4: 9.7 million "
                                  "positions; 20 cells: up to 740 million), got m=5, n=5: 25")


def test_the_benchmark_reports_counts_value_and_timings():
    lines = exact_report(3, 3, 3).splitlines()
    assert lines[0].startswith("3x3 k3: 5,478 positions, enumerated and solved in ")
    assert lines[2] == "terminal: 626 X wins, 316 O wins, 16 draws; value: +0 (X's view)"
    assert lines[4].split()[:5] == ["random", "X", lines[4].split()[2], "58.5/12.7/28.8", "39.5/8.3/52.2"]
    assert lines[-2].endswith("asked at 447 positions")
