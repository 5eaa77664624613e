"""Exact evaluation during training: which rows carry it, what it holds, and its cost kept out of
train_seconds."""

import dataclasses
import types

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab import agents, evaluate, results, run as run_module
from lab.compose import compose
from lab.config import job, parse
from sweeping import TINY_RUNS
from lab.run import evaluation, run

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
    path = results.save(short_run, tmp_path)
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
    both = evaluation(agent, dataclasses.replace(run_cfg, opponent="self", player=None))
    assert set(both) == set(columns(1)) | set(columns(2))
    for seat in (1, 2):
        expected = evaluate.exact(agent, seat)
        assert [both[evaluate.column(seat, k)] for k in KEYS] == [expected[k] for k in KEYS]
    assert set(evaluation(agent, run_cfg)) == set(columns(2))




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
