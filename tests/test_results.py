"""Reading a results directory: every file, in parallel, with the clear error naming a bad file, and
integer and boolean columns that stay integers and booleans beside failed runs."""

import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab import results
from lab.results import columns
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import lost as lost_run
from lab.run import run
from sweeping import TINY, values


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A finished mc_vfa run, a finished q_table run and a failed run (one row, as a lost task)."""
    out = tmp_path_factory.mktemp("mixed")
    for overrides in ([*TINY, "eval_every=2"], ["algorithm=q_table", *TINY, "eval_every=2"]):
        results.commit(out, results.pack([run(job(compose(*overrides)))]))
    lost = job(compose(*TINY, "seed=7"))
    results.commit(out, results.pack([lost_run(lost, RuntimeError("node died"))]))
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


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _parts(root, name):
    return sorted((root / results.INDEX / name).glob(f"*{results.PART}"))


def test_the_index_gives_what_the_files_say_and_follows_their_changes(tmp_path):
    jobs = [job(compose(*TINY, f"seed={s}", f"results_dir={tmp_path}")) for s in range(3)]
    for j in jobs:
        results.commit(tmp_path, results.pack([run(j)]))
    before = _files(tmp_path)
    assert results.statuses(tmp_path) == {j.run_id: "finished" for j in jobs}
    assert _files(tmp_path) == before  # planning reads, never writes
    results.statuses(tmp_path, write_index=True)
    assert len(_parts(tmp_path, "stored")) == 1
    # a run rewritten as failed, one removed and one added: the index follows the files
    results.commit(tmp_path, results.pack([lost_run(jobs[0], RuntimeError("x"))]))
    (tmp_path / f"{jobs[1].run_id}.parquet").unlink()
    extra = job(compose(*TINY, "seed=9", f"results_dir={tmp_path}"))
    results.commit(tmp_path, results.pack([run(extra)]))
    expected = {jobs[0].run_id: "failed", jobs[2].run_id: "finished", extra.run_id: "finished"}
    assert results.statuses(tmp_path) == expected
    assert results.statuses(tmp_path, write_index=True) == expected == results.statuses(tmp_path)
    assert len(_parts(tmp_path, "stored")) == 1  # what no file holds any more is forgotten
    # the table's index: load gives what the files hold, before and after it exists
    first, second = results.load(tmp_path), results.load(tmp_path)
    pd.testing.assert_frame_equal(first, second)
    plain = pd.read_parquet(tmp_path).sort_values(["run_id", "iteration"], ignore_index=True)
    pd.testing.assert_frame_equal(values(second), values(plain))  # pandas still reads only the runs


@pytest.mark.parametrize("combined", [2, 128], ids=["tables joined two at a time", "joined once a part"])
def test_a_sweeps_writer_indexes_its_runs_so_nothing_is_read_twice(tmp_path, monkeypatch, combined):
    jobs = [job(compose(*TINY, f"seed={s}", f"results_dir={tmp_path}")) for s in range(5)]
    rows = len(run(jobs[0]).records)
    monkeypatch.setattr(results, "PART_ROWS", 2.5 * rows)  # a part every third run
    monkeypatch.setattr(results.Writer, "COMBINED", combined)
    writer = results.Writer(tmp_path)
    for j in jobs:
        writer.record(results.commit(tmp_path, results.pack([run(j)])))
    writer.flush()
    assert len(_parts(tmp_path, "table")) == 2 and len(_parts(tmp_path, "stored")) == 2
    reads = []
    read = results.read_run
    monkeypatch.setattr(results, "read_run", lambda *a, **k: reads.append(a) or read(*a, **k))
    frame = results.load(tmp_path)
    assert results.statuses(tmp_path) == {j.run_id: "finished" for j in jobs}
    assert not reads  # every run came from the index
    plain = pd.read_parquet(tmp_path).sort_values(["run_id", "iteration"], ignore_index=True)
    pd.testing.assert_frame_equal(values(frame), values(plain))


def test_a_damaged_index_is_rebuilt_and_a_read_only_results_dir_still_reads(tmp_path, monkeypatch):
    one = job(compose(*TINY, f"results_dir={tmp_path}"))
    results.commit(tmp_path, results.pack([run(one)]))
    damaged = tmp_path / results.INDEX / "stored" / f"damaged{results.PART}"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"not parquet")
    assert results.statuses(tmp_path, write_index=True) == {one.run_id: "finished"}
    assert results.statuses(tmp_path) == {one.run_id: "finished"}
    assert not damaged.exists() and len(_parts(tmp_path, "stored")) == 1
    for part in _parts(tmp_path, "stored"):
        part.unlink()

    def refused(path, data):  # what a read-only results_dir does (chmod does not stop root)
        raise PermissionError(f"read-only: {path}")

    monkeypatch.setattr(results, "write_atomic", refused)
    assert results.statuses(tmp_path, write_index=True) == {one.run_id: "finished"}
    assert len(results.load(tmp_path)) == 3
    assert not _parts(tmp_path, "stored") and not _parts(tmp_path, "table")


def test_a_stored_run_reads_back_in_the_schema_with_the_rows_pandas_would_have_written(mixed, tmp_path):
    # the file carries no Arrow schema (lab.results.parquet_bytes): Parquet's own types give it back
    out, _ = mixed
    for path in results.run_files(out):
        table = pq.read_table(path)
        assert table.schema.equals(columns.schema())
    result = run(job(compose("algorithm=q_table", *TINY, "eval_every=2", "seed=3")))
    results.commit(tmp_path, results.pack([result]))
    stored = pq.read_table(tmp_path / f"{result.run_id}.parquet")
    assert stored.equals(results.arrow_table(result.rows))  # the worker's table: pandas' conversion, exactly
    assert results.fingerprint(stored.to_pandas()) == results.fingerprint(result.rows)


def test_a_group_commit_stores_every_run_whole_checkpoint_first(tmp_path, monkeypatch):
    runs = results.pack([run(job(compose(*TINY, f"seed={s}"))) for s in range(3)])
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: renamed.append(Path(b).name) or replace(a, b))
    written = results.commit(tmp_path, runs)
    assert [Path(p).suffix for p in renamed] == [".npz"] * 3 + [".parquet"] * 3  # each table after its checkpoint
    assert [w.key for w in written] == [results.index_key(tmp_path / f"{r.run_id}.parquet") for r in runs]
    assert all(w.parquet is None and w.checkpoint is None for w in written)  # only the tables stay, for the index
    assert results.statuses(tmp_path) == {r.run_id: "finished" for r in runs}
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no temporary file left
