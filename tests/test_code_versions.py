"""Runs finished in results_dir by another code version: the note and the switch
(on_code_change=reuse or rerun), and how results.stored reads each run's code and status. Sweeps run
in this process without Ray (hydra.launcher.parallel=false)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lab import results
from lab.results import provenance
from sweeping import serial_grid, snapshot

def _rewrite_commit(path, commit):
    """Make a stored run look trained by another commit."""
    table = pq.read_table(path)
    column = pa.array([commit] * table.num_rows, pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("git_commit"), "git_commit", column), path)


@pytest.fixture
def one_run_from_old_code(tmp_path):
    """results/ with two finished runs, one of them stamped with another commit."""
    assert serial_grid(tmp_path, "seed=0,1").returncode == 0
    old = results.run_files(tmp_path / "results")[0]
    _rewrite_commit(old, "0123456789ab" + "c" * 28)
    return old


def test_runs_of_another_code_version_are_reused_with_a_note(tmp_path, one_run_from_old_code):
    before = snapshot(tmp_path / "results")
    done = serial_grid(tmp_path, "seed=0,1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "other code" in line]
    current = provenance.version_of(provenance.code())
    assert lines == [f"1 run finished in results_dir was trained by other code: 0123456789ab"
                     f"{'+dirty' if provenance.code()['git_dirty'] else ''} (1); this is {current}: "
                     "reused as they are (on_code_change=rerun trains them again)"]
    assert "0 runs to train" in done.stdout
    assert snapshot(tmp_path / "results") == before  # nothing trained, no record


def test_on_code_change_rerun_trains_them_again(tmp_path, one_run_from_old_code):
    done = serial_grid(tmp_path, "seed=0,1", "on_code_change=rerun")
    assert done.returncode == 0, done.stderr
    assert "1 run to train" in done.stdout
    assert "trained by other code: 0123456789ab" in done.stdout and "training them again" in done.stdout
    again = pq.read_table(one_run_from_old_code, columns=["git_commit"]).to_pydict()["git_commit"]
    assert set(again) == {provenance.code()["git_commit"]}
    # the same code now: nothing more to say or do
    done = serial_grid(tmp_path, "seed=0,1", "on_code_change=rerun")
    assert "0 runs to train" in done.stdout and "other code" not in done.stdout


def test_a_dirty_tree_of_the_same_commit_is_the_same_code():
    code = {"lab_version": "0.1.0", "git_commit": "a" * 40, "git_dirty": False}
    assert provenance.same_code({**code, "git_dirty": True}, code)
    assert not provenance.same_code({**code, "git_commit": "b" * 40}, code)
    assert provenance.same_code({**code, "git_commit": None}, code)  # a wheel: its lab version
    assert not provenance.same_code({"lab_version": None, "git_commit": None, "git_dirty": None}, code)


def test_stored_reads_the_code_of_each_run(tmp_path, one_run_from_old_code):
    stored = results.stored(tmp_path / "results")
    assert {s.status for s in stored.values()} == {"finished"}
    assert stored[one_run_from_old_code.stem].code["git_commit"].startswith("0123456789ab")
    assert results.statuses(tmp_path / "results") == {k: "finished" for k in stored}


def test_stored_reads_a_failed_row_anywhere_and_files_of_other_writers(tmp_path, one_run_from_old_code):
    """A run is failed if any row is; a file written without statistics (another writer) reads
    the same."""
    out = tmp_path / "results"
    expected = results.stored(out)
    for path in results.run_files(out):
        pq.write_table(pq.read_table(path), path, write_statistics=False)
    assert results.stored(out) == expected
    failed = results.run_files(out)[1]
    table = pq.read_table(failed)
    status = pa.array(["finished"] * (table.num_rows - 1) + ["failed"], pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("status"), "status", status), failed)
    assert results.stored(out)[failed.stem].status == "failed"
