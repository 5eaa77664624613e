"""Figures, summary, notebook and sweep progress on a small real sweep."""

import io
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from lab import results, sweep
from lab.analysis import plots, report, summary
from lab.evaluation import evaluate
from lab.config.compose import compose
from lab.execution.progress import clock
from lab.config.jobs import job
from lab.run import RunResult, run
from sweeping import cli
from test_compare import _runs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """A real sweep: mc_vfa and td_value, both seats, two seeds, tiny; plus td_value self-play."""
    out = tmp_path_factory.mktemp("analysis")
    cmd = [sys.executable, "-m", "lab.sweep", "--multirun", "algorithm=mc_vfa,td_value",
           "opponent=onestep", "player=1,2", "layers=2", "neurons=8", "episodes_per_update=20",
           "iterations=30", "eval_every=3", "seed=0,1", f"results_dir={out}",
           "hydra.launcher.parallel=false"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    for seed in (0, 1):
        cfg = compose("algorithm=td_value", "opponent=self", "episodes_per_update=20",
                             "iterations=30", "eval_every=3", f"seed={seed}")
        results.commit(out, results.pack([run(job(cfg))]))
    return out, done


@pytest.mark.integration
def test_sweep_ends_with_figures_and_summary(sweep_dir):
    out, done = sweep_dir
    assert "8 runs finished, 0 failed" in done.stdout
    # before the self-play runs; + write-up 001's figure for the two td_value configurations
    assert f"11 figures in {out / results.FIGURES}" in done.stdout  # before the self-play runs
    assert str(out / summary.SUMMARY / "summary.md") in done.stdout
    assert f"report in {out / report.REPORT / 'index.html'}" in done.stdout
    assert "left out" not in done.stdout  # 4 configurations: every figure
    # Without a terminal: one line per batch of runs stored together, naming its last run, with
    # counts and an ETA.
    lines = [line for line in done.stderr.splitlines() if re.match(r"(run|\d+ runs done \(last) [0-9a-f]{16}", line)]
    assert 1 <= len(lines) <= 8 and "8/8 finished, 0 running, 0 failed" in lines[-1]
    assert lines[-1].endswith("ETA 0:00")
    # The analysis folders stay out of pandas' way.
    assert pd.read_parquet(out)["run_id"].nunique() == 10


@pytest.mark.integration
def test_figures_switch_off(sweep_dir, tmp_path):
    out, _ = sweep_dir
    target = tmp_path / "copy"
    target.mkdir()
    for path in results.run_files(out):
        (target / path.name).write_bytes(path.read_bytes())
    cmd = [sys.executable, "-m", "lab.sweep", "--multirun", "algorithm=mc_vfa", "opponent=onestep",
           "player=1", "layers=2", "neurons=8", "episodes_per_update=20", "iterations=30",
           "eval_every=3", "seed=0", f"results_dir={target}", "hydra.launcher.parallel=false",
           "hydra.launcher.figures=false"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "1 run already finished" in done.stdout and "figures in" not in done.stdout
    assert not (target / results.FIGURES).exists()


@pytest.mark.integration
def test_every_figure_type(sweep_dir, tmp_path):
    out, _ = sweep_dir
    paths = plots.all_figures(out, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted([
        "mc_vfa_ttt_player1_l2_n8.png", "mc_vfa_ttt_player2_l2_n8.png",
        "td_value_ttt_player1.png", "td_value_ttt_player2.png", "td_value_ttt_self.png",
        "mc_vfa_exact_ttt_player1_l2_n8.png", "mc_vfa_exact_ttt_player2_l2_n8.png",
        "td_value_exact_ttt_player1.png", "td_value_exact_ttt_player2.png",
        "td_value_exact_ttt_self_seat1.png", "td_value_exact_ttt_self_seat2.png",
        "mc_vfa_outcomes_ttt_player1_l2_n8_a0.0154_e20_i30.png",  # its epsilon decays
        "mc_vfa_outcomes_ttt_player2_l2_n8_a0.0154_e20_i30.png",
        "comparison_exact_win.png",
        # td_value trained against onestep and in self-play: the trained opponent varies in each seat
        "td_value_knobs_X.png", "td_value_knobs_O.png",
        *(f"td_value_parallel_{seat}_{vs}.png" for seat in "XO" for vs in ("random", "onestep"))])
    assert all(p.stat().st_size > 20_000 for p in paths)


@pytest.mark.integration
def test_configuration_names(sweep_dir):
    out, _ = sweep_dir
    names = set(summary.name_configurations(summary.table(out))["config"])
    # td_value trains against onestep and in self-play, so its opponent is part of the name;
    # knobs it does not use (layers, neurons) leave no 'lnan' behind.
    assert names == {"ttt_player1_l2_n8_a0.0154_e20_i30", "ttt_player2_l2_n8_a0.0154_e20_i30",
                     "ttt_player1_a0.08_e20_i30 opponent=onestep",
                     "ttt_player2_a0.08_e20_i30 opponent=onestep", "ttt_self_a0.08_e20_i30"}


@pytest.mark.integration
def test_summary_of_a_real_sweep(sweep_dir):
    out, _ = sweep_dir
    best = summary.best_configurations(out)
    keys = set(zip(best["algorithm"], best["seat"], best["evaluated_vs"]))
    assert keys == {(a, s, o) for a in ("mc_vfa", "td_value") for s in "XO" for o in ("random", "onestep")}
    np.testing.assert_allclose(best["win"] + best["draw"] + best["loss"], 1.0)
    # Nobody beats the ceiling on its objective, expected win - loss.
    assert (best["win"] - best["loss"] <= best["ceiling_win"] - best["ceiling_loss"] + 1e-9).all()
    assert (best["seeds"] == 2).all() and (best["episodes"] == 600).all()
    assert (best["losing_lines"] <= best["total_lines"]).all()


def test_summary_picks_the_best_configuration():
    """Hand-made evaluations: A has the best single seed, B the best seed mean of final win - loss;
    neither seed mean reaches 95% of the ceiling's win rate, B's first seed alone does."""
    ceiling = evaluate.ceiling("onestep", 2)["win"]
    rows = []
    finals = {("A", 0): (0.97 * ceiling, 0.0), ("A", 1): (0.5, 0.3),
              ("B", 0): (0.96 * ceiling, 0.0), ("B", 1): (0.9 * ceiling, 0.0)}
    for (alpha_name, seed), (win, loss) in finals.items():
        alpha = {"A": 0.1, "B": 0.2}[alpha_name]
        for episodes, share in ((100, 0.5), (200, 1.0)):
            rows.append({
                "run_id": f"{alpha_name}{seed}", "algorithm": "td_value", "opponent": "onestep",
                "player": 2, "episodes_per_update": 100, "iterations": 2, "seed": seed,
                "eval_every": 1, "alpha": alpha, "epsilon": 0.1, "draw_value": 0.0,
                "episodes": episodes, "train_seconds": episodes / 100, "status": "finished",
                **{evaluate.column(2, f"{o}_{r}"): v for o in evaluate.OPPONENTS
                   for r, v in (("win", share * win), ("loss", loss), ("draw", 1 - share * win - loss))},
                evaluate.column(2, "losing_lines"): 3, evaluate.column(2, "total_lines"): 10,
                evaluate.column(2, "winning_lines"): 5, evaluate.column(2, "drawing_lines"): 2,
                evaluate.column(2, "never_loses"): False, evaluate.column(2, "optimal_move_rate"): 0.9,
            })
    best = summary.best_configurations(pd.DataFrame(rows))
    pick = best[best["evaluated_vs"] == "onestep"].iloc[0]
    assert pick["config"] == "ttt_player2_a0.2_e100_i2"
    assert pick["win"] == pytest.approx(0.93 * ceiling)
    assert pick["win_sd"] == pytest.approx(np.std([0.96 * ceiling, 0.9 * ceiling], ddof=1))
    assert pick["episodes_to_95"] != pick["episodes_to_95"]  # the mean 0.93 never reaches 0.95
    assert pick["train_seconds"] == pytest.approx(2.0) and pick["best_run"] == "B0"
    assert summary.episodes_to_reach(pd.DataFrame(rows).query("run_id == 'B0'"),
                                     evaluate.column(2, "onestep_win"), 0.95 * ceiling) == 200


@pytest.mark.integration
def test_scripts(sweep_dir, tmp_path):
    out, _ = sweep_dir
    done = subprocess.run([sys.executable, "analysis/summary.py", str(out), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "evaluated_vs" in done.stdout and "ttt_player2_l2_n8_a0.0154_e20_i30" in done.stdout
    table = pd.read_csv(tmp_path / "summary.csv")
    assert len(table) == 8
    assert (tmp_path / "summary.md").read_text().startswith("| algorithm | seat | evaluated_vs |")
    done = subprocess.run([sys.executable, "analysis/plot_winrates.py", str(out), "--out", str(tmp_path),
                           "--smooth", "1"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) == 20


@pytest.mark.integration
def test_notebook_runs_headless(sweep_dir):
    out, _ = sweep_dir
    nb = nbformat.read(REPO / "analysis" / "winrates.ipynb", as_version=4)
    (parameters,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    parameters.source = f"results_dir = {str(out)!r}\nsmooth = 5"
    NotebookClient(nb, kernel_name="python3", timeout=600,
                   resources={"metadata": {"path": str(REPO / "analysis")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 20
    assert any("ttt_self_a0.08_e20_i30" in o.get("data", {}).get("text/html", "") for o in outputs)
    # the same comparisons as summary.md, and the report
    assert any("### td_value, agent as O, evaluated against OneStep exactly: 2 configurations"
               in o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert any(str(out / report.REPORT / "index.html") in o.get("text", "") for o in outputs)


def test_progress_lines_without_a_terminal(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    progress = sweep.Progress(2)
    finished = RunResult("abc", [{"status": "finished"}], None)
    failed = RunResult("def", [{"status": "failed"}], None)
    progress.update(running=2)  # a heartbeat prints nothing in a log
    progress.update([finished], running=1)
    progress.update([failed], running=0)
    progress.close()
    first, second = stream.getvalue().splitlines()
    assert first.startswith("run abc done; 1/2 finished, 1 running, 0 failed, 0:00 elapsed")
    assert second.startswith("run def FAILED; 2/2 finished, 0 running, 1 failed")
    assert clock(3725) == "1:02:05" and clock(65) == "1:05"
    assert clock(float("nan")) == "?"


def test_progress_on_a_terminal_is_one_line_counting_down(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream, ticks = Terminal(), iter([0.0, 10.0, 15.0, 30.0])
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr("lab.execution.progress.time.monotonic", lambda: next(ticks))
    progress = sweep.Progress(3)  # starts at 0 s
    progress.update([RunResult("abc", [{"status": "finished"}], None)], running=2)  # 10 s
    progress.update(running=2)  # 15 s: 20 s were left at 10 s, so 15 s now
    progress.update([RunResult("def", [{"status": "finished"}], None)], running=1)  # 30 s
    progress.close()
    text = stream.getvalue()
    assert "\n" not in text.rstrip("\n")  # redrawn in place with carriage returns
    first, second, third = [part.rstrip() for part in text.strip("\n").split("\r")[1:]]
    assert first == "[###.......] 1/3 finished, 2 running, 0 failed, 0:10 elapsed, ETA 0:20"
    assert second.endswith("0:15 elapsed, ETA 0:15")
    assert third.endswith("2/3 finished, 1 running, 0 failed, 0:30 elapsed, ETA 0:15")


def _curves(seeds: int, configs=("a",)) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"run_id": f"{c}{s}", "config": c, "episodes": 10 * i, "rate": rng.random()}
                         for c in configs for s in range(seeds) for i in range(1, 6)])


@pytest.mark.parametrize("seeds, lines, bands", [(1, 1, 0), (2, 3, 0), (3, 1, 1), (5, 1, 1)])
def test_a_band_only_from_three_seeds_below_that_each_seed(seeds, lines, bands):
    fig, ax = plt.subplots()
    plots._draw(ax, _curves(seeds), "rate")
    assert (len(ax.lines), len(ax.collections)) == (lines, bands)
    plt.close(fig)


def test_one_configuration_is_named_in_the_title_not_a_legend():
    fig, ax = plt.subplots()
    one = _curves(2)
    assert plots._legend_or_title(ax, one) == "\na" and ax.get_legend() is None
    for name, curve in _curves(2, ("a", "b")).groupby("config"):
        plots._draw(ax, curve, "rate", label=name)
    assert plots._legend_or_title(ax, _curves(2, ("a", "b"))) == ""
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    plt.close(fig)


def test_the_seed_figure_says_which_way_is_better():
    assert "lower is better" in plots._better("player2")
    assert "higher is better" in plots._better("player1")


def test_outcome_figure_for_runs_that_explore(tmp_path):
    """Write-up 001's figure: one per configuration whose epsilon decays (mean outcome,
    wins/draws/losses, epsilon per iteration); none for a constant epsilon, zero or not."""
    for overrides in (("algorithm=q_table", "opponent=random", "player=1", "seed=0"),
                      ("algorithm=q_table", "opponent=random", "player=1", "seed=1"),
                      ("algorithm=td_value", "opponent=random", "player=1", "seed=0"),  # 0.27
                      ("algorithm=mc_vfa", "layers=1", "neurons=4", "epsilon=0", "seed=0")):
        results.commit(tmp_path, results.pack([run(job(compose(*overrides, "episodes_per_update=20",
                                                               "iterations=5")))]))
    written = plots.outcome_figures(tmp_path, tmp_path / "figures")
    assert [p.name for p in written] == ["q_table_outcomes_ttt_player1_a0.0754_e20_i5.png"]
    assert plt.imread(written[0]).shape[0] > 500


def test_a_figure_of_more_than_16_configurations_only_when_asked(tmp_path):
    many = _runs({(2, 8, round(0.01 * (i + 1), 2)): (0.5, 0.6) for i in range(17)})
    left_out = []
    assert plots.winrate_figures(many, tmp_path, left_out=left_out) == [] and len(left_out) == 1
    assert [p.name for p in plots.winrate_figures(many, tmp_path, every=True)] == ["mc_vfa_ttt_player2_l2_n8.png"]
    assert len(plots.winrate_figures(_runs(), tmp_path)) == 2  # 2 configurations in each of 2 figures


def test_figures_takes_true_all_or_false(tmp_path):
    done = cli(["--multirun", "algorithm=q_table", "iterations=2", "episodes_per_update=10",
                "results_dir=out", "hydra.launcher.parallel=false", "hydra.launcher.figures=some"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: hydra.launcher.figures='some' is not allowed: true (the summary, "
                                   "the report and the figures of up to 16 configurations), all (every "
                                   "figure) or false (none)")
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_figures_all_draws_the_figures_of_every_configuration(tmp_path):
    """17 configurations of q_table (its epsilon decays: write-up 001's figure for each)."""
    grid = ["--multirun", "algorithm=q_table", "opponent=random", "player=1", "iterations=3",
            "episodes_per_update=10", "alpha=" + ",".join(f"{0.05 * i:.2f}" for i in range(1, 18)),
            "results_dir=out", "hydra.launcher.parallel=false"]
    done = cli(grid, tmp_path)
    assert done.returncode == 0, done.stderr
    assert plots.left_out_note(1 + 1 + 17) in done.stdout
    # the seat's figure of 17 lines and 17 of write-up 001's left out; the rest drawn
    assert sorted(p.name for p in (tmp_path / "out" / results.FIGURES).iterdir()) == [
        "comparison_exact_win.png", "q_table_knobs_X.png", "q_table_parallel_X_onestep.png",
        "q_table_parallel_X_random.png"]
    done = cli([*grid, "hydra.launcher.figures=all"], tmp_path)
    assert "17 runs already finished" in done.stdout and "left out" not in done.stdout
    figures = {p.name for p in (tmp_path / "out" / results.FIGURES).iterdir()}
    assert len(figures) == 4 + 2 + 17 and "q_table_ttt_player1.png" in figures


def test_episodes_to_95_is_empty_without_a_ceiling_and_not_reached_below_one():
    """A board evaluated by games has no ceiling, so no 95% of it to reach: the cell stays empty."""
    best = pd.DataFrame({"ceiling_win": [np.nan, 0.9, 0.9], "episodes_to_95": [np.nan, np.nan, 3000.0],
                         "train_seconds": [1.0, 1.0, 1.0]})
    assert summary.format_table(best)["episodes_to_95"].tolist() == ["", "not reached", "3000"]


def _exit(main, monkeypatch, capsys, *argv) -> tuple[int, str]:
    """(exit status, stderr) of a command's main() given argv."""
    monkeypatch.setattr(sys, "argv", ["command", *map(str, argv)])
    with pytest.raises(SystemExit) as stop:
        main()
    return stop.value.code, capsys.readouterr().err


@pytest.mark.parametrize("main", [summary.main, plots.main], ids=["summary", "plot"])
def test_out_naming_a_file_is_one_line_saying_it_must_be_a_folder(main, tmp_path, monkeypatch, capsys):
    notes = tmp_path / "README.md"
    notes.write_text("mine")
    assert _exit(main, monkeypatch, capsys, tmp_path, "--out", notes) == (
        2, f"error: --out {notes} is a file: --out must be a folder\n")
    assert notes.read_text() == "mine"


@pytest.mark.parametrize("main", [summary.main, plots.main], ids=["summary", "plot"])
def test_a_missing_results_dir_is_named_as_no_such_folder(main, tmp_path, monkeypatch, capsys):
    missing = tmp_path / "nonexistent"
    assert _exit(main, monkeypatch, capsys, missing) == (2, f"error: {missing}: no such folder\n")
    assert not missing.exists()


@pytest.mark.integration
@pytest.mark.parametrize("script", ["analysis/summary.py", "analysis/plot_winrates.py"])
def test_a_reader_that_stops_reading_ends_the_command_quietly(sweep_dir, script, tmp_path):
    """`... | head -1`: with its reader gone, the command exits as a tool stopped by SIGPIPE does
    (141), silently (it said "error: Broken pipe" and exited 1)."""
    command = [sys.executable, script, str(sweep_dir[0]), "--out", str(tmp_path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO) as done:
        done.stdout.close()  # the reader gone before the first line
        err = done.stderr.read()
    assert (done.returncode, err) == (141, b"")
