"""Reading a results directory: every file, in parallel, with the clear error naming a bad file, and
integer and boolean columns that stay integers and booleans beside failed runs."""

import pandas as pd
import pytest

from lab import results, sweep
from lab.compose import compose
from lab.config import job
from lab.run import RunResult, run
from sweeping import TINY, values


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A finished mc_vfa run, a finished q_table run and a failed run (one row, as a lost task)."""
    out = tmp_path_factory.mktemp("mixed")
    for overrides in ([*TINY, "eval_every=2"], ["algorithm=q_table", *TINY, "eval_every=2"]):
        results.save(run(job(compose(*overrides))), out)
    lost = job(compose(*TINY, "seed=7"))
    results.save(RunResult(lost.run_id, sweep._failed_rows(lost, RuntimeError("node died")), None), out)
    return out, lost.run_id


def test_load_keeps_integers_and_booleans_beside_failed_runs(mixed):
    out, failed = mixed
    frame = results.load(out)
    assert len(frame) == 7 and frame.run_id.nunique() == 3
    for column in ("iteration", "episodes", "p1_wins", "seed", "layers", "player", "eval_p2_losing_lines"):
        assert frame[column].dtype == "Int64", column
    assert frame["eval_p2_never_loses"].dtype == "boolean"
    assert frame["alpha"].dtype == "float64"
    lost = frame[frame.run_id == failed]
    assert lost.p1_wins.isna().all() and (lost.iteration == 0).all() and lost.status.eq("failed").all()
    assert frame[frame.algorithm == "q_table"].layers.isna().all()  # a knob q_table does not use
    assert frame.eval_p2_never_loses.notna().sum() == 4  # evaluated at iterations 2 and 3 of each run
    plain = pd.read_parquet(out).sort_values(["run_id", "iteration"], ignore_index=True)
    pd.testing.assert_frame_equal(values(frame), values(plain))  # the same rows as pandas reads


def test_statuses_of_many_files_and_the_one_bad_file_among_them(mixed, tmp_path):
    out, failed = mixed
    assert results.statuses(out) == {p.stem: "failed" if p.stem == failed else "finished"
                                     for p in results.run_files(out)}
    table = next(p for p in results.run_files(out) if p.stem != failed).read_bytes()
    for i in range(300):
        (tmp_path / f"{i:04d}.parquet").write_bytes(table)
    (tmp_path / "0150.parquet").write_bytes(table[: len(table) // 2])  # cut in half
    with pytest.raises(results.ResultsError, match=r"results_dir holds .*0150\.parquet, which is not a "
                                                   r"readable run table .*move it out"):
        results.statuses(tmp_path)
    with pytest.raises(results.ResultsError, match=r"0150\.parquet, which is not a readable run table"):
        results.load(tmp_path)
