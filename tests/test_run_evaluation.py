"""Exact evaluation during training: which rows carry it, what it holds, and its cost kept out of
train_seconds."""

import dataclasses
import types

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab import agents, results, run as run_module
from lab.evaluation import evaluate
from lab.config.compose import compose
from lab.config.jobs import job, parse
from sweeping import TINY_RUNS
from lab.run import run

KEYS = list(evaluate.KEYS)


def columns(seat):
    return [evaluate.column(seat, key) for key in KEYS]


@pytest.fixture(scope="module")
def short_run():
    cfg = compose("layers=2", "neurons=8", "episodes_per_update=10", "iterations=7",
                  "eval_every=3", "player=2", "opponent=onestep", "seed=5")
    return run(job(cfg))


def test_eval_values_on_every_eval_every_iteration_and_the_last(short_run):
    rows = short_run.rows.set_index("iteration")
    evaluated = rows[columns(2)].notna().all(axis=1)
    assert evaluated[evaluated].index.tolist() == [3, 6, 7]
    assert rows.loc[[1, 2, 4, 5], columns(2)].isna().all().all()
    assert not set(columns(1)) & set(rows.columns)  # a fixed-seat run fills only its seat


def test_last_eval_is_exact_of_the_checkpoint(short_run, tmp_path):
    path = tmp_path / "agent.npz"
    path.write_bytes(short_run.checkpoint)
    expected = evaluate.exact(agents.load(path), 2)
    last = short_run.rows.iloc[-1]
    for key, value in expected.items():
        assert last[evaluate.column(2, key)] == pytest.approx(value, abs=1e-12), key


def test_eval_columns_in_the_parquet_schema(short_run, tmp_path):
    results.commit(tmp_path, results.pack([short_run]))
    path = tmp_path / f"{short_run.run_id}.parquet"
    schema = pq.read_schema(path)
    for seat in (1, 2):
        for key, kind in evaluate.KEYS.items():
            arrow = {float: "double", int: "int64", bool: "bool"}[kind]
            assert str(schema.field(evaluate.column(seat, key)).type) == arrow
    table = pd.read_parquet(tmp_path)
    assert table[columns(1)].isna().all().all()
    assert table[columns(2)].notna().all(axis=1).sum() == 3
    loaded = results.load(tmp_path).set_index("iteration")
    for column in ("total_lines", "losing_lines", "never_loses", "onestep_win"):
        column = evaluate.column(2, column)
        assert loaded.loc[7, column] == short_run.rows.iloc[-1][column]


