"""Seeds aggregated, not searched (lab.search): a trial is a configuration trained on seeds
0..K-1, one run table each with the run id a grid gives it; its objective at every evaluation
point is the aggregate of its seeds'; the pruner stops a configuration, all its seeds; best.yaml
holds a configuration with no seed. Each search is q_table at a tiny size, in this process."""

import numpy as np
import pandas as pd
import pytest
import yaml

from lab import results
from lab.config.compose import compose
from lab.config.jobs import job
from lab.search import outcome, study
from lab.search.settings import SearchSettings
from sweeping import alone, cli, rows

SEEDS = 3
TINY = ["--multirun", "hydra/sweeper=search", "algorithm=q_table", "opponent=onestep", "player=2",
        "iterations=40", "episodes_per_update=50", "eval_every=4", "alpha=tag(log,interval(0.01,1))",
        "epsilon_decay=interval(0.99,0.9999)", "hydra.sweeper.objective=onestep", f"hydra.sweeper.seeds={SEEDS}",
        "hydra.launcher.parallel=false", "hydra.launcher.figures=false"]
ASHA_TPE = [*TINY, "hydra.sweeper.num_samples=9", "hydra.sweeper.search=tpe", "hydra.sweeper.scheduler=asha",
            "hydra.sweeper.grace_period=4"]


