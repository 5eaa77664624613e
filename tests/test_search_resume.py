"""A search's identity is what it searches, not how its folder is spelled (issue 36): the same
search resumes with results_dir absolute or moved, raising num_samples continues it, a real
difference is named, a finished search run again says so; a diverged trial is an outcome (exit
0, its reason in one line) and the objective figure's legend names failed trials. The searches
train q_table or q_net at a tiny size in this process (parallel=false, no figures)."""

import dataclasses
import json

import pytest

from lab import results
from lab.config.compose import compose
from lab.analysis import search_figures
from lab.search import outcome, study
from lab.search.driver import FINISHED
from lab.search.settings import SearchSettings
from sweeping import cli

pytest.importorskip("optuna")

SEARCH = ["--multirun", "hydra/sweeper=search", "hydra.sweeper.objective=onestep", "algorithm=q_table",
          "opponent=onestep", "player=2", "iterations=12", "episodes_per_update=20", "eval_every=6",
          "alpha=tag(log,interval(0.01,1))", "hydra.launcher.parallel=false", "hydra.launcher.figures=false"]


def ended(results_dir) -> int:
    return sum(t.state.is_finished() for t in study.load(results_dir).get_trials())


def test_a_search_resumes_however_its_folder_is_spelled_and_runs_on_when_num_samples_grows(tmp_path):
    first = cli([*SEARCH, "hydra.sweeper.num_samples=2", "results_dir=results"], tmp_path)
    assert first.returncode == 0, first.stderr
    again = cli([*SEARCH, "hydra.sweeper.num_samples=2", f"results_dir={tmp_path / 'results'}"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "is finished: its 2 trials ended" in again.stdout and "trials:" not in again.stdout
    assert ended(tmp_path / "results") == 2

    (tmp_path / "results").rename(tmp_path / "moved")
    longer = cli([*SEARCH, "hydra.sweeper.num_samples=3", "results_dir=moved"], tmp_path)
    assert longer.returncode == 0, longer.stderr
    assert "continuing the search" in longer.stdout and "3 trials:" in longer.stdout
    assert ended(tmp_path / "moved") == 3
    saved = json.loads((tmp_path / "moved" / results.SEARCH / "search.json").read_text())
    assert saved["settings"]["num_samples"] == 3 and saved["base"]["results_dir"] == "moved"
    assert json.loads((tmp_path / "moved" / results.SEARCH / FINISHED).read_text()) == {"trials": 3}

    other = cli([*SEARCH, "hydra.sweeper.num_samples=3", "results_dir=moved", "hydra.sweeper.seed=4"], tmp_path)
    assert other.returncode == 2
    assert other.stderr.splitlines() == [f"error: results_dir={tmp_path / 'moved'} holds another search: "
                                         f"hydra.sweeper.seed=4 (it had 0); use another results_dir, or delete "
                                         f"{tmp_path / 'moved' / results.SEARCH} to start this one there"]
    knob = cli([*SEARCH, "hydra.sweeper.num_samples=3", "results_dir=moved", "iterations=18"], tmp_path)
    assert knob.returncode == 2 and "holds another search: iterations=18 (it searched with iterations=12)" in knob.stderr


def test_a_diverged_trial_is_an_outcome_with_its_reason(tmp_path):
    done = cli(["--multirun", "hydra/sweeper=search", "hydra.sweeper.num_samples=2", "hydra.sweeper.objective=random",
                "algorithm=q_net", "opponent=random", "alpha=choice(0.001,0.95)", "layers=1", "neurons=16",
                "iterations=40", "episodes_per_update=20", "hydra.launcher.parallel=false",
                "hydra.launcher.figures=false", "results_dir=results"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 trials: 1 finished, 0 stopped early, 1 failed" in done.stdout
    assert "1 trial failed: FloatingPointError: network diverged" in done.stdout
    assert "trial 0 failed at iteration" in done.stderr and "network diverged" in done.stderr


def test_failures_are_counted_per_reason_and_a_lost_worker_fails_the_search(tmp_path):
    def configuration(n, status, error=None, lost=False):
        return outcome.Configuration(f"trial {n}", {}, status, [[6, [0.1]]], [], error, lost)

    configurations = [configuration(0, "failed", "diverged"), configuration(1, "finished"),
                      configuration(2, "failed", "diverged"), configuration(3, "failed", "died", lost=True)]
    assert outcome.failures(configurations) == ["2 trials failed: diverged (first: trial 0)",
                                                "1 trial failed: died (first: trial 3)"]
    base = compose("algorithm=q_table", "opponent=onestep", "iterations=6", "episodes_per_update=10", "eval_every=6")
    settings = SearchSettings(objective="onestep")
    (tmp_path / results.SEARCH).mkdir()
    assert outcome.finish(configurations[:3], base, settings, tmp_path) == 0
    assert outcome.finish(configurations, base, settings, tmp_path) == 1


def test_the_objective_figure_names_failed_trials_in_its_legend(tmp_path, monkeypatch):
    import matplotlib.axes

    labels, legend = [], matplotlib.axes.Axes.legend

    def kept(ax, *args, **kwargs):
        labels.extend(ax.get_legend_handles_labels()[1])
        return legend(ax, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "legend", kept)
    configurations = [outcome.Configuration("trial 0", {}, "failed", [[6, [0.1]], [12, [0.2]]], []),
                      outcome.Configuration("trial 1", {}, "finished", [[6, [0.3]], [12, [0.4]]], [])]
    settings = SearchSettings(objective="onestep")
    path = search_figures.objective(outcome.records(configurations, settings), {"episodes_per_update": 10},
                                    dataclasses.asdict(settings), "random search", tmp_path / "objective.png")
    assert path.stat().st_size > 0
    assert labels[0] == "finished" and any(label.startswith("failed") for label in labels)
