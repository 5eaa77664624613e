"""The `symmetry` knob of the net learners: a folded net sees every board as its canonical image
(lab.game.CANONICAL), so it values the 8 images of a position alike, move for move."""

import numpy as np
import pytest

from lab import agents, game
from lab.game import engine


def test_canonical_pairs_are_shared_by_the_images_of_a_pair():
    codes = game.DECISIONS
    rows, moves = np.nonzero(game.LEGAL[codes])
    canonical = engine.canonical_pairs(engine.TTT, codes[rows], moves)
    # the move lands on a legal cell of the canonical board, and leads to the canonical class of
    # the position it led to
    assert game.LEGAL[canonical].all()
    assert (game.CANONICAL[game.AFTER[canonical]] == game.CANONICAL[game.AFTER[codes[rows], moves]]).all()
    for cells, images in zip(game.SYMMETRIES, game.symmetric_codes(codes[rows])):
        image_moves = np.argsort(cells)[moves]  # where cell `move` goes in that image
        for folded, expected in zip(engine.canonical_pairs(engine.TTT, images, image_moves), canonical):
            np.testing.assert_array_equal(folded, expected)


@pytest.mark.parametrize("algorithm", ["mc_vfa", "q_net"])
def test_a_folded_agent_values_symmetric_positions_alike(make_learner, tmp_path, algorithm):
    learner = make_learner(algorithm, "symmetry=true", "layers=2", "neurons=8", "epsilon=0.5",
                           "episodes_per_update=200", "iterations=3", "seed=5", train=True)
    path = tmp_path / "agent.npz"
    learner.agent().save(path)
    agent = agents.load(path)
    assert agent.symmetry
    codes = game.DECISIONS[game.TO_MOVE[game.DECISIONS] == -1]
    scores = agent.scores(codes)
    for cells, images in zip(game.SYMMETRIES, game.symmetric_codes(codes)):
        np.testing.assert_allclose(agent.scores(images), scores[:, cells], rtol=1e-6)
    # the same net unfolded does not
    agent.symmetry = False
    mirrored = game.symmetric_codes(codes)[1]
    assert not np.allclose(agent.scores(mirrored), agent.scores(codes)[:, game.SYMMETRIES[1]])
