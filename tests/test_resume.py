"""Resumable learners: a run killed mid-way and resumed from its last saved training state gives
the same rows as the run trained without interruption, for every algorithm."""

import pandas as pd
import pytest

from lab import agents, results
from lab.compose import compose
from lab.config import job
from lab.run import run
from sweeping import TINY_RUNS


class Killed(BaseException):
    """Stands for the process dying: not an Exception, so lab.run does not record it."""


def _job(algorithm, tmp_path):
    cfg = compose(f"algorithm={algorithm}", "iterations=7", "episodes_per_update=10", "eval_every=2",
                  "seed=5", f"results_dir={tmp_path}", *TINY_RUNS[algorithm])
    return job(cfg)


def _comparable(frame):
    return frame.drop(columns=[c for c in results.TIMING if c in frame]).reset_index(drop=True)


@pytest.mark.parametrize("algorithm", agents.ALGORITHMS)
def test_killed_run_resumes_to_the_same_rows(algorithm, tmp_path):
    the_job = _job(algorithm, tmp_path)
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


def test_state_loads_without_pickle(tmp_path):
    """The saved state is an .npz of plain arrays and one JSON document."""
    import io

    import numpy as np

    the_job = _job("mc_vfa", tmp_path)
    learner = the_job.algorithm.Learner(the_job.knobs, the_job.run)
    learner.iterate()
    with np.load(io.BytesIO(learner.state_bytes()), allow_pickle=False) as archive:
        assert all(archive[name].dtype != object for name in archive.files)
