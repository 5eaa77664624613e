"""alphazero (lab.agents.alphazero, its search lab.agents.puct) on every board: the net's heads,
the search's tactics on 3x3 and 5x5, training end to end through lab.run, resuming, checkpoints,
and learning (3x3: never losing; 5x5: holding MCTS)."""

import time

import numpy as np
import pytest

from lab import agents, game, results
from lab.agents import alphazero, puct
from lab.config.compose import compose
from lab.config.jobs import job, parse
from lab.evaluation.evaluate import exact
from lab.game import bitboards, bots
from lab.knobs import ConfigError
from lab.nets import MLP
from lab.run import Training, run

TINY = ("algorithm=alphazero", "opponent=self", "episodes_per_update=6", "iterations=2",
        "simulations=12", "train_steps=5", "gating_games=4", "seed=5")
BOARD = bitboards.board(5, 5, 4)
TINY_5X5 = ("algorithm=alphazero", "game=mnk_5_5_4", "layers=1", "neurons=16", "iterations=4",
            "episodes_per_update=4", "simulations=16", "train_steps=4", "gating_games=2",
            "eval_every=2", "eval_games=40")


def untrained(shape=(3, 3, 3), simulations=50, seed=0):
    cells = shape[0] * shape[1]
    net = MLP([cells, 32, 32, cells + 1], np.random.default_rng(seed), output="linear")
    return alphazero.Agent(net, simulations, 1.5, shape)


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


def test_tiny_run_rows_and_checkpoint_round_trip(run_and_restore):
    # the search is deterministic, so a retrained agent's scores match the checkpoint's exactly
    loaded, rows = run_and_restore(*TINY)
    assert (rows["simulations"] == 12).all()
    assert loaded.simulations == 12 and loaded.shape == (3, 3, 3)


def test_seed_002s_relu_net_with_its_12_output_head(run_and_restore):
    """activation=relu head=mse12: the run, its checkpoint and the restored agent's search."""
    loaded, rows = run_and_restore(*TINY, "activation=relu", "head=mse12")
    assert loaded.net.hidden == "relu" and loaded.net.weights[-1].shape[1] == 12
    assert (rows["head"] == "mse12").all()


def test_seed_002s_head_on_a_bigger_board(tmp_path):
    """On 5x5, head=mse12 has 3 + 25 outputs; the run trains and its checkpoint plays as it did."""
    result = run(job(compose(*TINY_5X5, "activation=relu", "head=mse12")))
    assert not result.failed, result.rows["error"].iloc[0]
    path = tmp_path / "agent.npz"
    path.write_bytes(result.checkpoint)
    loaded = agents.load(path)
    assert loaded.net.hidden == "relu" and loaded.net.weights[-1].shape[1] == 28
    assert (result.rows["head"] == "mse12").all()
    assert result.rows["eval_p1_random_win"].dropna().between(0, 1).all()


def test_the_regressed_head_reads_priors_and_values():
    """[win, draw, loss] of the mover, then a move per cell: priors are the empty cells' outputs
    floored and normalised, the value win - loss clipped."""
    outputs = np.array([[0.9, 0.2, 0.1, 0.5, -0.2, 0.5, 0, 0, 0, 0, 0, 0.2],
                        [0.0, 0.0, 1.5, 1.0, 1.0, 0, 0, 0, 0, 0, 0, 0]])
    empty = np.zeros((2, 9), dtype=bool)
    empty[0, [0, 1, 2]] = empty[1, [0, 1]] = True
    priors, values = puct.priors_and_values(outputs, np.where(empty, 0.0, 1.0))
    floor = puct.PRIOR_FLOOR
    np.testing.assert_allclose(priors[0, :3], np.array([0.5, floor, 0.5]) / (1 + floor))
    np.testing.assert_allclose(priors[1, :2], [0.5, 0.5])
    assert (priors[~empty] == 0).all()
    np.testing.assert_allclose(values, [0.8, -1.0])


def test_search_counts_are_visits_of_legal_moves():
    """Where the rules leave the choice open the search spends all its simulations; where they
    decide (a win, a forced block, a double threat) the counts are 1 on those cells."""
    agent = untrained(simulations=40)
    codes = game.DECISIONS[::50]
    counts = agent.scores(codes)
    assert not counts[~game.LEGAL[codes]].any()
    searched = counts.sum(axis=1) == 40
    assert 0 < searched.sum() < len(codes)
    assert np.isin(counts[~searched], (0.0, 1.0)).all()


