"""Runs a search scheduler stopped early (status `stopped`): lab.run writes them with the rows
they trained; figures draw them, the summary leaves them out and says so, a grid re-trains them."""

import pandas as pd

from lab import results, sweep
from lab.analysis import plots, summary
from lab.results import columns
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run


def _results(tmp_path):
    """Two q_table runs in one results_dir: one finished, one stopped by its report hook at 4."""
    common = ["algorithm=q_table", "opponent=onestep", "player=2", "iterations=10", "episodes_per_update=20",
              "eval_every=2", f"results_dir={tmp_path}"]
    finished = run(job(compose(*common, "alpha=0.5")))
    stopped = run(job(compose(*common, "alpha=0.1")), report=lambda iteration, rows, learner: iteration >= 4)
    for result in (finished, stopped):
        results.commit(tmp_path, results.pack([result]))
    return finished, stopped


def test_a_stopped_run_keeps_its_rows_and_is_drawn_not_summarised(tmp_path):
    finished, stopped = _results(tmp_path)
    assert stopped.stopped and not stopped.failed and not finished.stopped
    table = results.load(tmp_path)
    rows = table[table.run_id == stopped.run_id]
    assert list(rows["iteration"]) == [1, 2, 3, 4] and (rows["status"] == "stopped").all()
    assert results.statuses(tmp_path) == {finished.run_id: "finished", stopped.run_id: "stopped"}

    best = summary.best_configurations(table)
    assert set(best["best_run"]) == {finished.run_id}  # never compared as if it had trained in full
    _, paths = summary.write_summary(tmp_path)
    assert "1 runs stopped early by a search scheduler are left out" in paths[1].read_text()

    curves = summary.exact_curves(table, stopped=True)
    assert set(curves["run_id"]) == {finished.run_id, stopped.run_id}
    assert set(summary.exact_curves(table)["run_id"]) == {finished.run_id}
    (figure,) = plots.exact_figures(table, tmp_path / "figures")
    assert figure.exists()


def test_a_grid_trains_a_stopped_run_in_full(tmp_path):
    finished, stopped = _results(tmp_path)
    cfgs = [compose("algorithm=q_table", "opponent=onestep", "player=2", "iterations=10",
                    "episodes_per_update=20", "eval_every=2", f"results_dir={tmp_path}", f"alpha={a}")
            for a in (0.5, 0.1)]
    p = sweep.plan(cfgs)
    assert [j.run_id for j in p.train] == [stopped.run_id] and [j.run_id for j in p.skip] == [finished.run_id]
    assert "1 run stopped early by a search in results_dir: training them in full" in p.notes
    again = run(p.train[0])
    assert list(again.rows["iteration"]) == list(range(1, 11)) and (again.rows["status"] == "finished").all()
    pd.testing.assert_frame_equal(  # the stopped run's rows are the first rows of the full one
        again.rows.drop(columns=list(columns.CIRCUMSTANCES) + ["status"]).head(4),
        stopped.rows.drop(columns=list(columns.CIRCUMSTANCES) + ["status"]))