def _objective(frame: pd.DataFrame) -> pd.Series:
    return frame["eval_p2_onestep_win"] - frame["eval_p2_onestep_loss"]


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """The ASHA + TPE search over 3 seeds: (its results_dir, its trials, its run tables, its output)."""
    cwd = tmp_path_factory.mktemp("seeds")
    done = cli([*ASHA_TPE, "results_dir=results"], cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = study.load(cwd / "results").get_trials()
    return cwd / "results", trials, results.load(cwd / "results"), done


def test_every_configuration_has_a_run_table_per_seed(searched):
    _, trials, table, _ = searched
    assert len(trials) == 9 and table["run_id"].nunique() == 9 * SEEDS
    for trial in trials:
        runs = table[table["run_id"].isin(trial.user_attrs["runs"])]
        assert runs.groupby("run_id")["seed"].first().sort_values().tolist() == list(range(SEEDS))
        knobs = runs[["alpha", "epsilon_decay_per_game"]].drop_duplicates()
        assert knobs.to_dict("records") == [{"alpha": trial.params["alpha"],
                                             "epsilon_decay_per_game": trial.params["epsilon_decay_per_game"]}]
        for run_id in trial.user_attrs["runs"]:  # the run id a grid gives the same configuration and seed
            seed = int(table.loc[table["run_id"] == run_id, "seed"].iloc[0])
            grid = compose("algorithm=q_table", "opponent=onestep", "player=2", "iterations=40",
                           "episodes_per_update=50", "eval_every=4", f"alpha={trial.params['alpha']}",
                           f"epsilon_decay_per_game={trial.params['epsilon_decay_per_game']}", f"seed={seed}")
            assert job(grid).run_id == run_id


def test_the_objective_is_the_mean_of_the_seeds(searched):
    _, trials, table, _ = searched
    for trial in trials:
        runs = table[table["run_id"].isin(trial.user_attrs["runs"])]
        evaluated = runs[runs["eval_p2_onestep_win"].notna()]
        means = _objective(evaluated).groupby(evaluated["iteration"]).mean()
        if trial.state.name == "COMPLETE":
            assert trial.value == pytest.approx(means.iloc[-1])
        for step, value in trial.intermediate_values.items():  # what the pruner compared
            assert value == pytest.approx(means.loc[step])
        for step, seeds in trial.user_attrs["objectives"]:  # every point of every seed
            assert sorted(seeds) == pytest.approx(sorted(_objective(evaluated[evaluated["iteration"] == step])))


def test_a_stopped_configuration_stops_all_its_seeds(searched):
    _, trials, table, done = searched
    stopped = [t for t in trials if t.state.name == "PRUNED"]
    assert stopped, done.stderr  # 9 configurations, reduction factor 3
    for trial in trials:
        runs = table[table["run_id"].isin(trial.user_attrs["runs"])]
        last = runs.groupby("run_id")["iteration"].max()
        statuses = set(runs["status"])
        if trial.state.name == "PRUNED":
            assert statuses == {"stopped"} and last.nunique() == 1 and last.iloc[0] < 40
            assert last.iloc[0] == max(trial.intermediate_values)  # where the pruner stopped it
        else:
            assert statuses == {"finished"} and (last == 40).all()


def test_best_yaml_holds_a_configuration_with_no_seed(searched):
    results_dir, trials, table, done = searched
    best = yaml.safe_load((results_dir / results.SEARCH / outcome.BEST).read_text())
    assert "seed" not in best
    top = max((t for t in trials if t.state.name == "COMPLETE"), key=lambda t: (t.value, -t.number))
    assert best["alpha"] == pytest.approx(top.params["alpha"])
    assert f"best: objective {top.value:.4f} (exact onestep win - loss, mean of 3 seeds), trial {top.number}" \
        in done.stdout
    retrained = cli(["--config-dir", str(results_dir), "+_search=best", f"results_dir={results_dir / 'again'}",
                     "hydra.launcher.parallel=false"], results_dir.parent)
    assert retrained.returncode == 0, retrained.stderr
    again = results.load(results_dir / "again")
    assert again["run_id"].tolist()[0] == top.user_attrs["runs"][0]  # seed 0 of the best configuration


def test_a_seed_trained_in_turn_with_others_has_the_rows_it_has_alone(searched, tmp_path):
    results_dir, trials, table, _ = searched
    trial = next(t for t in trials if t.state.name == "COMPLETE")
    run_id = trial.user_attrs["runs"][2]
    searched_rows = rows(results_dir)
    searched_rows = searched_rows[searched_rows["run_id"] == run_id].reset_index(drop=True)
    knobs = [f"{k}={v}" for k, v in trial.params.items()]
    expected = alone(["algorithm=q_table", "opponent=onestep", "player=2", "iterations=40", "episodes_per_update=50",
                      "eval_every=4", *knobs, "seed=2", f"results_dir={tmp_path}"], tmp_path)
    pd.testing.assert_frame_equal(searched_rows, expected)


def test_median_and_iqm_aggregate_the_same_points(tmp_path):
    done = cli([*TINY, "hydra.sweeper.num_samples=2", "hydra.sweeper.aggregate=median", "results_dir=median"], tmp_path)
    assert done.returncode == 0, done.stderr
    table = results.load(tmp_path / "median")
    for trial in study.load(tmp_path / "median").get_trials():
        finals = _objective(table[table["run_id"].isin(trial.user_attrs["runs"]) & (table["iteration"] == 40)])
        assert trial.value == pytest.approx(np.median(finals))
        median = SearchSettings(aggregate="median")
        assert trial.value == median.aggregated(trial.user_attrs["objectives"][-1][1])


def test_a_grid_reuses_the_runs_of_a_search(searched, tmp_path):
    results_dir, trials, _, _ = searched
    trial = next(t for t in trials if t.state.name == "COMPLETE")
    knobs = [f"{k}={v}" for k, v in trial.params.items()]
    done = cli(["--multirun", "algorithm=q_table", "opponent=onestep", "player=2", "iterations=40",
                "episodes_per_update=50", "eval_every=4", *knobs, f"seed=range(0,{SEEDS})",
                f"results_dir={results_dir}", "hydra.launcher.parallel=false", "hydra.launcher.figures=false"],
               tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"1 configuration x {SEEDS} seeds, 0 runs to train" in done.stdout


def test_figures_all_adds_every_figure_of_a_grid(tmp_path):
    done = cli([*TINY[:-1], "hydra.sweeper.num_samples=2", "hydra.launcher.figures=all", "results_dir=all"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (tmp_path / "all" / results.SEARCH).glob("*.png")} == \
        {"objective.png", "knobs.png", "q_table_exact_ttt_player2.png"}
    assert list((tmp_path / "all" / results.FIGURES).glob("q_table_outcomes_*.png"))  # one per configuration
    assert (tmp_path / "all" / "_summary" / "summary.md").exists()
