"""The search space and settings of hydra/sweeper=search (lab.search.space, lab.search.settings):
Hydra's override grammar read as Hydra's Optuna sweeper reads it, resolved against the searched
algorithm's knobs, validated at its extremes; anything else, seed included, is one line naming the
override."""

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from lab.config.compose import compose
from lab.knobs import ConfigError
from lab.search import space as search
from lab.search.schedulers import SCHEDULERS
from lab.search.settings import OBJECTIVES, SearchSettings, either
from lab.sweep.overrides import check_grid


def _space(*overrides, later=()):
    parser = OverridesParser.create()
    return search.space(parser.parse_overrides(list(overrides)), parser.parse_overrides(list(later)))


def test_the_grammar():
    fixed, dims = _space("alpha=interval(0.1,0.5)", "gamma=tag(log,interval(0.01,1))", "layers=choice(1,2)",
                         "episodes_per_update=range(10,40,10)", "neurons=8,16", "epsilon=0.2", "player=2")
    assert fixed == ["epsilon=0.2", "player=2"]
    assert dims["alpha"] == search.Dimension("interval", 0.1, 0.5)
    assert dims["gamma"] == search.Dimension("interval", 0.01, 1.0, log=True)
    assert dims["layers"].values == (1, 2)
    assert dims["episodes_per_update"].values == (10, 20, 30)
    assert dims["neurons"].values == (8, 16)


def test_the_command_line_replaces_a_named_search_s_key():
    fixed, dims = _space("alpha=interval(0.1,0.5)", "gamma=0.5,0.9", later=["alpha=0.3"])
    assert fixed == ["alpha=0.3"] and set(dims) == {"gamma"}


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


@pytest.mark.parametrize("override", ["seed=range(0,3)", "seed=interval(0,9)", "seed=2"])
def test_seeds_are_aggregated_not_searched(override):
    with pytest.raises(ConfigError) as error:
        _space(override)
    message = str(error.value)
    assert "\n" not in message and message.startswith(override) and "hydra.sweeper.seeds=K" in message


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


@pytest.mark.parametrize("key, value, says", [
    ("scheduler", "bohb", f"scheduler must be {either(SCHEDULERS)}"),  # the registry's, every one
    ("objective", "perfect", "random or onestep, or opponent"),
    ("search", "optuna", "random or tpe"),
    ("seeds", 0, "a positive integer"),
    ("aggregate", "max", "mean, median or iqm"),
    ("reduction_factor", 1.5, "an integer of at least 2"),
    ("storage", "search.db", "an Optuna storage URL"),
])
def test_settings_are_checked(key, value, says):
    with pytest.raises(ConfigError) as error:
        SearchSettings(**{key: value}).check()
    assert str(error.value).startswith(f"hydra.sweeper.{key}={value!r} is not allowed") and says in str(error.value)
    SearchSettings().check()  # the defaults are allowed


def test_a_list_of_choices_reads_as_a_sentence():
    assert either(["none", "asha", "hyperband", "pbt"]) == "none, asha, hyperband or pbt"
    assert either(("random", "tpe")) == "random or tpe"


def test_the_aggregates():
    values = [0.1, 0.9, 0.3, 0.5, 0.2]
    assert SearchSettings(aggregate="mean").aggregated(values) == pytest.approx(0.4)
    assert SearchSettings(aggregate="median").aggregated(values) == pytest.approx(0.3)
    iqm = SearchSettings(aggregate="iqm")
    assert iqm.aggregated(values) == pytest.approx((0.2 + 0.3 + 0.5) / 3)  # 5 // 4 off each end
    assert iqm.aggregated([0.1, 0.9, 0.3]) == pytest.approx(13 / 30)  # under 4: the mean


@pytest.mark.parametrize("algorithm", ["q_table", "td_value", "mc_vfa", "q_net", "negamax_q", "alphazero"])
def test_the_named_searches_compose_and_validate(algorithm):
    """sweeps/search_<algorithm>.yaml: the search sweeper's settings, a space of that algorithm's
    knobs that validates at every extreme, seeds aggregated (each was also run once at a tiny size)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from lab.config.compose import CONF_PACKAGE, flat

    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", [f"+sweeps=search_{algorithm}"], run_mode=RunMode.MULTIRUN)
        sweeper = OmegaConf.to_container(master.hydra.sweeper, resolve=True)
        assert sweeper.pop("_target_").endswith("LabSweeper")  # which hands a search to SearchSweeper
        params = sweeper.pop("params")
        sweeper.pop("max_batch_size")
        settings = SearchSettings(**{k: v for k, v in sweeper.items() if v is not None})
        settings.check()
        parser = OverridesParser.create(config_loader=loader)
        fixed, dims = search.space(parser.parse_overrides([f"{k}={v}" for k, v in params.items()]),
                                   parser.parse_overrides([f"+sweeps=search_{algorithm}"]))
        base = flat(loader.load_sweep_config(master, fixed))
    assert base["algorithm"] == algorithm and base["results_dir"].startswith(f"results/search_{algorithm}_")
    dims = search.resolve(base, dims)
    search.validate(base, dims)
    search.resolve_objective(settings, base)
    assert settings.objective in OBJECTIVES and len(dims) >= 2 and settings.seeds >= 3
    check_grid(master)  # the grid sweeper's interval() check lets a named search through


@pytest.mark.parametrize("seat, opponent", [(1, "random"), (2, "onestep"), (1, "self")])
def test_the_command_line_chooses_a_named_search_s_seat_and_opponent(seat, opponent):
    cfg = compose("+sweeps=search_q_table", f"player={seat}", f"opponent={opponent}")
    assert (cfg["player"], cfg["opponent"]) == (seat, opponent)
    assert cfg["results_dir"] == f"results/search_q_table_{opponent}_player{seat}"
