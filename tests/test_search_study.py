"""The pieces of lab.search.study and its registries, in this process: the points where the pruner
may decide, every scheduler's pruner, the sampler seeded per trial, and the journal that waits in
memory until a trial ends."""

import numpy as np
import optuna
import pytest
import yaml

from lab import reference
from lab.search import study
from lab.search.schedulers import SCHEDULERS
from lab.search.settings import SearchSettings

optuna.logging.set_verbosity(optuna.logging.WARNING)
X = {"x": optuna.distributions.FloatDistribution(0, 1)}


def decisions(settings: SearchSettings, iterations: int, eval_every: int) -> tuple:
    return SCHEDULERS[settings.scheduler].decisions(settings, iterations, eval_every)


def test_the_pruner_is_asked_only_at_its_rungs():
    """Successive halving from 111 iterations, factor 3, evaluated every 20 of 1000: the first
    points at or after 111, 333 (and 999, the end, where the trial ends anyway)."""
    asha = SearchSettings(scheduler="asha", reduction_factor=3)
    assert decisions(asha, iterations=1000, eval_every=20) == (120, 340)
    early = SearchSettings(scheduler="asha", grace_period=6)
    assert decisions(early, iterations=60, eval_every=6) == (6, 18, 54)
    assert decisions(SearchSettings(scheduler="none"), iterations=1000, eval_every=20) == ()


@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_scheduler_is_allowed_listed_and_builds_a_pruner_or_drives_a_population(name):
    settings = SearchSettings(scheduler=name)
    settings.check()
    assert f"{name} ({SCHEDULERS[name].description})" in reference.markdown()
    points = decisions(settings, iterations=60, eval_every=6)
    assert all(point % 6 == 0 and 0 < point < 60 for point in points)
    if SCHEDULERS[name].drives_population:
        assert points == ()
    else:
        assert isinstance(SCHEDULERS[name].pruner(settings, 60, 6), optuna.pruners.BasePruner)


def _asked(sampler, told: int) -> dict:
    """The configuration the sampler asks for after `told` trials of a fixed history."""
    rng = np.random.default_rng(1)
    s = optuna.create_study(sampler=sampler, direction="maximize")
    for _ in range(told):
        s.add_trial(optuna.trial.create_trial(params={"x": float(rng.random())}, distributions=X, value=float(rng.random())))
    return s.ask(X).params


@pytest.mark.parametrize("search", ["random", "tpe"])
def test_a_trial_asks_what_its_number_and_the_study_say_whatever_this_process_asked_before(search):
    fresh = _asked(study.sampler(SearchSettings(search=search, seed=7), 12), told=12)
    assert _asked(study.sampler(SearchSettings(search=search, seed=7), 12), told=12) == fresh
    assert _asked(study.sampler(SearchSettings(search=search, seed=8), 12), told=12) != fresh  # another seed
    assert _asked(study.sampler(SearchSettings(search=search, seed=7), 13), told=12) != fresh  # another trial


def test_tpe_through_the_reseeded_sampler_still_homes_in():
    """-(x - 0.3)^2 over 60 trials: TPE's last 30 land near 0.3, random's spread over [0, 1]."""
    distances = {}
    for search in ("tpe", "random"):
        s = optuna.create_study(direction="maximize")
        xs = []
        for number in range(60):
            s.sampler = study.sampler(SearchSettings(search=search), number)  # as Optimize asks
            trial = s.ask(X)
            xs.append(trial.params["x"])
            s.tell(trial, -(trial.params["x"] - 0.3) ** 2)
        distances[search] = np.mean(np.abs(np.array(xs[30:]) - 0.3))
    assert distances["tpe"] < 0.2 < distances["random"]


def test_the_journal_waits_in_memory_until_flushed(tmp_path):
    store = study.Store(SearchSettings(), tmp_path)
    s = optuna.create_study(study_name=store.name, storage=store.storage, direction="maximize")
    trial = s.ask(X)
    s.tell(trial, 0.5)
    path = tmp_path / study.JOURNAL
    assert not path.exists() or path.stat().st_size == 0  # nothing written yet
    store.flush()
    # what Optuna's own journal reader (and optuna-dashboard) sees in the file
    reader = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
    (again,) = optuna.load_study(study_name=study.STUDY, storage=reader).get_trials()
    assert again.value == 0.5 and again.params == trial.params
    s.tell(s.ask(X), 0.7)  # more after a flush: read back from memory, written at the next flush
    assert [t.value for t in s.get_trials()] == [0.5, 0.7]
    store.flush()
    assert len(optuna.load_study(study_name=study.STUDY, storage=reader).get_trials()) == 2


def test_best_yaml_sets_a_knob_the_run_id_leaves_out(tmp_path):
    """q_net's loss_reward at -1 is not in the run's identity (Config.ADDED), yet against random a
    matchup file makes it -3: best.yaml must say -1, or running it again trains another run."""
    from lab.config.compose import compose
    from lab.config.jobs import job
    from lab.search import outcome
    base = compose("algorithm=q_net", "opponent=random", "loss_reward=-1", "iterations=10")
    best = outcome.Configuration("trial 0", {"alpha": 0.2}, "finished", [[10, [0.5]]], ["r"])
    again = outcome.write_best(best, base, SearchSettings(seeds=1), tmp_path)
    assert "loss_reward=-1.0" in again.split()
    knobs = yaml.safe_load((tmp_path / "_search" / outcome.BEST).read_text())
    overrides = [f"{k}={v}" for k, v in knobs.items() if k != "defaults"]
    assert knobs["loss_reward"] == -1.0
    assert job(compose("algorithm=q_net", "opponent=random", *overrides)).run_id == job({**base, "alpha": 0.2}).run_id
