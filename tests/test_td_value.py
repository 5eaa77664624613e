"""Write-up 003's afterstate value table (Sutton and Barto, chapter 1)."""

import numpy as np

from lab import game
from lab.agents import td_value
from lab.evaluation.evaluate import exact


def test_tiny_run_and_checkpoint(run_and_restore):
    for opponent, player in (("random", 1), ("onestep", 2), ("self", 1)):
        run_and_restore("algorithm=td_value", f"opponent={opponent}", f"player={player}",
                        "episodes_per_update=50", "iterations=4", "seed=1")


def test_only_the_agents_afterstates_learn_and_final_positions_stay_fixed(make_learner):
    learner = make_learner("td_value", "opponent=random", "player=2", "draw_value=0.25",
                           "episodes_per_update=5000", "iterations=1", train=True)
    changed = np.flatnonzero(learner.values != td_value.initial_values(0.25))
    assert changed.size > 500
    marks = game.BOARDS[changed]
    assert ((marks == 1).sum(axis=1) == (marks == -1).sum(axis=1)).all()  # O just moved
    assert not game.TERMINAL[changed].any()
    final = game.TERMINAL
    assert np.array_equal(learner.values[final], np.where(game.WINNER[final] != 0, 1.0, 0.25))


def test_beats_random_as_x(make_learner):
    """Issue 3: greedy play as X against random wins at least 97% (exactly evaluated), with the
    book's settings: alpha 0.1, epsilon 0.1, a draw worth 0 like a loss."""
    learner = make_learner("td_value", "opponent=random", "player=1", "alpha=0.1", "epsilon=0.1",
                           "draw_value=0", "episodes_per_update=1000", "iterations=100", "seed=0", train=True)
    result = exact(learner.agent(), 1)
    assert result["random_win"] >= 0.97, result


def test_self_play_never_loses_in_either_seat(make_learner):
    """Self-play at the book's step and exploration with a draw worth half a win: the one table plays both seats without a losing
    line against any opponent."""
    learner = make_learner("td_value", "opponent=self", "alpha=0.1", "epsilon=0.1", "draw_value=0.5",
                           "episodes_per_update=1000", "iterations=100", "seed=0", train=True)
    for seat in (1, 2):
        result = exact(learner.agent(), seat)
        assert result["never_loses"], (seat, result)


def test_end_of_game_rule_moves_every_afterstate_by_one_over_the_moves(make_learner):
    """Write-up 003's rule (update=end_of_game): after one game, each learning side's afterstates
    moved by +1/len(visited) for the winner and -1/len(visited) for the other side (a draw
    counts as not winning), explored moves included; finished positions stay fixed."""
    for seed in range(6):
        learner = make_learner("td_value", "opponent=self", "update=end_of_game", "epsilon=0.5", "draw_value=0",
                               "episodes_per_update=1", f"seed={seed}")
        tally = learner.iterate()
        start = td_value.initial_values(0.0)
        changed = np.flatnonzero(learner.values != start)
        delta = learner.values[changed] - start[changed]
        x_moved = (game.BOARDS[changed] == 1).sum(axis=1) > (game.BOARDS[changed] == -1).sum(axis=1)
        moves = (game.BOARDS[changed] != 0).sum(axis=1).max() + 1  # the last one is unchanged
        x_moves, o_moves = (moves + 1) // 2, moves // 2
        x_won, o_won = tally[0] == 1, tally[1] == 1
        assert not game.TERMINAL[changed].any()
        assert np.allclose(delta[x_moved], (1.0 if x_won else -1.0) / x_moves)
        assert np.allclose(delta[~x_moved], (1.0 if o_won else -1.0) / o_moves)
        # every move but the last (a finished position) changed its afterstate
        assert len(changed) == x_moves + o_moves - 1


def test_update_knob_is_validated():
    import pytest
    from lab.config.compose import compose
    from lab.config.jobs import job
    from lab.knobs import ConfigError
    with pytest.raises(ConfigError, match="update='sarsa' is not allowed: update must be one of td, end_of_game"):
        job(compose("algorithm=td_value", "update=sarsa"))
