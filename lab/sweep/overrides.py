"""The command line checked before Hydra sees it: Hydra answers a misspelled knob, setting, group
option or named sweep with several lines (and exit 1); the lab answers each in one line naming
what is allowed, with the closest match, and exit 2 (lab.cli), before anything is written. And
Hydra's own knobs the lab does not follow (its folder knobs, interval() in a grid), refused by
HydraKnobs, a Hydra callback, before Hydra creates a folder or a sweeper starts."""

import os

from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType, ValueType
from hydra.errors import OverrideParseException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from lab import agents
from lab.cli import did_you_mean, fail, first_line, unrecognized
from lab.compat.hydra import BASIC_SWEEPER, args_parser
from lab.config.compose import CONF_PACKAGE
from lab.search.space import ALIASES

LAB_GRID_SWEEPER = "hydra_plugins.lab_plugins.lab_plugins.LabSweeper"  # hydra/sweeper=lab_grid, the default
HYDRA_FOLDERS = {  # Hydra's folder knob -> (its value in conf/config.yaml, why the lab ignores it)
    "hydra.run.dir": (".", "a run's results go to results_dir"),
    "hydra.sweep.dir": ("${results_dir}/_sweeps", "a sweep's results go to results_dir"),
    "hydra.sweep.subdir": ("${hydra.job.num}", "every run of a sweep lands in results_dir as one "
                           "<run_id>.parquet file, with no folder per job"),
}
RENAMED = {  # (config group, a former option's name) -> what it is now
    ("hydra/launcher", "lab_ray"): "hydra/launcher=lab (the lab's launcher: it trains in this process, in "
                                   "forks or on Ray, as hydra.launcher.parallel says)"}


class HydraKnobs(Callback):
    """Refuses HYDRA_FOLDERS, interval() in a grid and RENAMED; a Hydra callback of conf/config.yaml."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        choices = OmegaConf.select(config, "hydra.runtime.choices") or {}
        for (group, old), new in RENAMED.items():
            if choices.get(group) == old:
                fail(f"{group}={old} is now {new}")
        for key, (default, why) in HYDRA_FOLDERS.items():
            value = OmegaConf.to_container(OmegaConf.select(config, key.rsplit(".", 1)[0]), resolve=False)
            value = value.get(key.rsplit(".", 1)[1])
            if value != default:
                fail(f"{key}={value} is not used by the lab: {why} (set results_dir=DIR instead)")

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.on_run_start(config)
        check_grid(config)


def check_grid(config: DictConfig) -> None:
    """interval() is a search's: the sweepers that expand a grid (the lab's, Hydra's basic) take none."""
    if OmegaConf.select(config, "hydra.sweeper._target_") not in (LAB_GRID_SWEEPER, BASIC_SWEEPER):
        return  # a search (hydra/sweeper=search, Hydra's optuna, ...) takes interval()
    sweeper = OmegaConf.to_container(config.hydra.sweeper, resolve=False)
    if any(value is not None for key, value in sweeper.items() if key not in ("_target_", "max_batch_size", "params")):
        return  # a named search (sweeps/search_*.yaml) sets the search's settings: the grid sweeper hands it over
    params = OmegaConf.select(config, "hydra.sweeper.params")
    params = OmegaConf.to_container(params, resolve=False) if OmegaConf.is_config(params) else {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    try:
        parsed = OverridesParser.create().parse_overrides(arguments)
    except Exception:  # noqa: BLE001 - the sweeper parses them again and reports Hydra's error
        return
    for override in parsed:
        if override.is_sweep_override() and not override.is_discrete_sweep():
            fail(f"{override.input_line}: a grid takes comma lists (a,b,c), range(), choice() or "
                 "glob(); interval() belongs to a search sweeper, which samples from it")


def check(argv: list[str]) -> None:
    """Exit 2 in one line if an override of `argv` (the command's arguments) names a key, group
    option or named sweep that does not exist, or sweeps without --multirun."""
    args = _arguments(argv)
    if not args.overrides or args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return  # Hydra's own commands, or nothing to check
    if args.config_dir and not os.path.isdir(args.config_dir):
        fail(f"--config-dir {args.config_dir}: no such folder (a search's results_dir holds _search/best.yaml)")
    if args.config_dir or args.config_path or args.config_name:
        return  # configs beyond the lab's: Hydra composes them
    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        _check_overrides(GlobalHydra.instance().config_loader(), args.overrides, args.multirun)


def _check_overrides(loader, lines: list[str], multirun: bool) -> None:
    try:
        overrides = OverridesParser.create(config_loader=loader).parse_overrides(lines)
    except OverrideParseException as exc:
        fail(f"{first_line(exc)}; an override is key=value (a grid: key=a,b,c or range(a,b))")
    for override in overrides:
        if override.is_sweep_override() and override.is_hydra_override():
            fail(f"{override.input_line}: Hydra's own settings take one value; a grid sweeps knobs "
                 "(key=a,b), a named sweep's grid is its hydra.sweeper.params")
        _check_choice(loader, override)
    try:  # the configuration with every override that is not a sweep
        master = loader.load_configuration("config", lines, run_mode=RunMode.MULTIRUN,
                                           validate_sweep_overrides=False)
    except Exception as exc:  # noqa: BLE001 - every composition error becomes one line
        fail(_composition_error(loader, exc, lines, overrides))
    for override in overrides:
        if not _is_choice(loader, override):
            _check_swept_key(master, override)
    swept = [o.input_line for o in overrides if o.is_sweep_override()]
    if swept and not multirun and OmegaConf.select(master, "hydra.mode") is None:
        fail(f"{swept[0]} sweeps several values: add --multirun (a list is written key=[a,b])")


def _arguments(argv):
    """Hydra's reading of the command line; its usage errors (a page of usage) in one line."""
    parser = args_parser()

    def refuse(message: str):
        unknown, flag, hint = unrecognized(parser, message)
        if flag:
            fail(f"{flag} is not a flag of this command{hint}; see --help")
        if unknown:
            fail(f"{unknown[0]}: the flags (--multirun, ...) go before the overrides key=value")
        fail(f"{message}; see --help")

    parser.error = refuse
    return parser.parse_args(argv)


def _is_choice(loader, override) -> bool:
    """Whether Hydra takes the override as a config-group choice (game=ttt, +sweeps=smoke)."""
    return loader.repository.group_exists(override.key_or_group) and not isinstance(override.value(), dict)


def _check_choice(loader, override) -> None:
    """Each option named for a config group exists (glob() and deletions are Hydra's)."""
    if override.is_delete() or not _is_choice(loader, override) or override.value_type == ValueType.GLOB_CHOICE_SWEEP:
        return
    group = override.key_or_group
    options = loader.get_group_options(group)
    values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.value()]
    for value in values:
        if value is not None and str(value) not in options and not loader.repository.config_exists(f"{group}/{value}"):
            what = "named sweeps" if group == "sweeps" else f"options of {group}"
            plus = "+" if override.type is OverrideType.ADD else ""
            missing = f"there is no {value}{did_you_mean(value, options)}" if str(value) else "it needs a value"
            fail(f"{plus}{group}={value}: {missing}; the {what} are {', '.join(options)}")