def test_search_never_lets_an_immediate_win_go_even_with_an_untrained_net():
    """Where the side to move can win at once, it plays a move that keeps the win."""
    moves = untrained().move_table()
    codes = game.DECISIONS
    after = np.maximum(game.AFTER[codes], 0)
    wins = game.LEGAL[codes] & (game.WINNER[after] == game.TO_MOVE[codes][:, None])
    has_win = wins.any(axis=1)
    assert has_win.sum() > 2000
    keeps_win = (moves[codes[has_win]] * game.OPTIMAL[codes[has_win]]).sum(axis=1)
    assert keeps_win == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_the_search_takes_a_win_blocks_a_loss_and_prevents_a_double_threat(seed):
    agent = untrained((5, 5, 4), seed=seed)
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


def test_symmetries_are_the_board_s_flips_and_turns():
    for (m, n), count in (((3, 3), 8), ((5, 5), 8), ((4, 3), 4)):
        images, board = bitboards.symmetries(m, n), bitboards.board(m, n, 3)
        assert len(images) == count and all(sorted(image) == list(range(m * n)) for image in images)
        lines = {int(w) for w in board.windows}
        for image in images:  # an image maps every winning line onto a winning line
            assert {sum(1 << int(image[c]) for c in range(m * n) if w >> c & 1) for w in lines} == lines


@pytest.mark.parametrize("board", ["ttt", "mnk_5_5_4"])
def test_against_a_fixed_opponent_only_its_own_seat_is_learned(board):
    """The window holds the searched positions of the last `window` games: O's only here."""
    against_o = job(compose(*TINY_5X5, f"game={board}", "opponent=random", "player=2", "window=6"))
    learner = alphazero.Learner(against_o.knobs, against_o.run)
    for _ in range(3):
        assert learner.iterate().sum() == 4
    assert learner.games == 12 and set(np.unique(learner.game_ids)) == set(range(6, 12))
    ones = lambda b: np.array([bin(int(v)).count("1") for v in b])
    assert (ones(learner.theirs) == ones(learner.mine) + 1).all()  # O's positions: X moved once more
    assert np.allclose(learner.policies.sum(axis=1), 1.0)
    assert set(np.unique(learner.outcomes)) <= {-1.0, 0.0, 1.0}


def test_bad_knobs_are_refused():
    with pytest.raises(ConfigError, match="dirichlet_weight"):
        parse(compose("algorithm=alphazero", "dirichlet_weight=1.5"))
    with pytest.raises(ConfigError, match="temperature_moves"):
        parse(compose("algorithm=alphazero", "temperature_moves=10"))
    with pytest.raises(ConfigError, match="activation='sigmoid' is not allowed: activation must be tanh or relu"):
        parse(compose("algorithm=alphazero", "activation=sigmoid"))
    with pytest.raises(ConfigError, match="head='mse' is not allowed: head must be one of softmax_value, mse12"):
        parse(compose("algorithm=alphazero", "head=mse"))


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
    learner = alphazero.Learner(trained.knobs, trained.run)
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


@pytest.mark.slow
def test_self_play_never_loses_in_either_seat(make_learner):
    """Issue 3: trained in self-play in at most 10 minutes on 2 cores, the agent never loses as X
    or as O against every opponent reply (exact enumeration). Defaults of alphazero.yaml.
    The search's rules alone do not make it: untrained (seed 3) it loses 44 lines as O and wins
    91.3% as X and 75.6% as O against random; trained, 98.6% and 84.4% (ceilings 99.5%, 91.6%)."""
    learner = make_learner("alphazero", "opponent=self", "seed=3")
    start = time.perf_counter()
    for _ in range(learner.run.iterations):
        learner.iterate()
    seconds = time.perf_counter() - start
    agent = learner.agent()
    outcomes = [exact(agent, seat) for seat in (1, 2)]
    assert [r["losing_lines"] for r in outcomes] == [0, 0], outcomes
    assert outcomes[0]["random_win"] >= 0.97 and outcomes[1]["random_win"] >= 0.82, outcomes
    assert seconds < 600


def test_500_self_play_games_learn_to_hold_mcts_as_o():
    """Measured (seed 0, alphazero.yaml's knobs, 5 iterations of 100 games, about 4 s): as O
    against MCTS with 200 simulations the agent loses 7 of 100 games (untrained: 35) and as X wins
    97 (untrained: 84)."""
    trained = job(compose("algorithm=alphazero", "game=mnk_5_5_4", "iterations=5"))
    learner = alphazero.Learner(trained.knobs, trained.run)
    for _ in range(5):
        learner.iterate()
    agent, mcts = learner.agent(), bots.bot("mcts", 200)
    as_x, as_o = agent.play(mcts, 1, 100, seed=0), agent.play(mcts, 2, 100, seed=0)
    assert as_o[bots.X_WINS] <= 15 and as_x[bots.X_WINS] >= 90
