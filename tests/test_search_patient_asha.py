"""The scheduler patient_asha (lab.search.schedulers): Optuna's PatientPruner around successive
halving, asked at every evaluation point. Successive halving may stop a configuration only once
its objective has not improved for PATIENCE points, so one still improving trains on where asha
stops it (Optuna asks successive halving only then, so its rungs compare stalled configurations).
The search is q_table at a tiny size, in this process."""

import optuna
from optuna.trial import TrialState

from lab import results
from lab.search import study
from lab.search.schedulers import PATIENCE, SCHEDULERS
from lab.search.settings import SearchSettings
from sweeping import cli

optuna.logging.set_verbosity(optuna.logging.WARNING)
SAMPLES = 16
SEARCH = ["--multirun", "hydra/sweeper=search", "hydra.sweeper.scheduler=patient_asha",
          f"hydra.sweeper.num_samples={SAMPLES}", "hydra.sweeper.grace_period=4",
          "hydra.sweeper.objective=onestep", "algorithm=q_table", "opponent=onestep", "player=2",
          "iterations=24", "episodes_per_update=20", "eval_every=2", "alpha=tag(log,interval(0.01,1))",
          "epsilon_decay=interval(0.99,0.9999)",
          "hydra.launcher.parallel=false", "hydra.launcher.figures=false"]


def test_it_is_successive_halving_from_the_settings_inside_patience_asked_at_every_point():
    settings = SearchSettings(scheduler="patient_asha", grace_period=12, reduction_factor=2)
    patient = SCHEDULERS["patient_asha"].pruner(settings, 60, 6)
    assert isinstance(patient, optuna.pruners.PatientPruner) and patient._patience == PATIENCE
    halving = patient._wrapped_pruner
    assert isinstance(halving, optuna.pruners.SuccessiveHalvingPruner)
    assert (halving._min_resource, halving._reduction_factor) == (12, 2)
    assert SCHEDULERS["patient_asha"].decisions(settings, 60, 6) == (6, 12, 18, 24, 30, 36, 42, 48, 54)


def _stops(scheduler: str, curves: list[list[float]]) -> list[int | None]:
    """Where `scheduler` stops each curve (objectives at iterations 1..10), one trial after another,
    asked at its decisions; None: it trained to the end."""
    settings = SearchSettings(scheduler=scheduler, grace_period=1, reduction_factor=3)
    entry = SCHEDULERS[scheduler]
    search = optuna.create_study(direction="maximize", pruner=entry.pruner(settings, 10, 1))
    stops = []
    for curve in curves:
        trial, stops = search.ask(), stops + [None]
        for step in entry.decisions(settings, 10, 1):
            trial.report(curve[step - 1], step)
            if trial.should_prune():
                stops[-1] = step
                break
        if stops[-1] is None:
            search.tell(trial, curve[-1])
        else:
            search.tell(trial, state=TrialState.PRUNED)
    return stops


def test_patience_spares_a_configuration_still_improving_that_successive_halving_stops():
    leader = [0.9 - 0.05 * i for i in range(10)]  # the best at every rung, falling from the first
    falling = [0.5 - 0.05 * i for i in range(10)]  # behind, and falling
    rising = [0.1 + 0.01 * i for i in range(10)]  # behind, and improving at every point
    assert _stops("asha", [leader, falling, rising]) == [None, 1, 1]
    # falling: stopped once PATIENCE points followed its best; rising: never
    assert _stops("patient_asha", [leader, falling, rising]) == [None, PATIENCE + 2, None]


def test_a_search_stops_only_configurations_whose_objective_stalled(tmp_path):
    done = cli([*SEARCH, "results_dir=results"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = study.load(tmp_path / "results").get_trials()
    statuses = results.statuses(tmp_path / "results")
    stopped = [t for t in trials if t.state == TrialState.PRUNED]
    assert len(trials) == SAMPLES and len(stopped) >= 2
    finished = SAMPLES - len(stopped)
    assert f"{SAMPLES} trials: {finished} finished, {len(stopped)} stopped early, 0 failed" in done.stdout
    for trial in trials:
        curve = [value for _, value in sorted(trial.intermediate_values.items())]
        assert sorted(trial.intermediate_values) == list(range(2, 2 * len(curve) + 1, 2))  # every point
        if trial.state == TrialState.PRUNED:  # its best came before its last PATIENCE + 1 points
            assert max(curve[:-PATIENCE - 1]) > max(curve[-PATIENCE - 1:]), curve
            assert {statuses[run] for run in trial.user_attrs["runs"]} == {"stopped"}
        else:
            assert len(curve) == 11 and statuses[trial.user_attrs["runs"][0]] == "finished"  # to 24
