"""Resumable learners: a run killed mid-way and resumed from its last saved training state gives
the same rows (apart from columns.CIRCUMSTANCES) and the same agent as the run trained without
interruption, for every algorithm, against a fixed opponent and in self-play (where it can), and
for a negamax_q ensemble."""

import io

import numpy as np
import pandas as pd
import pytest

from lab import agents
from lab.results import columns
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run
from sweeping import TINY_RUNS


class Killed(BaseException):
    """Stands for the process dying: not an Exception, so lab.run does not record it."""


def _job(algorithm, tmp_path, *extra):
    cfg = compose(f"algorithm={algorithm}", "iterations=7", "episodes_per_update=10", "eval_every=2",
                  "seed=5", f"results_dir={tmp_path}", *TINY_RUNS[algorithm], *extra)
    return job(cfg)


def _variants():
    """(algorithm, overrides): each algorithm against OneStep as O, and in self-play where it can;
    negamax_q's TINY_RUNS is already an ensemble in self-play."""
    out = []
    for algorithm in agents.ALGORITHMS:
        out.append((algorithm, ("opponent=onestep", "player=2", "ensemble=2" if algorithm == "negamax_q" else None)))
        if agents.get(algorithm).self_play:
            out.append((algorithm, ("opponent=self",)))
    return [pytest.param(a, tuple(o for o in extra if o), id=f"{a}-{extra[0].split('=')[1]}") for a, extra in out]


def _comparable(frame):
    return frame.drop(columns=[c for c in columns.CIRCUMSTANCES if c in frame]).reset_index(drop=True)


@pytest.mark.parametrize("algorithm, extra", _variants())
def test_killed_run_resumes_to_the_same_rows(algorithm, extra, tmp_path):
    the_job = _job(algorithm, tmp_path, *extra)
    whole = run(the_job)
    assert not whole.failed, whole.rows["error"].iloc[0]

    state = tmp_path / "state.npz"

    def kill_at_6(iteration, rows, learner):
        if iteration == 6:
            raise Killed  # after the state of iteration 3 was saved, before the next save
        return False

    with pytest.raises(Killed):
        run(the_job, state_path=state, save_every=3, report=kill_at_6)
    assert state.exists()
    resumed = run(the_job, state_path=state, save_every=3)
    assert not state.exists()  # a run that ends removes its saved state
    pd.testing.assert_frame_equal(_comparable(resumed.rows), _comparable(whole.rows))
    assert resumed.checkpoint == whole.checkpoint


def _saved(learner) -> dict:
    """The learner's training state written to an .npz and read back without pickles."""
    buffer = io.BytesIO()
    np.savez(buffer, **learner.state())
    with np.load(io.BytesIO(buffer.getvalue()), allow_pickle=False) as archive:
        return dict(archive)


def test_state_loads_without_pickle(tmp_path):
    """The saved state is an .npz of plain arrays and one JSON document."""
    the_job = _job("mc_vfa", tmp_path)
    learner = the_job.algorithm.Learner(the_job.knobs, the_job.run)
    learner.iterate()
    assert all(array.dtype != object for array in _saved(learner).values())


def test_restore_under_mutated_knobs_trains_with_them(tmp_path):
    """PBT's explore: a state restored into a learner built from other knobs keeps the training
    (tables, nets, counters) but trains with the new knobs; a decaying knob's current value keeps
    its decay and takes the new start (mc_vfa's alpha)."""
    import dataclasses

    the_job = _job("mc_vfa", tmp_path, "alpha_decay_per_update=0.5")
    learner = the_job.algorithm.Learner(the_job.knobs, the_job.run)
    learner.iterate()
    learner.iterate()
    assert learner.alpha == pytest.approx(the_job.knobs.alpha * 0.25)
    mutated = dataclasses.replace(the_job.knobs, alpha=the_job.knobs.alpha * 3)
    fresh = the_job.algorithm.Learner(mutated, the_job.run)
    fresh.restore(_saved(learner))
    assert fresh.alpha == pytest.approx(mutated.alpha * 0.25)
    assert fresh.knobs is mutated
    for seat in the_job.run.seats:
        for w_old, w_new in zip(learner.nets[seat].weights, fresh.nets[seat].weights):
            assert (w_old == w_new).all()
    assert fresh.net is fresh.nets[the_job.run.seats[0]]  # shared objects stay shared
