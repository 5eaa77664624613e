"""The perfect bot on the boards the lab solves (lab.game.bots, from lab.game.solver's solution): its
moves are the value-keeping ones, it never loses, its games agree with the exact pass; a learner
trains against it through the bots' route; boards it cannot play on refuse it in one line. The
ceiling on those boards (lab.evaluation.exact_ceiling): 3x3's through lab.game.solver is lab.evaluation.evaluate's,
4x4's stored figures are the computed ones. 3x3 first, then 4x4: the solve is one board at a time."""

import numpy as np
import pytest

from lab.evaluation import evaluate, exact_ceiling
from lab.results import columns
from lab.game import bitboards, bots, measures, solver
from lab.config.compose import compose
from lab.config.jobs import job
from lab.game.bots import bot, moves, play_match
from lab.evaluation.evaluate import outcome_rates
from lab.run import run
from references import optimal_moves

FOUR = bitboards.board(4, 4, 4)


def test_its_moves_are_every_value_keeping_move_on_3x3():
    """The table holds, for every open position, exactly references.optimal_moves."""
    solved = solver.solve(3, 3, 3)
    keys, masks, starts = bots.perfect_table(3, 3, 3)
    assert len(keys) == sum(int((w == 0).sum()) for w in solved.winner[:len(solved.children)])
    for depth in range(len(starts) - 1):
        for key, mask in zip(keys[starts[depth]:starts[depth + 1]], masks[starts[depth]:starts[depth + 1]]):
            x, o = int(key) & 511, int(key) >> 9
            assert bin(x | o).count("1") == depth
            assert [c for c in range(9) if int(mask) >> c & 1] == optimal_moves(solved, x, o)


def test_it_draws_its_moves_uniformly_among_the_optimal_ones():
    x, o = 0b000010000, 0  # X in the centre: O's only value-keeping moves are the four corners
    drawn = {moves(bitboards.board(3, 3, 3), bot("perfect"), x, o, seed)[0] for seed in range(40)}
    assert drawn == {0, 2, 6, 8}


def test_the_3x3_ceiling_through_the_exact_pass_is_lab_evaluates():
    computed = exact_ceiling.computed(3, 3, 3)
    for opponent in evaluate.OPPONENTS:
        for seat in (1, 2):
            assert computed[(opponent, seat)] == pytest.approx(evaluate.ceiling(opponent, seat), abs=1e-12)
    assert computed[("random", 1)]["win"] == pytest.approx(191 / 192, abs=1e-12)  # win 0.99479
    for seat in (1, 2):  # against perfect play, the game's value: a draw
        assert computed[("perfect", seat)] == pytest.approx({"win": 0, "draw": 1, "loss": 0})


def test_a_ceiling_only_where_the_lab_solves_the_board():
    assert exact_ceiling.ceiling((5, 5, 4), "random", 1) is None
    assert exact_ceiling.ceiling((4, 4, 4), "block", 1) is None
    assert exact_ceiling.ceiling((4, 4, 4), "random", 2) == exact_ceiling.KNOWN[(4, 4, 4)][("random", 2)]


def test_on_4x4_it_draws_itself_never_loses_and_matches_the_exact_pass():
    assert play_match(FOUR, bot("perfect"), bot("perfect"), 300, 0).tolist() == [0, 0, 300]
    solved = solver.solve(4, 4, 4)
    for seat, players in ((1, (bot("perfect"), bot("random"))), (2, (bot("random"), bot("perfect")))):
        rates = outcome_rates(play_match(FOUR, *players, 2_000, seat), seat)
        assert rates["loss"] == 0
        assert rates["win_low"] <= measures.exact(solved, "perfect", seat)["random_win"] <= rates["win_high"]


def test_a_board_it_cannot_play_on_refuses_it_in_one_line():
    with pytest.raises(ValueError, match=r"^the perfect bot plays only on boards the lab solves "
                                         r"\(at most 16 cells\), got m=5, n=5$"):
        play_match(bitboards.board(5, 5, 4), bot("perfect"), bot("random"), 1, 0)
    five = bitboards.board(5, 5, 4)
    assert bots.tree(five, 1).solved_keys.size == 0  # nothing solved there
    assert bots.tree(FOUR, 1, perfect=False).solved_keys.size == 0
    with pytest.raises(ValueError, match="^the perfect bot needs the board solved"):  # a learner's route
        bots.bot_move(five, bots.tree(five, 1), bots.PERFECT, 0, np.uint64(0), np.uint64(0), 0)


def test_evaluation_columns_gain_nothing_from_it():
    """perfect is evaluated exactly where it plays: no by-games columns for it."""
    assert [key for key in evaluate.BOARD_KEYS if key.startswith("perfect")] == \
        ["perfect_win", "perfect_draw", "perfect_loss"]
    assert "eval_p1_perfect_games" not in dict(columns.BOARDS) and "eval_p2_perfect_win" in dict(columns.BOARDS)
    assert evaluate.BOARD_OPPONENTS == ("random", "onestep", "perfect", "block", "mcts")


def test_mc_vfa_trains_against_it_on_4x4():
    rows = run(job(compose("game=mnk_4_4_4", "opponent=perfect", "player=1", "layers=1",
                           "neurons=8", "iterations=4", "episodes_per_update=5", "eval_every=4"))).rows
    assert rows["p1_wins"].sum() == 0 and rows[["p2_wins", "draws"]].sum().sum() == 20
    last = rows.iloc[-1]
    assert last["evaluation"] == "exact" and last["eval_p1_perfect_win"] == 0
    assert np.isclose(last[[f"eval_p1_random_{r}" for r in ("win", "draw", "loss")]].sum(), 1)


@pytest.mark.slow
def test_the_stored_4x4_ceilings_are_the_computed_ones():
    """About 10 s: 4x4 solved (shared with the tests above) and six backward passes."""
    computed, known = exact_ceiling.computed(4, 4, 4), exact_ceiling.KNOWN[(4, 4, 4)]
    assert computed.keys() == known.keys()
    for key, rates in known.items():
        assert computed[key] == pytest.approx(rates, abs=1e-12), key
