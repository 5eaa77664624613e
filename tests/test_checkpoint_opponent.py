"""`opponent=PATH.npz`: a trained agent of any algorithm as the opponent of any learner, frozen,
validated like every other knob before anything runs."""

import numpy as np
import pytest

from lab import agents
from lab.game import opponents
from lab.config.compose import compose
from lab.config.jobs import job, parse
from lab.knobs import ConfigError
from lab.run import run
from sweeping import TINY_RUNS, cli


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A q_table agent (either seat) and an mc_vfa net trained as X, saved."""
    out = tmp_path_factory.mktemp("checkpoints")
    paths = {}
    for name, overrides in (("q_table", ("algorithm=q_table", "opponent=random", "player=1")),
                            ("mc_vfa_x", ("algorithm=mc_vfa", "layers=2", "neurons=8",
                                          "opponent=onestep", "player=1"))):
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
    (lambda d: (d / "text.npz").write_text("not a zip") and d / "text.npz", "is not a lab checkpoint"),
    (lambda d: np.savez(d / "foreign.npz", q=np.zeros(3)) or d / "foreign.npz",
     "is not a lab checkpoint"),
])
def test_a_missing_or_foreign_file_is_one_clear_error(tmp_path, make, allowed):
    path = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ConfigError, match=f"^opponent='{path}' is not allowed: .*{allowed}"):
        job(compose("algorithm=q_table", f"opponent={path}", "player=2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_net_trained_in_the_learners_seat_is_refused(checkpoints):
    with pytest.raises(ConfigError, match="opponent=.* is not allowed: .*trained as player 1"):
        job(compose("algorithm=q_table", f"opponent={checkpoints['mc_vfa_x']}", "player=1"))


@pytest.mark.integration
def test_the_sweep_refuses_a_missing_checkpoint_before_anything_runs(tmp_path):
    done = cli(["algorithm=q_table", "opponent=nowhere/agent.npz", "results_dir=out"], tmp_path)
    assert done.returncode == 2
    assert "opponent='nowhere/agent.npz' is not allowed" in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()
