"""The search space of hydra/sweeper=tune (lab.search): Hydra's override grammar read as Hydra's
Optuna sweeper reads it, resolved against the searched algorithm's knobs, validated at its
extremes; anything else is one line naming the override."""

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from lab import search, sweep
from lab.compose import compose
from lab.knobs import ConfigError


def _space(*overrides, later=()):
    parser = OverridesParser.create()
    return search.space(parser.parse_overrides(list(overrides)), parser.parse_overrides(list(later)))


def test_the_grammar():
    fixed, dims = _space("alpha=interval(0.1,0.5)", "gamma=tag(log,interval(0.01,1))", "layers=choice(1,2)",
                         "seed=range(0,3)", "neurons=8,16", "epsilon=0.2", "player=2")
    assert fixed == ["epsilon=0.2", "player=2"]
    assert dims["alpha"] == search.Dimension("interval", 0.1, 0.5)
    assert dims["gamma"] == search.Dimension("interval", 0.01, 1.0, log=True)
    assert dims["layers"].values == (1, 2)
    assert dims["seed"].values == (0, 1, 2)
    assert dims["neurons"].values == (8, 16)


def test_the_command_line_replaces_a_named_search_s_key():
    fixed, dims = _space("alpha=interval(0.1,0.5)", "seed=range(0,3)", later=["alpha=0.3"])
    assert fixed == ["alpha=0.3"] and set(dims) == {"seed"}


@pytest.mark.parametrize("override, says", [
    ("alpha=tag(foo,interval(0.1,0.5))", "the only tag a search knows is log"),
    ("alpha=tag(log,choice(0.1,0.5))", "tag(log, ...) goes with interval"),
    ("alpha=interval(0.5,0.1)", "low < high"),
    ("alpha=tag(log,interval(0,1))", "low > 0 on a log scale"),
    ("algorithm=q_table,td_value", "not config groups"),
    ("+alpha=interval(0.1,0.5)", "not config groups, added"),
    ("hydra.sweeper.num_samples=1,2", "Hydra's settings"),
])
def test_anything_else_is_one_line_naming_it(override, says):
    with pytest.raises(ConfigError) as error:
        _space(override)
    message = str(error.value)
    assert "\n" not in message and message.startswith(override) and says in message
    assert search.GRAMMAR in message


def test_resolved_against_the_algorithm(capsys):
    base = compose("algorithm=q_table", "results_dir=/tmp/unused")
    _, dims = _space("epsilon_decay=interval(0.99,0.99999)", "episodes_per_update=interval(10,100.5)")
    resolved = search.resolve(base, dims)
    assert set(resolved) == {"epsilon_decay_per_game", "episodes_per_update"}  # the alias
    assert resolved["episodes_per_update"] == search.Dimension("interval", 10, 100, integer=True)
    assert "epsilon_decay as epsilon_decay_per_game" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="layers is not a knob algorithm=q_table uses"):
        search.resolve(base, _space("layers=1,2")[1])
    with pytest.raises(ConfigError, match="stands for epsilon_decay_per_game or epsilon_decay_per_update"):
        search.resolve(compose("algorithm=td_value", "results_dir=/tmp/unused"), _space("epsilon_decay=0.9,0.99")[1])


def test_validated_at_every_extreme_before_anything_starts():
    base = compose("algorithm=q_table", "results_dir=/tmp/unused")
    search.validate(base, search.resolve(base, _space("alpha=interval(0.01,1)")[1]))
    with pytest.raises(ConfigError, match="alpha"):
        search.validate(base, search.resolve(base, _space("alpha=interval(0.01,2)")[1]))
    with pytest.raises(ConfigError, match="episodes_per_update"):
        search.validate(base, search.resolve(base, _space("episodes_per_update=0,10")[1]))


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="hydra.sweeper.scheduler='hyperband'"):
        search.Settings(scheduler="hyperband").check()
    with pytest.raises(ConfigError, match="hydra.sweeper.objective"):
        search.Settings(objective="perfect").check()


@pytest.mark.parametrize("algorithm", ["q_table", "td_value", "mc_vfa", "q_net", "negamax_q", "alphazero"])
def test_the_named_searches_compose_and_validate(algorithm):
    """sweeps/search_<algorithm>.yaml: the tune sweeper, a space of that algorithm's knobs that
    validates at every extreme, its settings allowed (each was also run once at a tiny size)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from lab.compose import CONF_PACKAGE, flat

    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", [f"+sweeps=search_{algorithm}"], run_mode=RunMode.MULTIRUN)
        sweeper = OmegaConf.to_container(master.hydra.sweeper, resolve=True)
        assert sweeper.pop("_target_").endswith("LabSweeper")  # which hands a search to TuneSweeper
        params = sweeper.pop("params")
        sweeper.pop("max_batch_size")
        settings = search.Settings(**{k: v for k, v in sweeper.items() if v is not None})
        settings.check()
        parser = OverridesParser.create(config_loader=loader)
        fixed, dims = search.space(parser.parse_overrides([f"{k}={v}" for k, v in params.items()]),
                                   parser.parse_overrides([f"+sweeps=search_{algorithm}"]))
        base = flat(loader.load_sweep_config(master, fixed))
    assert base["algorithm"] == algorithm and base["results_dir"].startswith(f"results/search_{algorithm}_")
    dims = search.resolve(base, dims)
    search.validate(base, dims)
    search.resolve_objective(settings, base)
    assert settings.objective in search.OBJECTIVES and len(dims) >= 3
    sweep._check_grid(master)  # the grid sweeper's interval() check lets a named search through


@pytest.mark.parametrize("seat, opponent", [(1, "random"), (2, "onestep"), (1, "self")])
def test_the_command_line_chooses_a_named_search_s_seat_and_opponent(seat, opponent):
    cfg = compose("+sweeps=search_q_table", f"player={seat}", f"opponent={opponent}")
    assert (cfg["player"], cfg["opponent"]) == (seat, opponent)
    assert cfg["results_dir"] == f"results/search_q_table_{opponent}_player{seat}"


def test_pbt_drops_a_stop_cached_for_a_paused_trial_s_previous_actor():
    """Tune caches a STOP for a trial exploited while saving its pause checkpoint; the restarted
    trial must not inherit it (it ended `stopped` at its first evaluation, CI run of 6f1fb46)."""
    from types import SimpleNamespace

    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    pbt = search._scheduler(search.Settings(scheduler="pbt"), {"alpha": search.Dimension("interval", 0.1, 0.5)},
                            iterations=36, eval_every=6)
    class FakeTrial:  # what choose_trial_to_run reads of a trial
        def __init__(self, trial_id, status):
            self.trial_id, self.status = trial_id, status

    paused, running = FakeTrial("a", Trial.PAUSED), FakeTrial("b", Trial.RUNNING)
    controller = SimpleNamespace(_cached_trial_decisions={"a": TrialScheduler.STOP, "b": TrialScheduler.STOP},
                                 get_trials=lambda: [paused, running])
    pbt._trial_state = {t: SimpleNamespace(last_train_time=12) for t in (paused, running)}
    pbt._next_perturbation_sync = 24
    assert pbt.choose_trial_to_run(controller) is paused
    assert controller._cached_trial_decisions == {"b": TrialScheduler.STOP}  # a running trial's stands
