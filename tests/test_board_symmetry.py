"""Folding the board's symmetries off 3x3 (`symmetry=true`): mc_vfa's and q_net's nets see every
position of a bigger board as its canonical image, in Python and in their compiled games alike."""

import numpy as np
import pytest

from lab import agents
from lab.config.compose import compose
from lab.config.jobs import job
from lab.game import bitboards, engine
from lab.run import run
from test_checkpoint_opponent import _frozen_moves

TINY = ("iterations=2", "episodes_per_update=20", "layers=1", "neurons=8", "opponent=random", "player=1",
        "symmetry=true")
FOLDED = {"mc_vfa": ("algorithm=mc_vfa",), "q_net move": ("algorithm=q_net", "head=move"),
          "q_net cells": ("algorithm=q_net", "head=cells")}


def _positions(m: int, n: int, count: int, rng) -> np.ndarray:
    """(count, 2) random positions of the m x n board: 0 to cells - 3 stones, X's and O's in turn."""
    cells, rows = m * n, []
    for _ in range(count):
        x = o = 0
        for ply, cell in enumerate(rng.permutation(cells)[:rng.integers(0, cells - 2)]):
            x, o = (x | 1 << int(cell), o) if ply % 2 == 0 else (x, o | 1 << int(cell))
        rows.append((x, o))
    return np.array(rows, np.uint64)


def _image(positions: np.ndarray, image: np.ndarray) -> np.ndarray:
    """The positions in a symmetric image (a row of lab.game.bitboards.symmetries)."""
    bits = ((positions[:, :, None] >> image.astype(np.uint64)) & np.uint64(1))  # (n, 2, cells)
    return (bits << np.arange(len(image), dtype=np.uint64)).sum(axis=2, dtype=np.uint64)


@pytest.mark.parametrize("m, n", [(4, 4), (4, 3)])
def test_symmetric_positions_and_pairs_share_one_canonical_image(m, n):
    board = bitboards.board(m, n, 3)
    positions = _positions(m, n, 200, np.random.default_rng(1))
    moves = np.random.default_rng(2).integers(0, m * n, len(positions))
    images = bitboards.symmetries(m, n)
    assert len(images) == (8 if m == n else 4)
    canonical, canonical_moves = engine.canonical_pairs(board, positions, moves)
    for image, place in zip(images, bitboards.places(m, n)):
        seen = engine.canonical_pairs(board, _image(positions, image), place[moves])
        np.testing.assert_array_equal(seen[0], canonical)
        np.testing.assert_array_equal(seen[1], canonical_moves)
    # the representative is one of the position's own images, and folding it again changes nothing
    own = np.stack([_image(positions, image) for image in images], axis=1)  # (n, images, 2)
    assert (own == canonical[:, None, :]).all(axis=2).any(axis=1).all()
    np.testing.assert_array_equal(engine.canonical(board, canonical), canonical)


@pytest.fixture(scope="module")
def folded_agents(tmp_path_factory):
    """A checkpoint of a tiny folded run of each net learner on 4x4, loaded."""
    out, loaded = tmp_path_factory.mktemp("folded"), {}
    for name, knobs in FOLDED.items():
        path = out / f"{name}.npz"
        path.write_bytes(run(job(compose(*knobs, "game=mnk_4_4_4", *TINY))).checkpoint)
        loaded[name] = agents.load(path)
    return loaded


@pytest.mark.parametrize("name", FOLDED)
def test_a_folded_agent_scores_symmetric_positions_alike(name, folded_agents):
    agent = folded_agents[name]
    assert agent.symmetry and agent.shape == (4, 4, 4)  # kept through the checkpoint
    positions = _positions(4, 4, 100, np.random.default_rng(3))
    empty = engine.inputs(agent.board, positions, np.int8) == 0
    scores = agent.scores(positions)
    for image, place in zip(bitboards.symmetries(4, 4), bitboards.places(4, 4)):
        moved = agent.scores(_image(positions, image))[:, place]  # cell c of the original is place[c]
        np.testing.assert_allclose(moved[empty], scores[empty], rtol=1e-5)


@pytest.mark.parametrize("name", FOLDED)
def test_a_folded_agent_plays_its_greedy_moves_inside_a_kernel(name, folded_agents):
    """The compiled games fold as the Python scores do: frozen, the agent plays a move its policy
    gives probability to."""
    agent = folded_agents[name]
    positions = _positions(4, 4, 300, np.random.default_rng(4))
    positions = positions[[not any(bitboards.wins(agent.board, np.uint64(s), c) for s in row for c in range(16)
                                   if int(s) >> c & 1) for row in positions]]
    cells = _frozen_moves(agent.board, agent.frozen(), positions[:, 0], positions[:, 1])
    assert (agent.policy(positions)[np.arange(len(cells)), cells] > 0).all()


def test_mc_vfa_fits_one_monte_carlo_mean_per_symmetry_class_on_4x4(make_learner):
    learner = make_learner("mc_vfa", "game=mnk_4_4_4", *[o for o in TINY if o != "layers=1"], "memory=keep")
    learner.iterate()
    seen = learner.kept[1][0]
    np.testing.assert_array_equal(engine.canonical(learner.game, seen), seen)
    assert len(seen) == len(np.unique(seen, axis=0))


@pytest.mark.parametrize("knobs, least", [(("algorithm=q_net",), 0.95), (("algorithm=mc_vfa",), 0.85)])
def test_folded_agents_learn_4x4_as_x_against_random(knobs, least):
    """Measured (seed 0, exact win rate against random after 10,000 episodes, unfolded -> folded):
    q_net 0.947 -> 0.962, mc_vfa 0.747 -> 0.913; a random X wins 0.317."""
    rows = run(job(compose(*knobs, "game=mnk_4_4_4", "opponent=random", "player=1", "symmetry=true",
                           "iterations=100", "eval_every=100"))).rows
    assert rows["eval_p1_random_win"].iloc[-1] > least
