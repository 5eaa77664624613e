"""Hydra's own knobs honoured or refused in one line (lab.sweep.overrides.HydraKnobs): its folder knobs,
interval() in a grid and the former names of the lab's options. Sweeps run in this process without
Ray."""

import pytest

from sweeping import SERIAL, TINY, cli, serial_grid, snapshot

REFUSED = [  # (arguments, what the one line says)
    (["--multirun", "hydra.sweep.dir=elsewhere"], "hydra.sweep.dir=elsewhere is not used by the lab"),
    (["--multirun", "hydra.sweep.subdir=job${hydra.job.num}"], "hydra.sweep.subdir=job${hydra.job.num} is not used"),
    (["hydra.run.dir=elsewhere"], "hydra.run.dir=elsewhere is not used by the lab: a run's results go to results_dir"),
    (["--multirun", "hydra.run.dir=elsewhere"], "hydra.run.dir=elsewhere is not used"),
    (["--multirun", "seed=interval(0,5)"], "seed=interval(0,5): a grid takes comma lists (a,b,c), range(), "
                                           "choice() or glob(); interval() belongs to a search"),
    (["--multirun", "hydra/sweeper=basic", "alpha=interval(0.001,0.1)"], "interval() belongs to a search"),
    (["--multirun", "+sweeps=smoke", "alpha=interval(0.001,0.1)"], "interval() belongs to a search"),
    (["on_code_change=maybe"], "on_code_change='maybe' is not allowed: on_code_change must be reuse"),
    (["hydra/launcher=lab_ray"], "hydra/launcher=lab_ray is now hydra/launcher=lab (the lab's launcher"),
    (["--multirun", "hydra/launcher=lab_ray"], "hydra/launcher=lab_ray is now hydra/launcher=lab"),
    (["--multirun", "hydra/sweeper=search", "hydra/launcher=lab_ray", "alpha=interval(0.001,0.1)"],
     "hydra/launcher=lab_ray is now hydra/launcher=lab"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_hydra_knobs_the_lab_does_not_follow_are_refused_in_one_line(tmp_path, args, message):
    before = snapshot(tmp_path)
    done = cli([*args, "results_dir=results", *TINY, *SERIAL], tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert snapshot(tmp_path) == before


def test_hydra_folder_knobs_at_their_values_pass(tmp_path):
    done = serial_grid(tmp_path, "hydra.sweep.dir=${results_dir}/_sweeps", "hydra.run.dir=.")
    assert done.returncode == 0, done.stderr
