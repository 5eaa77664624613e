"""The sweep record (lab.sweep.write_record): a copy of every sweep's command, overrides and composed
config under results_dir/_sweeps, written only when the sweep trains. Sweeps run in this process
without Ray (hydra.launcher.parallel=false)."""

import time

import pandas as pd
from omegaconf import OmegaConf

from lab import results
from lab.results import provenance
from sweeping import serial_grid


def _records(tmp_path):
    return sorted((tmp_path / "results" / results.SWEEPS).glob("*.yaml"))


def test_a_sweep_that_trains_leaves_a_record_of_its_config(tmp_path):
    done = serial_grid(tmp_path, "seed=0,1")
    assert done.returncode == 0, done.stderr
    (record,) = _records(tmp_path)
    doc = OmegaConf.load(record)
    assert doc.overrides[-1] == "seed=0,1" and "results_dir=results" in doc.overrides
    assert "hydra.launcher.parallel=false" in doc.hydra_overrides
    assert doc.config.results_dir == "results" and doc.config.iterations == 3
    assert doc.config.algorithm == "mc_vfa" and "hydra" not in doc.config
    assert doc.code.git_commit == provenance.code()["git_commit"]
    assert doc.runs == {"configurations": 1, "seeds": 2, "train": 2, "skip": 0}
    assert doc.sweeper._target_.endswith("LabSweeper") and doc.launcher.parallel is False
    assert record.name.endswith("Z.yaml")  # a UTC timestamp
    # the readers skip it
    assert len(pd.read_parquet(tmp_path / "results")) == 6 and len(results.load(tmp_path / "results")) == 6

    # nothing left to train: no new record; a second sweep that trains: a second one
    assert serial_grid(tmp_path, "seed=0,1").returncode == 0
    assert len(_records(tmp_path)) == 1
    assert serial_grid(tmp_path, "seed=1,2", "alpha=0.0154,0.02").returncode == 0
    assert len(_records(tmp_path)) == 2
    # a configuration is the knobs without the seed: 2 alphas x 2 seeds, one run finished before
    assert OmegaConf.load(_records(tmp_path)[-1]).runs == {"configurations": 2, "seeds": 2, "train": 3, "skip": 1}


def test_no_record_on_a_dry_run_or_an_invalid_knob(tmp_path):
    assert serial_grid(tmp_path, "seed=0,1", "hydra.launcher.dry_run=true").returncode == 0
    assert serial_grid(tmp_path, "seed=0,1", "alpha=7").returncode == 2
    assert not (tmp_path / "results").exists()


def test_records_of_sweeps_started_in_the_same_second_sort_in_order(tmp_path, monkeypatch):
    from lab import sweep

    monkeypatch.setattr(sweep.time, "gmtime", lambda: time.struct_time((2026, 12, 1, 0, 0, 0, 1, 335, 0)))
    config = OmegaConf.create({"results_dir": str(tmp_path)})
    written = [sweep.write_record([tmp_path], config, {"train": n})[0] for n in range(1, 13)]
    assert [p.name for p in written[:3]] == ["20261201T000000Z.yaml", "20261201T000000Z_002.yaml",
                                             "20261201T000000Z_003.yaml"]
    assert sorted(written) == written  # the last record of a results_dir is the newest one
    assert [OmegaConf.load(p).runs.train for p in written] == list(range(1, 13))
