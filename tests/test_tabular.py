"""The tabular learners on bigger m,n,k boards (issue 26): the table of visited positions
(lab.game.sparse), q_table, td_value and negamax_q trained end to end on 4x4 with their table's
memory in the rows, the same run resumed or repeated, checkpoints, and runs refused before they
start when their table could outgrow memory."""

import numpy as np
import pytest

from lab import agents, results
from lab.game import bots, sparse
from lab.config.compose import compose
from lab.config.jobs import job
from lab.knobs import ConfigError
from lab.game.sparse import FREE, Table, find, full, insert
from lab.run import Training, run

TINY = ("game=mnk_4_4_4", "iterations=4", "episodes_per_update=300", "eval_every=2")
"""300 games an update: the tables outgrow their first 1,024 slots within the run"""
TINY_5X5 = ("game=mnk_5_5_4", "iterations=4", "episodes_per_update=300", "eval_games=20")
"""the same by games: cheaper to evaluate than 4x4's exact pass"""


def test_the_table_inserts_finds_and_keeps_its_entries_as_it_grows():
    table = Table(width=3, default=0.5)
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 2**20, 3000, dtype=np.uint64)
    os = rng.integers(0, 2**20, 3000, dtype=np.uint64) << np.uint64(20)
    xs[0] = os[0] = 0  # the empty board is a position like any other
    for i, (x, o) in enumerate(zip(xs, os)):
        if full(table.view(), 1):
            table.make_room(1)
        slot = insert(table.view(), x, o)
        assert find(table.view(), x, o) == slot
        np.testing.assert_array_equal(table.values[slot], 0.5)  # new: the default row
        table.values[slot] = [i, -i, 2 * i]
    assert table.entries == 3000 and len(table.x) == 8192  # doubled while never over half full
    assert table.nbytes == 8192 * (16 + 3 * 8) == table.columns()["table_bytes"]
    slots = [find(table.view(), x, o) for x, o in zip(xs, os)]
    np.testing.assert_array_equal(table.values[slots][:, 0], np.arange(3000))
    assert insert(table.view(), xs[5], os[5]) == slots[5] and table.entries == 3000  # no duplicate
    assert find(table.view(), np.uint64(1) << np.uint64(40), np.uint64(0)) == -1
    again = Table.from_entries(**table.compact(), default=0.5)
    np.testing.assert_array_equal(again.values[[find(again.view(), x, o) for x, o in zip(xs, os)]],
                                  table.values[slots])
    assert (table.x != FREE).sum() == 3000


def test_memory_bound_and_bytes_follow_the_stated_rule():
    assert sparse.positions_bound(9, range(10)) == 6046  # 3x3: 5,478 reachable among them
    assert sparse.bytes_for(512, 1) == 1024 * 24 and sparse.bytes_for(513, 1) == 2048 * 24


@pytest.mark.parametrize("algorithm, opponent", [("q_table", "random"), ("td_value", "onestep"),
                                                 ("negamax_q", "perfect")])
def test_each_trains_on_4x4_with_exact_evaluation_and_its_table_in_the_rows(algorithm, opponent):
    result = run(job(compose(*TINY, f"algorithm={algorithm}", f"opponent={opponent}", "player=1")))
    rows = result.rows
    assert not result.failed, rows["error"].iloc[0]
    evaluated = rows.dropna(subset=["evaluation"])
    assert list(evaluated["iteration"]) == [2, 4] and set(evaluated["evaluation"]) == {"exact"}
    assert np.allclose(evaluated[[f"eval_p1_random_{r}" for r in ("win", "draw", "loss")]].sum(axis=1), 1)
    entries, nbytes = evaluated["table_entries"].tolist(), evaluated["table_bytes"].tolist()
    assert 1024 // 2 < entries[0] < entries[1] <= 1200 * 16  # grew; at most a position a ply
    width = {"td_value": 1}.get(algorithm, 16)
    assert all(b >= 2 * e * (16 + 8 * width) for e, b in zip(entries, nbytes))  # at most half full
    assert rows["table_entries"].isna().sum() == 2  # only evaluated rows carry it
    table = results.arrow_table(rows)
    assert str(table.schema.field("table_bytes").type) == "int64"


