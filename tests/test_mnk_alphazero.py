"""alphazero on bigger m,n,k boards (lab.agents.mnk_alphazero): the search's tactics on 5x5,
training end to end through lab.run, resuming, checkpoints, and learning against MCTS."""

import numpy as np
import pytest

from lab import agents, results
from lab.game import bitboards, bots
from lab.agents import mnk_alphazero
from lab.compose import compose
from lab.config import job
from lab.knobs import ConfigError
from lab.nets import MLP
from lab.run import Training, run

BOARD = bitboards.board(5, 5, 4)
TINY_5X5 = ("algorithm=alphazero", "game=mnk_5_5_4", "layers=1", "neurons=16", "iterations=4",
            "episodes_per_update=4", "simulations=16", "train_steps=4", "gating_games=2",
            "eval_every=2", "eval_games=40")


def untrained(simulations=50, seed=0):
    net = MLP([25, 32, 32, 26], np.random.default_rng(seed), output="linear")
    return mnk_alphazero.Agent(net, simulations, 1.5, (5, 5, 4))


def stones(*cells) -> int:
    return sum(1 << (row * 5 + col) for row, col in cells)


def winning_cells(mine: int, theirs: int) -> set:
    """The empty cells where a stone completes a line for `mine`, by lab.game.bitboards.wins."""
    return {c for c in range(25) if not (mine | theirs) >> c & 1
            and bitboards.wins(BOARD, np.uint64(mine | 1 << c), c)}


def moves(agent, x: int, o: int) -> set:
    """The cells the agent's greedy policy plays (ties included) in the position."""
    row = agent.policy(np.array([[x, o]], np.uint64))[0]
    assert row.sum() == pytest.approx(1) and not row[[c for c in range(25) if (x | o) >> c & 1]].any()
    return set(np.flatnonzero(row))


@pytest.mark.parametrize("seed", range(5))
def test_the_search_takes_a_win_blocks_a_loss_and_prevents_a_double_threat(seed):
    agent = untrained(seed=seed)
    x, o = stones((2, 0), (2, 1), (2, 2), (0, 4)), stones((0, 0), (4, 4), (4, 0), (0, 2))
    assert winning_cells(x, o) == {2 * 5 + 3} and not winning_cells(o, x)
    assert moves(agent, x, o) == {2 * 5 + 3}  # X to move completes its row
    x, o = stones((2, 0), (2, 1), (2, 2)), stones((0, 0), (4, 4))
    assert moves(agent, x, o) == {2 * 5 + 3}  # O to move blocks it
    # X's open two in the middle row: X at (2, 3) would make two winning cells; O prevents it
    x, o = stones((2, 1), (2, 2)), stones((4, 4))
    for cell in moves(agent, x, o):
        after = o | 1 << cell
        assert all(len(winning_cells(x | 1 << c, after)) < 2 for c in range(25)
                   if not (x | after) >> c & 1), cell


def test_a_short_run_trains_end_to_end_with_the_evaluation_columns(tmp_path):
    result = run(job(compose(*TINY_5X5)))
    rows = result.rows
    assert not result.failed, rows["error"].iloc[0]
    assert (rows[["p1_wins", "p2_wins", "draws"]].sum(axis=1) == 4).all()
    evaluated = rows.dropna(subset=["evaluation"])
    assert list(evaluated["iteration"]) == [2, 4] and set(evaluated["evaluation"]) == {"games"}
    for seat in (1, 2):
        for opponent in ("random", "onestep"):
            column = f"eval_p{seat}_{opponent}"
            assert (evaluated[f"{column}_games"] == 40).all()
            shares = evaluated[[f"{column}_{r}" for r in ("win", "draw", "loss")]].sum(axis=1)
            assert np.allclose(shares, 1)
    path = tmp_path / "agent.npz"
    path.write_bytes(result.checkpoint)
    loaded = agents.load(path)
    assert loaded.algorithm == "alphazero" and loaded.shape == (5, 5, 4) and loaded.simulations == 16


def test_resumed_equals_uninterrupted():
    one = job(compose(*TINY_5X5))
    whole = run(one)
    training = Training(one)
    training.step(), training.step(), training.step()
    resumed = run(one, start=training.snapshot())
    assert results.fingerprint(resumed.rows, resumed.checkpoint) == \
        results.fingerprint(whole.rows, whole.checkpoint)


def test_a_checkpoint_plays_as_the_agent_did(tmp_path):
    trained = job(compose(*TINY_5X5, "opponent=block", "player=2"))
    learner = mnk_alphazero.Learner(trained.knobs, trained.run)
    learner.iterate()
    agent = learner.agent()
    path = tmp_path / "agent.npz"
    path.write_bytes(agent.to_bytes())
    loaded = agents.load(path)
    for bot in (bots.bot("onestep"), bots.bot("mcts", 20)):
        assert np.array_equal(loaded.play(bot, 2, 30, seed=3), agent.play(bot, 2, 30, seed=3))
    x, o = np.array([stones((2, 2)), stones((0, 0), (1, 1))], np.uint64), np.array(
        [0, stones((2, 2))], np.uint64)
    positions = np.stack([x, o], axis=1)
    assert np.array_equal(loaded.policy(positions), agent.policy(positions))


def test_the_window_holds_the_searched_positions_of_the_recent_games():
    against_o = job(compose(*TINY_5X5, "opponent=random", "player=2", "window=6"))
    learner = mnk_alphazero.Learner(against_o.knobs, against_o.run)
    for _ in range(3):
        learner.iterate()
    assert learner.games == 12 and set(np.unique(learner.game_ids)) == set(range(6, 12))
    ones = lambda b: np.array([bin(int(v)).count("1") for v in b])
    assert (ones(learner.theirs) == ones(learner.mine) + 1).all()  # O's positions: X moved once more
    assert np.allclose(learner.policies.sum(axis=1), 1.0)


def test_symmetries_are_the_board_s_flips_and_turns():
    square, wide = mnk_alphazero.symmetries(5, 5), mnk_alphazero.symmetries(4, 3)
    assert len(square) == 8 and len(wide) == 4
    for images, (m, n) in ((square, (5, 5)), (wide, (4, 3))):
        board = bitboards.board(m, n, 3)
        assert all(sorted(image) == list(range(m * n)) for image in images)
        lines = {int(w) for w in board.windows}
        for image in images:  # an image maps every winning line onto a winning line
            assert {sum(1 << int(image[c]) for c in range(m * n) if w >> c & 1) for w in lines} == lines


def test_the_12_output_head_is_refused_off_3x3():
    with pytest.raises(ConfigError, match="head='mse12' is not allowed: head must be softmax_value"):
        job(compose("algorithm=alphazero", "game=mnk_5_5_4", "head=mse12"))


def test_500_self_play_games_learn_to_hold_mcts_as_o():
    """Measured (seed 0, alphazero.yaml's knobs, 5 iterations of 100 games, about 4 s): as O
    against MCTS with 200 simulations the agent loses 7 of 100 games (untrained: 35) and as X wins
    97 (untrained: 84)."""
    trained = job(compose("algorithm=alphazero", "game=mnk_5_5_4", "iterations=5"))
    learner = mnk_alphazero.Learner(trained.knobs, trained.run)
    for _ in range(5):
        learner.iterate()
    agent, mcts = learner.agent(), bots.bot("mcts", 200)
    as_x, as_o = agent.play(mcts, 1, 100, seed=0), agent.play(mcts, 2, 100, seed=0)
    assert as_o[bots.X_WINS] <= 15 and as_x[bots.X_WINS] >= 90
