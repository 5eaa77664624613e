"""Write-up 001's tabular Q learner: its update rules, the notebook's numbers, the issue's threshold."""

import numpy as np

from lab import game
from lab.evaluation.evaluate import exact


def test_tiny_run_and_checkpoint(run_and_restore):
    for player in (1, 2):
        run_and_restore("algorithm=q_table", "opponent=onestep", f"player={player}",
                        "episodes_per_update=50", "iterations=4", "seed=1")


def test_moves_that_end_the_game_get_their_certain_value(make_learner):
    """A winning move of the agent is set to exactly 1, a move that fills the board to 0."""
    learner = make_learner("q_table", "opponent=random", "player=1", "episodes_per_update=2000",
                           "iterations=1", train=True)
    codes, moves = np.nonzero(learner.q)
    wins = game.WINNER[game.AFTER[codes, moves]] == 1
    assert wins.sum() > 100 and (learner.q[codes[wins], moves[wins]] == 1).all()
    fills = game.LEGAL & (game.WINNER[np.maximum(game.AFTER, 0)] == 0) & game.TERMINAL[game.AFTER]
    assert (learner.q[fills] == 0).all()
    # only X's own moves are in the table: O's positions were never updated
    assert (game.TO_MOVE[codes] == 1).all()


def test_notebook_setting_reproduces_its_training_results(make_learner):
    """The notebook: 10,000 games as X against random, rho 0.5, epsilon 1 x 0.999 per game;
    it reports 8958 X wins / 556 O wins / 486 draws. Five seeds average close to that."""
    totals = np.mean([make_learner("q_table", "opponent=random", "player=1", "alpha=0.5",
                                   "epsilon_decay_per_game=0.999", "episodes_per_update=10000",
                                   f"seed={seed}").iterate()
                      for seed in range(5)], axis=0)
    assert 8750 <= totals[0] <= 9150 and 450 <= totals[1] <= 700 and 400 <= totals[2] <= 650, totals


def test_beats_random_as_x(make_learner):
    """Issue 3: greedy play as X against random wins at least 97% (exactly evaluated)."""
    learner = make_learner("q_table", "opponent=random", "player=1",
                           "epsilon_decay_per_game=0.9999", "episodes_per_update=1000",
                           "iterations=100", "seed=0", train=True)
    result = exact(learner.agent(), 1)
    assert result["random_win"] >= 0.97, result
