"""`opponent=PATH.npz`: a trained agent of any algorithm as the opponent of any learner, frozen,
on every board (3x3: its move table; bigger boards: the agent itself inside the learner's compiled
games), validated like every other knob before anything runs."""

import re

import numpy as np
import pytest
from numba import njit

from lab import agents, results
from lab.game import bitboards, bots, engine, opponents
from lab.config.compose import compose
from lab.config.jobs import job, parse
from lab.knobs import ConfigError
from lab.run import run
from sweeping import TINY_RUNS, cli


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A q_table agent (either seat), an mc_vfa net trained as X and one trained in self-play
    (a net for each seat), saved."""
    out = tmp_path_factory.mktemp("checkpoints")
    paths = {}
    mc_vfa = ("algorithm=mc_vfa", "layers=2", "neurons=8", "player=1")
    for name, overrides in (("q_table", ("algorithm=q_table", "opponent=random", "player=1")),
                            ("mc_vfa_x", (*mc_vfa, "opponent=onestep")), ("mc_vfa_self", (*mc_vfa, "opponent=self"))):
        result = run(job(compose(*overrides, "episodes_per_update=50", "iterations=4", "seed=1")))
        paths[name] = out / f"{name}.npz"
        paths[name].write_bytes(result.checkpoint)
    return paths


@pytest.mark.parametrize("algorithm", agents.ALGORITHMS)
def test_every_learner_trains_against_a_checkpoint(algorithm, checkpoints):
    """The run's opponent is the checkpoint's absolute path; its learner plays the agent's greedy
    move table, and the rows are those of a normal fixed-opponent run."""
    overrides = [o for o in TINY_RUNS[algorithm] if not o.startswith("opponent=")]
    cfg = compose(f"algorithm={algorithm}", f"opponent={checkpoints['q_table']}", "player=2",
                  "episodes_per_update=6", "iterations=2", *overrides)
    result = run(job(cfg))
    rows = result.rows
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    assert (rows["opponent"] == str(checkpoints["q_table"])).all()
    assert rows["eval_p2_total_lines"].notna().iloc[-1]
    run_cfg, knobs = parse(cfg)
    learner = agents.get(algorithm).Learner(knobs, run_cfg)
    expected = agents.load(checkpoints["q_table"]).move_table()
    table = learner.opponent if algorithm != "alphazero" else None
    if table is not None:  # alphazero wraps the same table in its Contestant
        np.testing.assert_array_equal(table, expected)


def test_a_relative_path_is_taken_from_the_working_directory(checkpoints, monkeypatch):
    monkeypatch.chdir(checkpoints["q_table"].parent)
    run_cfg, _ = parse(compose("algorithm=q_table", "opponent=q_table.npz", "player=2"))
    assert run_cfg.opponent == str(checkpoints["q_table"])


def test_a_frozen_net_of_the_other_seat_is_an_opponent_as_seed_000_trained(checkpoints):
    """Write-up 000's last experiment: an O net trained against a frozen X net (another run's
    checkpoint), whose greedy table never changes during training."""
    rows = run(job(compose("algorithm=mc_vfa", f"opponent={checkpoints['mc_vfa_x']}", "player=2",
                           "layers=2", "neurons=8", "episodes_per_update=50", "iterations=60",
                           "seed=0"))).rows
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    frozen = opponents.for_training(str(checkpoints["mc_vfa_x"]))
    np.testing.assert_array_equal(frozen, agents.load(checkpoints["mc_vfa_x"]).move_table())
    assert not frozen.flags.writeable


@pytest.mark.parametrize("make, allowed", [
    (lambda d: d / "missing.npz", "does not"),
    (lambda d: (d / "text.npz").write_text("not a zip") and d / "text.npz", r"text.npz: not a lab checkpoint \(a run's"),
    (lambda d: np.savez(d / "foreign.npz", q=np.zeros(3)) or d / "foreign.npz",
     r"foreign.npz: not a lab checkpoint \(algorithm ''\)$"),  # once wrapped in a second "is not a lab checkpoint"
])
def test_a_missing_or_foreign_file_is_one_clear_error(tmp_path, make, allowed):
    path = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ConfigError, match=f"^opponent='{path}' is not allowed: .*{allowed}"):
        job(compose("algorithm=q_table", f"opponent={path}", "player=2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_net_trained_in_the_learners_seat_is_refused(checkpoints):
    with pytest.raises(ConfigError, match="opponent=.* is not allowed: .*trained as player 1 only"):
        job(compose("algorithm=q_table", f"opponent={checkpoints['mc_vfa_x']}", "player=1"))


@pytest.mark.parametrize("player", [1, 2])
def test_a_self_play_net_is_an_opponent_in_either_seat(checkpoints, player):
    """It holds a net for each seat (it was once refused as X's opponent: "trained as player 1")."""
    path = str(checkpoints["mc_vfa_self"])
    assert job(compose("algorithm=q_table", f"opponent={path}", f"player={player}")).run.opponent == path


@pytest.mark.integration
def test_the_sweep_refuses_a_missing_checkpoint_before_anything_runs(tmp_path):
    done = cli(["algorithm=q_table", "opponent=nowhere/agent.npz", "results_dir=out"], tmp_path)
    assert done.returncode == 2
    assert "opponent='nowhere/agent.npz' is not allowed" in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()


BOARD = ("game=mnk_4_4_4", "iterations=2", "episodes_per_update=5", "eval_every=2")
"""Tiny 4x4 runs (evaluated exactly)"""


@pytest.fixture(scope="module")
def board_checkpoints(tmp_path_factory):
    """A checkpoint of every algorithm trained as X on 4x4 for a few games."""
    out = tmp_path_factory.mktemp("board_checkpoints")
    paths = {}
    for algorithm in agents.ALGORITHMS:
        tiny = [o for o in TINY_RUNS[algorithm] if not o.startswith("opponent=")]
        result = run(job(compose(f"algorithm={algorithm}", *BOARD, *tiny, "opponent=random", "player=1", "seed=3")))
        paths[algorithm] = out / f"{algorithm}.npz"
        paths[algorithm].write_bytes(result.checkpoint)
    return paths


@njit
def _frozen_moves(g, opponent, xs, os):
    """The cell the frozen opponent plays at each position, for the side to move there."""
    cells = np.empty(len(xs), np.int64)
    for i in range(len(xs)):
        side = 0 if bots.cells_in(xs[i]) == bots.cells_in(os[i]) else 1
        cells[i] = engine.opponent_move(g, opponent, (xs[i], os[i]), side)
    return cells


def _open_positions(count: int, rng) -> np.ndarray:
    """(count, 2) random 4x4 positions of 0-11 stones, alternately X's and O's, nobody's line."""
    board, found = bitboards.board(4, 4, 4), []
    while len(found) < count:
        x = o = 0
        for ply, cell in enumerate(rng.permutation(16)[:rng.integers(0, 12)]):
            x, o = (x | 1 << int(cell), o) if ply % 2 == 0 else (x, o | 1 << int(cell))
        if not any(bitboards.wins(board, np.uint64(stones), c) for stones in (x, o) for c in range(16)
                   if stones >> c & 1):
            found.append((x, o))
    return np.array(found, np.uint64)


@pytest.mark.parametrize("algorithm", agents.ALGORITHMS)
def test_a_frozen_board_agent_plays_its_greedy_moves(algorithm, board_checkpoints):
    """Inside a kernel a bigger board's checkpoint plays one of the moves its policy (the exact
    evaluation's) gives probability: its best-scoring moves, ties at random."""
    agent = agents.load(board_checkpoints[algorithm])
    positions = _open_positions(300, np.random.default_rng(0))
    cells = _frozen_moves(agent.board, agent.frozen(), positions[:, 0], positions[:, 1])
    policy = agent.policy(positions)
    assert (policy[np.arange(len(cells)), cells] > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("learner, opponent", [*((a, "q_table") for a in agents.ALGORITHMS),
                                               *(("q_table", a) for a in agents.ALGORITHMS if a != "q_table")])
def test_every_learner_trains_against_every_algorithms_checkpoint_on_4x4(learner, opponent, board_checkpoints):
    tiny = [o for o in TINY_RUNS[learner] if not o.startswith("opponent=")]
    path = str(board_checkpoints[opponent])
    result = run(job(compose(f"algorithm={learner}", *BOARD, *tiny, f"opponent={path}", "player=2")))
    rows = result.rows
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    assert (rows["opponent"] == path).all() and rows["evaluation"].iloc[-1] == "exact"
    assert 0 <= rows["eval_p2_random_win"].iloc[-1] <= 1
    again = run(job(compose(f"algorithm={learner}", *BOARD, *tiny, f"opponent={path}", "player=2")))
    assert results.fingerprint(again.rows, again.checkpoint) == results.fingerprint(rows, result.checkpoint)


def test_a_5x5_run_against_a_checkpoint_is_evaluated_by_games_against_random_and_onestep(tmp_path):
    board = ("game=mnk_5_5_4", "algorithm=q_table", "iterations=2", "episodes_per_update=5", "eval_games=50")
    path = tmp_path / "x.npz"
    path.write_bytes(run(job(compose(*board, "opponent=random", "player=1"))).checkpoint)
    rows = run(job(compose(*board, f"opponent={path}", "player=2"))).rows
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    assert rows["evaluation"].iloc[-1] == "games"
    assert rows["eval_p2_random_games"].iloc[-1] == rows["eval_p2_onestep_games"].iloc[-1] == 50


def test_a_checkpoint_of_another_board_is_one_clear_error(board_checkpoints, checkpoints):
    with pytest.raises(ConfigError, match=r"^opponent=.* is not allowed: .*a checkpoint of an agent on this "
                                          r"board, m, n, k = \(5, 5, 4\) \(.*'s plays m, n, k = \(4, 4, 4\)\)"):
        job(compose("game=mnk_5_5_4", f"opponent={board_checkpoints['q_table']}", "player=2"))
    with pytest.raises(ConfigError, match=r"m, n, k = \(4, 4, 4\) \(.*'s plays m, n, k = \(3, 3, 3\)\)"):
        job(compose("game=mnk_4_4_4", f"opponent={checkpoints['q_table']}", "player=2"))


def test_a_board_net_trained_in_the_learners_seat_is_refused(board_checkpoints):
    with pytest.raises(ConfigError, match="opponent=.* is not allowed: .*trained as player 1"):
        job(compose("game=mnk_4_4_4", f"opponent={board_checkpoints['q_net']}", "player=1"))


@pytest.mark.parametrize("edit, said", [
    (lambda a: a.pop("w2"), "its net's layers do not chain"),  # the output layer gone (layers=2): it played silently
    (lambda a: a.update(w1=np.zeros((5, 5))), "its net's layers do not chain"),  # read outside its arrays
    (lambda a: a.update(board=np.array([4, 4])), "TypeError"),
    (lambda a: a.pop("player"), "KeyError: 'player'"),
], ids=["no output layer", "a layer of another shape", "a board of two numbers", "no seat"])
def test_a_hand_edited_checkpoint_is_refused_as_damaged(checkpoints, tmp_path, edit, said):
    arrays = dict(np.load(checkpoints["mc_vfa_x"]))
    edit(arrays)
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(ValueError, match=f"edited.npz: a damaged checkpoint .*{re.escape(said)}"):
        agents.load(tmp_path / "edited.npz")
    with pytest.raises(ConfigError, match="opponent=.* is not allowed: .*a damaged checkpoint"):
        job(compose("algorithm=q_table", f"opponent={tmp_path / 'edited.npz'}", "player=2"))
