"""Write-up 004's negamax Q learner: the update's signs and shaped rewards, single agents, ensembles."""

import numpy as np
import pytest

from lab import game
from lab.game import opponents
from lab.game import engine
from lab.agents import negamax_q
from lab.evaluation.evaluate import exact


def test_tiny_run_and_checkpoint(run_and_restore):
    for opponent, ensemble in (("self", 1), ("self", 3), ("random", 1)):
        run_and_restore("algorithm=negamax_q", f"opponent={opponent}", f"ensemble={ensemble}",
                        "player=2", "episodes_per_update=50", "iterations=4", "seed=1")


def one_game(q, alpha, gamma, loss_reward, draw_reward):
    """Train a fresh table on one self-play game; return its result (1, -1 or 0)."""
    params = negamax_q.Params(x_plays_table=True, o_plays_table=True, alpha=alpha, gamma=gamma,
                              epsilon=1.0, loss_reward=loss_reward, draw_reward=draw_reward,
                              reward_decay=0.5, ensemble=1, per_game=9)
    tally = np.zeros(3, np.int64)
    negamax_q.train(engine.TTT, q[None], opponents.for_training("self"), 0, 1, params, tally)
    return (1, -1, 0)[int(np.argmax(tally))]


def test_first_game_updates_from_the_end_with_the_opponents_best_reply_subtracted():
    """On a fresh table, updated last move first: the final move gets alpha * (its reward); the
    move before it gets alpha * (its reward - gamma * the final move's new Q)."""
    alpha, gamma, loss_reward, draw_reward = 0.5, 0.9, -1e10, 0.1
    game.seed_kernels(0)
    results = set()
    for _ in range(20):
        q = np.zeros((game.N_CODES, 9))
        result = one_game(q, alpha, gamma, loss_reward, draw_reward)
        results.add(result)
        codes, moves = np.nonzero(q)
        final = game.TERMINAL[game.AFTER[codes, moves]]
        assert final.sum() == 1
        last_q = q[codes[final], moves[final]][0]
        before_last = alpha * ((loss_reward if result else draw_reward) - gamma * last_q)
        assert last_q == alpha * (1.0 if result else draw_reward)
        assert np.isclose(q[codes, moves], before_last, rtol=1e-12).sum() == 1
    assert results == {1, -1, 0}


def test_single_agent_never_loses_as_x(make_learner):
    """Issue 3: one table from 100,000 self-play games; no line of play beats it as X."""
    learner = make_learner("negamax_q", "opponent=self", "episodes_per_update=1000",
                           "iterations=100", "seed=0", train=True)
    result = exact(learner.agent(), 1)
    assert result["never_loses"], result


def test_ensemble_of_five_never_loses_in_either_seat(make_learner):
    """Issue 3: five tables of 100,000 self-play games each, summed; no line of play beats it,
    as X or as O."""
    agent = make_learner("negamax_q", "opponent=self", "ensemble=5", "episodes_per_update=5000",
                         "iterations=100", "seed=0", train=True).agent()
    for seat in (1, 2):
        result = exact(agent, seat)
        assert result["never_loses"], (seat, result)


def test_an_ensemble_is_measured_at_every_size(make_learner, tmp_path):
    """The agent of an ensemble keeps its members (through its checkpoint too); by_size gives
    exact() of the sum of the first k members for every k, in both seats."""
    from lab import agents
    learner = make_learner("negamax_q", "opponent=self", "ensemble=3", "episodes_per_update=300",
                           "seed=2")
    learner.iterate()
    agent = learner.agent()
    assert agent.members.shape == (3, game.N_CODES, 9)
    np.testing.assert_array_equal(agent.members.sum(axis=0), agent.table)
    path = tmp_path / "ensemble.npz"
    agent.save(path)
    restored = agents.load(path)
    np.testing.assert_array_equal(restored.members, agent.members)
    sizes = negamax_q.by_size(restored)
    assert [(d["members"], d["seat"]) for d in sizes] == [(k, s) for k in (1, 2, 3) for s in (1, 2)]
    for d in sizes:
        expected = exact(negamax_q.Agent(agent.members[:d["members"]].sum(axis=0)), d["seat"])
        assert {k: d[k] for k in expected} == expected
    assert make_learner("negamax_q", "ensemble=1").agent().members is None  # one table: no copy


@pytest.mark.parametrize("game, evaluation", [("mnk_4_4_4", "exact"), ("mnk_5_5_4", "games")])
def test_an_ensemble_is_measured_at_every_size_on_a_bigger_board(make_learner, tmp_path, game, evaluation):
    """Off 3x3 the members are the table's rows side by side: by_size measures the first k of them
    as a run's evaluation would (exactly on 4x4, by games on 5x5), through the checkpoint too."""
    from lab import agents
    from lab.evaluation import evaluate
    from lab.knobs import RunConfig
    learner = make_learner("negamax_q", f"game={game}", "opponent=self", "ensemble=3", "episodes_per_update=200",
                           "seed=2")
    learner.iterate()
    path = tmp_path / "ensemble.npz"
    learner.agent().save(path)
    restored = agents.load(path)
    sizes = negamax_q.by_size(restored, games=200, seed=5)
    assert [(d["members"], d["seat"]) for d in sizes] == [(k, s) for k in (1, 2, 3) for s in (1, 2)]
    whole = RunConfig(algorithm="negamax_q", opponent="self", player=None, episodes_per_update=1, iterations=1,
                      seed=5, eval_every=1, m=restored.shape[0], n=restored.shape[1], k=restored.shape[2],
                      mcts_simulations=1, eval_games=200)
    columns = evaluate.evaluation(restored, whole)  # all three members: the agent itself
    assert columns["evaluation"] == evaluation
    for d in sizes[-2:]:
        assert {key: d[key] for key in ("random_win", "random_loss")} == {
            key: columns[evaluate.column(d["seat"], key)] for key in ("random_win", "random_loss")}
    one = sizes[0]["random_win"], sizes[1]["random_win"]
    assert one != (sizes[-2]["random_win"], sizes[-1]["random_win"])  # one member is another agent
