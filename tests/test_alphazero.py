import time

import numpy as np
import pytest

from lab import game
from lab.agents import alphazero
from lab.compose import compose
from lab.config import parse
from lab.knobs import ConfigError
from lab.evaluate import exact
from lab.nets import MLP

TINY = ("algorithm=alphazero", "opponent=self", "episodes_per_update=6", "iterations=2",
        "simulations=12", "train_steps=5", "gating_games=4", "seed=5")


def _untrained_agent(simulations=50):
    net = MLP([9, 32, 10], np.random.default_rng(0), output="linear")
    return alphazero.Agent(net, simulations, 1.5)


def test_tiny_run_rows_and_checkpoint_round_trip(run_and_restore):
    # the search is deterministic, so a retrained agent's scores match the checkpoint's exactly
    loaded, rows = run_and_restore(*TINY)
    assert (rows["simulations"] == 12).all()
    assert loaded.simulations == 12


def test_seed_002s_relu_net_with_its_12_output_head(run_and_restore):
    """activation=relu head=mse12: the run, its checkpoint and the restored agent's search."""
    loaded, rows = run_and_restore(*TINY, "activation=relu", "head=mse12")
    assert loaded.net.hidden == "relu" and loaded.net.weights[-1].shape[1] == 12
    assert (rows["head"] == "mse12").all()


def test_the_12_output_head_reads_priors_and_values():
    """[win, draw, loss] of the mover, then 9 moves: priors are the legal moves' outputs floored
    and normalised, the value win - loss clipped."""
    outputs = np.array([[0.9, 0.2, 0.1, 0.5, -0.2, 0.5, 0, 0, 0, 0, 0, 0.2],
                        [0.0, 0.0, 1.5, 1.0, 1.0, 0, 0, 0, 0, 0, 0, 0]])
    legal = np.zeros((2, 9), dtype=bool)
    legal[0, [0, 1, 2]] = legal[1, [0, 1]] = True
    priors, values = alphazero.priors_and_values(outputs, legal)
    floor = alphazero.PRIOR_FLOOR
    np.testing.assert_allclose(priors[0, :3], np.array([0.5, floor, 0.5]) / (1 + floor))
    np.testing.assert_allclose(priors[1, :2], [0.5, 0.5])
    assert (priors[:, 3:][~legal[:, 3:]] == 0).all()
    np.testing.assert_allclose(values, [0.8, -1.0])


def test_search_counts_are_visits_of_legal_moves():
    agent = _untrained_agent(simulations=40)
    codes = game.DECISIONS[::50]
    counts = agent.scores(codes)
    assert (counts.sum(axis=1) == 40).all()
    assert not counts[~game.LEGAL[codes]].any()


def test_search_never_lets_an_immediate_win_go_even_with_an_untrained_net():
    """Terminal values are exact and backed up with the right sign for both sides: where the side
    to move can win at once, it plays a move that keeps the win (that move, or a double threat)."""
    moves = _untrained_agent().move_table()
    codes = game.DECISIONS
    after = np.maximum(game.AFTER[codes], 0)
    wins = game.LEGAL[codes] & (game.WINNER[after] == game.TO_MOVE[codes][:, None])
    has_win = wins.any(axis=1)
    assert has_win.sum() > 2000
    keeps_win = (moves[codes[has_win]] * game.OPTIMAL[codes[has_win]]).sum(axis=1)
    assert keeps_win == pytest.approx(1.0)


def test_search_with_exact_leaf_values_plays_perfectly():
    """With minimax values at the leaves (and flat priors) the search keeps the game value at
    every position both seats can reach: the search and its backups are right."""
    agent = _untrained_agent(simulations=25)
    agent.priors = game.uniform_over(game.LEGAL)
    agent.values = (game.VALUE * game.TO_MOVE).astype(np.float64)
    moves = agent.move_table()
    for seat in (1, 2):
        result = exact(moves, seat)
        assert result["never_loses"] and result["optimal_move_rate"] == 1.0


def test_symmetric_images_carry_the_policy_with_the_board():
    """An image of a position with its optimal-move mask as policy is the image's optimal mask."""
    codes = np.repeat(game.DECISIONS, 8)
    images = np.tile(np.arange(8), len(game.DECISIONS))
    image_codes, image_policies = alphazero.symmetric_images(codes, game.OPTIMAL[codes] * 1.0, images)
    assert game.REACHABLE[image_codes].all()
    assert np.array_equal(image_policies, game.OPTIMAL[image_codes] * 1.0)


def test_against_a_fixed_opponent_only_its_own_seat_is_learned(make_learner):
    learner = make_learner("alphazero", "opponent=random", "player=2", "episodes_per_update=10",
                           "iterations=1", "simulations=10", "train_steps=2", "gating_games=2")
    tally = learner.iterate()
    assert tally.sum() == 10 and len(learner.codes) > 0
    assert (game.TO_MOVE[learner.codes] == -1).all()  # O's positions only
    assert np.allclose(learner.policies.sum(axis=1), 1.0)
    assert set(np.unique(learner.outcomes)) <= {-1.0, 0.0, 1.0}


def test_window_keeps_only_the_most_recent_games(make_learner):
    learner = make_learner("alphazero", "opponent=self", "episodes_per_update=10", "window=15",
                           "simulations=8", "train_steps=1", "gating_games=0")
    for _ in range(3):
        learner.iterate()
    assert learner.games == 30
    assert set(np.unique(learner.game_ids)) == set(range(15, 30))


def test_bad_knobs_are_refused():
    with pytest.raises(ConfigError, match="dirichlet_weight"):
        parse(compose("algorithm=alphazero", "dirichlet_weight=1.5"))
    with pytest.raises(ConfigError, match="temperature_moves"):
        parse(compose("algorithm=alphazero", "temperature_moves=10"))
    with pytest.raises(ConfigError, match="activation='sigmoid' is not allowed: activation must be tanh or relu"):
        parse(compose("algorithm=alphazero", "activation=sigmoid"))
    with pytest.raises(ConfigError, match="head='mse' is not allowed: head must be one of softmax_value, mse12"):
        parse(compose("algorithm=alphazero", "head=mse"))


@pytest.mark.slow
def test_self_play_never_loses_in_either_seat(make_learner):
    """Issue 3: trained in self-play in at most 10 minutes on 2 cores, the agent never loses as X
    or as O against every opponent reply (exact enumeration). Defaults of alphazero.yaml."""
    learner = make_learner("alphazero", "opponent=self", "seed=3")
    start = time.perf_counter()
    for _ in range(learner.run.iterations):
        learner.iterate()
    seconds = time.perf_counter() - start
    agent = learner.agent()
    results = [exact(agent, seat) for seat in (1, 2)]
    assert [r["losing_lines"] for r in results] == [0, 0], results
    assert seconds < 600
