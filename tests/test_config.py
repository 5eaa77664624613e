"""Run identity: what a run computes, and nothing else."""

from lab.config.compose import compose
from lab.config.jobs import parse, run_id


def _id(*overrides):
    return run_id(*parse(compose(*overrides)))


def test_unused_knobs_do_not_change_a_run():
    assert _id("algorithm=q_table", "layers=2") == _id("algorithm=q_table", "layers=3")
    assert _id("algorithm=mc_vfa", "layers=2") != _id("algorithm=mc_vfa", "layers=3")


def test_self_play_ignores_the_seat():
    assert _id("algorithm=negamax_q", "opponent=self", "player=1") == \
        _id("algorithm=negamax_q", "opponent=self", "player=2")
    assert _id("algorithm=negamax_q", "opponent=random", "player=1") != \
        _id("algorithm=negamax_q", "opponent=random", "player=2")
    run_cfg, _ = parse(compose("algorithm=negamax_q", "opponent=self"))
    assert run_cfg.player is None


def test_results_location_is_not_identity():
    assert _id("results_dir=/tmp/a") == _id("results_dir=/tmp/b", "force=true")


def test_default_eval_every_gives_about_50_points():
    run_cfg, _ = parse(compose("iterations=1000"))
    assert run_cfg.eval_every == 20
    run_cfg, _ = parse(compose("iterations=30"))
    assert run_cfg.eval_every == 1
