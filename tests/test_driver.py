"""The sweep's driver: the plan is known and printed before training, a dry run only lists it, and
the driver keeps nothing of a finished run but its id, status and first error line."""

import gc
import sys
import weakref

import pytest

from lab import results, sweep
from lab.run import run
from lab.execution import batch
from sweeping import SERIAL, TINY, cli, snapshot


@pytest.fixture
def half_done(tmp_path):
    """tmp_path/results holds seeds 0 and 1 of the TINY grid finished."""
    done = cli(["--multirun", *SERIAL, "results_dir=results", *TINY, "seed=0,1"], tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_a_dry_run_lists_what_would_train_and_what_is_skipped_and_changes_nothing(half_done):
    before = snapshot(half_done)
    done = cli(["--multirun", "results_dir=results", *TINY, "seed=0,1,2,3", "gamma=0.95,0.950",
                "hydra.launcher.dry_run=true"], half_done)
    assert done.returncode == 0, done.stderr
    assert snapshot(half_done) == before
    lines = done.stdout.splitlines()
    assert lines[0] == "1 configuration x 4 seeds, 2 runs to train"
    assert "4 runs repeat another one in every knob their algorithm uses: trained once" in lines
    assert "2 runs already finished in results_dir: skipped (force=true re-runs them)" in lines
    train = [line for line in lines if line.startswith("train ")]
    skip = [line for line in lines if line.startswith("skip ")]
    assert [line.split("  ")[1] for line in train] == [" ".join(["results_dir=results", *TINY, f"seed={s}", "gamma=0.95"])
                                                       for s in (2, 3)]
    assert sorted(line.split()[1] for line in skip) == sorted(p.stem for p in results.run_files(half_done / "results"))
    assert lines[-1] == "dry run: nothing trained, nothing written"


def test_the_notes_are_printed_before_training(half_done, monkeypatch):
    printed_before_training = []

    def watched_run(job, code):
        printed_before_training.append(sys.stdout.getvalue())
        return run(job)

    monkeypatch.setattr(batch, "run", watched_run)
    done = cli(["--multirun", *SERIAL, "results_dir=results", *TINY, "seed=0,1,2", "force=false"], half_done)
    assert done.returncode == 0, done.stderr
    assert printed_before_training[0] == ("1 configuration x 3 seeds, 1 run to train\n"
                                          "2 runs already finished in results_dir: skipped (force=true re-runs them)\n")
    assert f"\n1 run finished, 0 failed; results in {half_done / 'results'}\ncores: " in done.stdout


def test_the_driver_keeps_no_rows_or_checkpoints_of_finished_runs(tmp_path, monkeypatch):
    from lab.config.compose import compose
    from lab.config.jobs import job

    kept, pack = [], results.pack
    monkeypatch.setattr(results, "pack", lambda ran: kept.extend(weakref.ref(r) for r in ran) or pack(ran))
    jobs = [job(compose(*TINY, f"seed={s}", f"results_dir={tmp_path}")) for s in range(3)]
    broken = job(compose(*TINY, "seed=3", "neurons=1000000000000000", f"results_dir={tmp_path}"))
    done = sweep.execute([*jobs, broken], parallel=False).done
    gc.collect()
    assert len(kept) == 4 and all(ref() is None for ref in kept)  # every RunResult is gone
    failed = [o for o in done if o.failed]
    assert [o.run_id for o in failed] == [broken.run_id]
    assert failed[0].error.startswith("MemoryError: Unable to allocate") and "\n" not in failed[0].error
    assert {o.run_id for o in done} == {j.run_id for j in [*jobs, broken]}
