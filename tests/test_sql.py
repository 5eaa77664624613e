"""SQL over a results_dir with DuckDB: the queries the docs show (docs/results.md) give what the lab
reads, and no glob for *.parquet, recursive or not, counts a row twice."""

import re
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from lab import results
from sweeping import REPO, cli

SHOWN = "results/smoke"
"""The results_dir the shown queries name; the tests put a real sweep's in its place"""


def shown_queries() -> list[str]:
    """Every ```sql block of the docs pages."""
    pages = sorted((REPO / "docs").rglob("*.md"))
    return [q for page in pages for q in re.findall(r"```sql\n(.*?)```", page.read_text(), re.S)]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    """The smoke sweep, short, trained in this process; its index written as a sweep writes it."""
    cwd = tmp_path_factory.mktemp("sql")
    done = cli(["+sweeps=smoke", "iterations=20", "eval_every=5", "results_dir=smoke",
                "hydra.launcher.parallel=false", "hydra.launcher.figures=false"], cwd)
    assert done.returncode == 0, done.stderr
    results.load(cwd / "smoke")  # the table's index too
    return cwd / "smoke"


def _sql(query: str, results_dir: Path) -> pd.DataFrame:
    return duckdb.sql(query.replace(SHOWN, str(results_dir))).df()


def test_the_shown_queries_give_what_the_lab_reads(smoke):
    best, curve = shown_queries()
    runs = results.runs(results.load(smoke))
    runs["win_minus_loss"] = runs.eval_p2_random_win - runs.eval_p2_random_loss
    expected = runs.groupby(["layers", "neurons"]).win_minus_loss.agg(["mean", "size"]).sort_values(
        "mean", ascending=False)
    got = _sql(best, smoke)
    assert len(got) == len(expected) == 2 and (got.seeds == 2).all()
    assert list(zip(got.layers, got.neurons)) == list(expected.index)
    assert got.win_minus_loss.tolist() == pytest.approx(expected["mean"].round(4).tolist(), abs=1e-9)
    table = results.load(smoke)
    first = table[table.run_id == table.run_id.min()]
    got = _sql(curve, smoke)
    assert got.iteration.tolist() == list(range(1, 21))
    assert got.p2_win_rate.tolist() == first.p2_win_rate.tolist()
    evaluated = got.eval_p2_onestep_win.notna()
    assert got.iteration[evaluated].tolist() == [5, 10, 15, 20]


def test_no_parquet_glob_counts_a_row_twice(smoke):
    rows = len(results.load(smoke))
    assert sorted(smoke.rglob("*.parquet")) == results.run_files(smoke)  # the index parts are *.part
    for glob in ("*.parquet", "**/*.parquet"):
        count = duckdb.sql(f"SELECT count(*) AS n FROM read_parquet('{smoke}/{glob}')").df().n[0]
        assert count == rows == 4 * 20, glob


def test_index_parts_named_parquet_by_an_earlier_lab_are_replaced(smoke, tmp_path):
    legacy = tmp_path / results.INDEX / "table" / "0123.parquet"
    legacy.parent.mkdir(parents=True)
    for run_file in results.run_files(smoke):
        (tmp_path / run_file.name).write_bytes(run_file.read_bytes())
    legacy.write_bytes(results.run_files(smoke)[0].read_bytes())  # an old part: a whole table
    assert len(results.load(tmp_path)) == 4 * 20  # not read: only *.part files are parts
    assert not legacy.exists() and sorted(tmp_path.rglob("*.parquet")) == results.run_files(tmp_path)
