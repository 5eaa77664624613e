"""The named sweeps that reproduce the write-ups (sweeps/writeup_ALGORITHM.yaml, docs/writeups.md "Reproducing
the write-ups"): each composes, every point of its grid is a valid job, and each sits at the
write-up's own settings. The runs themselves are measured in docs/writeups.md; test_q_table,
test_negamax_q and test_alphazero hold the learning thresholds."""

from functools import cache
from pathlib import Path

import pytest
import yaml

from lab.config import compose
from lab.config.jobs import job

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"


@cache
def grid(name):
    """Every job of a named sweep's grid, as the sweep composes it."""
    text = (SWEEPS / f"{name}.yaml").read_text()
    assert text.startswith("# @package _global_") and yaml.safe_load(text)["hydra"]["mode"] == "MULTIRUN"
    composer, overrides = compose.grid(f"+sweeps={name}")
    jobs = [job(composer(o)) for o in overrides]
    return {j.run_id: j for j in jobs}  # runs that differ only in unused knobs train once


@pytest.mark.parametrize("name, algorithm, runs", [
    ("writeup_mc_vfa", "mc_vfa", 96), ("writeup_q_table", "q_table", 5), ("writeup_alphazero", "alphazero", 5),
    ("writeup_td_value", "td_value", 18), ("writeup_negamax_q", "negamax_q", 20)])
def test_each_named_sweep_is_a_valid_grid_of_its_write_ups_algorithm(name, algorithm, runs):
    jobs = grid(name)
    assert len(jobs) == runs
    assert {j.algorithm.name for j in jobs.values()} == {algorithm}
    assert len({j.run.seed for j in jobs.values()}) >= 3  # several seeds
    assert {str(j.results_dir).rstrip("/").rsplit("/", 1)[-1] for j in jobs.values()} == {name}


def test_writeup_mc_vfa_covers_both_memory_modes_of_the_published_grid():
    jobs = grid("writeup_mc_vfa").values()
    assert {j.knobs.memory for j in jobs} == {"clear", "keep"}
    assert {(j.knobs.layers, j.knobs.neurons) for j in jobs} == {(2, 8), (3, 16), (4, 32), (5, 32)}
    assert {(j.run.opponent, j.run.player, j.run.iterations) for j in jobs} == {("onestep", 2, 1000)}


def test_writeup_q_table_is_the_notebooks_setting():
    for j in grid("writeup_q_table").values():
        assert (j.run.opponent, j.run.player) == ("random", 1)
        assert j.run.episodes_per_update * j.run.iterations == 10_000
        assert (j.knobs.alpha, j.knobs.epsilon, j.knobs.epsilon_decay_per_game) == (0.5, 1.0, 0.999)


def test_writeup_negamax_q_gives_every_ensemble_member_the_full_budget():
    jobs = grid("writeup_negamax_q").values()
    assert {j.knobs.ensemble for j in jobs} == {1, 5, 10, 20}
    for j in jobs:
        games_per_member = j.run.episodes_per_update * j.run.iterations / j.knobs.ensemble
        assert games_per_member == 10_000 and j.run.opponent == "self"