def test_evaluating_does_not_count_as_training(monkeypatch):
    # A fake clock that only evaluation moves: train_seconds must stay 0.
    clock = [0.0]
    real_exact = evaluate.exact

    def slow_exact(agent, player):
        clock[0] += 100.0
        return real_exact(agent, player)

    monkeypatch.setattr(run_module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(evaluate, "exact", slow_exact)
    rows = run(job(compose("layers=2", "neurons=8", "episodes_per_update=5", "iterations=3",
                       "eval_every=1", "seed=1"))).rows
    assert (rows["status"] == "finished").all()
    assert clock[0] == 300.0 and (rows["train_seconds"] == 0.0).all()


def test_self_play_fills_both_seats():
    run_cfg, knobs = parse(compose("layers=2", "neurons=8", "seed=2"))
    learner = agents.get("mc_vfa").Learner(knobs, run_cfg)
    agent = learner.agent()
    both = evaluate.evaluation(agent, dataclasses.replace(run_cfg, opponent="self", player=None))
    alternated = {evaluate.alternated_column(key) for key in evaluate.ALTERNATED_KEYS}
    assert set(both) == set(columns(1)) | set(columns(2)) | alternated
    for seat in (1, 2):
        expected = evaluate.exact(agent, seat)
        assert [both[evaluate.column(seat, k)] for k in KEYS] == [expected[k] for k in KEYS]
    assert set(evaluate.evaluation(agent, run_cfg)) == set(columns(2))




@pytest.mark.parametrize("algorithm", agents.ALGORITHMS)
def test_every_algorithm_writes_the_eval_columns(algorithm):
    cfg = compose(f"algorithm={algorithm}", "episodes_per_update=4", "iterations=2",
                  "eval_every=1", *TINY_RUNS[algorithm])
    result = run(job(cfg))
    assert not result.failed, result.rows["error"].iloc[0]
    run_cfg, _ = parse(cfg)
    seats = (1, 2) if run_cfg.opponent == "self" else (run_cfg.player,)
    table = results.arrow_table(result.rows).to_pandas()
    for seat in (1, 2):
        column = table[evaluate.column(seat, "random_win")]
        assert column.notna().all() if seat in seats else column.isna().all()


def test_self_play_runs_carry_the_seats_alternated_results():
    """Write-up 002's metric: evaluated in both seats, eval_alternated_<key> is the mean of the two
    seats' exact results (half the games as X, half as O); a one-seat run leaves it out."""
    rows = run(job(compose("algorithm=td_value", "opponent=self", "episodes_per_update=50",
                           "iterations=2", "eval_every=2", "seed=3"))).rows
    last = rows.iloc[-1]
    for key in evaluate.ALTERNATED_KEYS:
        both = (last[evaluate.column(1, key)] + last[evaluate.column(2, key)]) / 2
        assert last[evaluate.alternated_column(key)] == pytest.approx(both, abs=1e-15), key
    assert sum(last[evaluate.alternated_column(f"random_{r}")]
               for r in ("win", "draw", "loss")) == pytest.approx(1.0, abs=1e-12)
    assert rows.loc[rows["iteration"] == 1, evaluate.alternated_column("random_win")].isna().all()


def test_a_one_seat_run_has_no_alternated_results(short_run, tmp_path):
    assert not any(c.startswith("eval_alternated_") for c in short_run.rows.columns)
    results.commit(tmp_path, results.pack([short_run]))
    table = pd.read_parquet(tmp_path)
    assert table[[evaluate.alternated_column(k) for k in evaluate.ALTERNATED_KEYS]].isna().all().all()


@pytest.mark.parametrize("overrides, expected", [
    # q_table: epsilon 1 multiplied by the decay before every game; the row holds the last game's
    (("algorithm=q_table", "epsilon_decay_per_game=0.99"), lambda i: 0.99 ** (10 * i)),
    # mc_vfa: the epsilon the iteration's games were played with, decayed after every update
    (("algorithm=mc_vfa", "layers=1", "neurons=4", "epsilon=0.5", "epsilon_decay_per_update=0.5"),
     lambda i: 0.5 * 0.5 ** (i - 1)),
    # q_net: geometric from epsilon at the first iteration to epsilon_final at the last
    (("algorithm=q_net", "epsilon=1", "epsilon_final=0.01"), lambda i: 0.1 ** (i - 1)),
    (("algorithm=td_value", "epsilon=0.3"), lambda i: 0.3),  # constant
    (("algorithm=alphazero", "simulations=4", "train_steps=2", "gating_games=0"), None),
])
def test_epsilon_is_recorded_per_iteration(overrides, expected):
    rows = run(job(compose(*overrides, "opponent=random", "player=1", "episodes_per_update=10",
                           "iterations=3", "seed=2"))).rows
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    if expected is None:  # no epsilon-greedy exploration: null
        assert rows["train_epsilon"].isna().all()
    else:
        assert rows["train_epsilon"].tolist() == pytest.approx([expected(i) for i in (1, 2, 3)],
                                                               rel=1e-12)


@pytest.mark.parametrize("algorithm", sorted(TINY_RUNS))
def test_a_seats_move_table_evaluates_as_the_whole_table(algorithm):
    """lab.run evaluates a one-seat agent on the rows where that seat moves only: the same exact
    results as from the whole table, in either seat."""
    j = job(compose(f"algorithm={algorithm}", *TINY_RUNS[algorithm], "iterations=3",
                    "episodes_per_update=20"))
    learner = j.algorithm.Learner(j.knobs, j.run)
    for _ in range(3):
        learner.iterate()
    agent = learner.agent()
    whole = agent.move_table()
    for seat in (1, 2):
        assert evaluate.exact(agent.move_table(seat), seat) == evaluate.exact(whole, seat)