def _composition_error(loader, exc, lines, overrides) -> str:
    """Hydra's error as one line; a key it could not override gets the keys next to it."""
    bad = next((o for o in overrides if str(exc).startswith(f"Could not override '{o.key_or_group}'")), None)
    merging = "Error merging override "
    if str(exc).startswith(merging) and exc.__cause__ is not None:  # the value's fault, in the cause
        return f"{first_line(exc)[len(merging):]}: {first_line(exc.__cause__)}"
    if bad is None:
        return first_line(exc)
    others = [line for line in lines if line != bad.input_line]
    try:
        cfg = loader.load_configuration("config", others, run_mode=RunMode.MULTIRUN, validate_sweep_overrides=False)
    except Exception:  # noqa: BLE001 - another override is wrong too: name this one alone
        return f"{bad.input_line}: {bad.key_or_group} is not a key of the configuration"
    return _unknown_key(cfg, bad)


def _unknown_key(cfg, override) -> str:
    parent, _, name = override.key_or_group.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    keys = [k for k in node if k != "hydra" and not k.startswith("_")] if OmegaConf.is_dict(node) else []
    owners = [a.name for a in agents.REGISTRY.values() if name in a.Config.names()] if not parent else []
    if owners and "algorithm" in node:  # another algorithm's knob
        return (f"{override.input_line}: {name} is a knob of {', '.join(owners)}, not of algorithm={node.algorithm}; "
                f"its knobs are {', '.join(agents.get(node.algorithm).Config.names())}")
    where = f"a setting of {parent}" if parent else "a knob"
    allowed = f"; the {'settings' if parent else 'knobs'} are {', '.join(sorted(keys))}" if keys else ""
    return f"{override.input_line}: {name} is not {where}{did_you_mean(name, keys)}{allowed}"


def _check_swept_key(master, override) -> None:
    """A swept key (layers=2,3) that is neither in the configuration nor any algorithm's knob."""
    if not override.is_sweep_override() or override.type is not OverrideType.CHANGE:
        return
    key = override.key_or_group
    if OmegaConf.select(master, key, default=_ABSENT) is not _ABSENT or key in agents.knob_names() or key in ALIASES:
        return  # a key of the configuration, a knob of another algorithm, or a search's alias of one
    fail(_unknown_key(master, override))


_ABSENT = object()