@pytest.mark.parametrize("algorithm, opponent", [("q_table", "mcts"), ("td_value", "self"),
                                                 ("negamax_q", "self")])
def test_a_run_is_the_same_resumed_or_repeated_and_its_checkpoint_plays_alike(algorithm, opponent, tmp_path):
    one = job(compose(*TINY_5X5, f"algorithm={algorithm}", f"opponent={opponent}", "player=2",
                      "mcts_simulations=5"))
    whole, again = run(one), run(one)
    fingerprint = results.fingerprint(whole.rows, whole.checkpoint)
    assert results.fingerprint(again.rows, again.checkpoint) == fingerprint
    training = Training(one)
    training.step(), training.step()  # the table has grown past its first slots by now
    resumed = run(one, start=training.snapshot())
    assert results.fingerprint(resumed.rows, resumed.checkpoint) == fingerprint
    path = tmp_path / "agent.npz"
    path.write_bytes(whole.checkpoint)
    loaded, trained = agents.load(path), Training(one)
    for _ in range(4):
        trained.step()
    agent = trained.learner.agent()
    assert loaded.shape == (5, 5, 4) and loaded.algorithm == algorithm
    x = np.array([0, 0b1, 0b1001], np.uint64)
    o = np.array([0, 0, 0b110000], np.uint64)
    positions = np.stack([x, o], axis=1)
    np.testing.assert_array_equal(loaded.policy(positions), agent.policy(positions))
    opponent_bot = bots.bot("random")
    assert (loaded.play(opponent_bot, 2, 200, 7) == agent.play(opponent_bot, 2, 200, 7)).all()


def test_the_agent_is_a_snapshot_that_later_training_leaves_alone():
    training = Training(job(compose(*TINY_5X5, "algorithm=q_table", "opponent=random", "player=1")))
    training.step()
    agent = training.learner.agent()
    entries, values = agent.table.entries, agent.table.values.copy()
    training.step()
    assert agent.table.entries == entries and (agent.table.values == values).all()
    assert training.learner.q.entries > entries


@pytest.mark.parametrize("algorithm, overrides, most", [
    ("q_table", ("episodes_per_update=1000", "iterations=1000"), "699"),
    ("negamax_q", ("episodes_per_update=100", "iterations=4000", "ensemble=2"), "1,677"),
    ("td_value", ("episodes_per_update=100000", "iterations=1000", "opponent=self"), "27"),
])
def test_a_run_whose_table_could_outgrow_memory_is_refused_in_one_line(algorithm, overrides, most):
    with pytest.raises(ConfigError) as refused:
        job(compose("game=mnk_5_5_4", f"algorithm={algorithm}", *overrides))
    message = str(refused.value)
    iterations = next(o for o in overrides if o.startswith("iterations="))
    assert message.startswith(f"{iterations} is not allowed: iterations must be at most {most} ")
    assert f"for algorithm={algorithm} on game m=5, n=5, k=4" in message and "\n" not in message
    assert "4 GiB limit (lab.game.sparse.MEMORY_LIMIT)" in message
    allowed = [o if o != iterations else f"iterations={most.replace(',', '')}" for o in overrides]
    job(compose("game=mnk_5_5_4", f"algorithm={algorithm}", *allowed))  # the most it names runs


def test_an_update_whose_games_alone_could_outgrow_memory_names_episodes_per_update():
    with pytest.raises(ConfigError, match=r"^episodes_per_update=10000000 is not allowed: "
                       r"episodes_per_update must be at most 2,796,201 for algorithm=td_value"):
        job(compose("game=mnk_5_5_4", "algorithm=td_value", "opponent=self",
                    "episodes_per_update=10000000", "iterations=1"))


