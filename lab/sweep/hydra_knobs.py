"""Hydra's own knobs the lab does not follow, refused in one line before Hydra creates a folder or
a sweeper starts: its folder knobs (results go to results_dir) and interval() in a grid."""

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from lab.cli import fail
from lab.compat.hydra import BASIC_SWEEPER

LAB_GRID_SWEEPER = "hydra_plugins.lab_plugins.lab_plugins.LabSweeper"
"""The lab's grid sweeper (hydra/sweeper=lab_grid, the default)"""
HYDRA_FOLDERS = {  # Hydra's folder knob -> (its value in conf/config.yaml, why the lab ignores it)
    "hydra.run.dir": (".", "a run's results go to results_dir"),
    "hydra.sweep.dir": ("${results_dir}/_sweeps", "a sweep's results go to results_dir"),
    "hydra.sweep.subdir": ("${hydra.job.num}", "every run of a sweep lands in results_dir as one "
                           "<run_id>.parquet file, with no folder per job"),
}
RENAMED = {("hydra/launcher", "lab_ray"): "hydra/launcher=lab (the lab's launcher: it trains in this "
                                          "process, in forks or on Ray, as hydra.launcher.parallel says)"}
"""(config group, a former option's name) -> what it is now"""


class HydraKnobs(Callback):
    """Refuses the folder knobs (HYDRA_FOLDERS), interval() in a grid and the former names of the
    lab's options (RENAMED); registered as a Hydra callback in conf/config.yaml."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        check_renamed(config)
        check_hydra_folders(config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.on_run_start(config)
        check_grid(config)


def check_renamed(config: DictConfig) -> None:
    choices = OmegaConf.select(config, "hydra.runtime.choices") or {}
    for (group, old), new in RENAMED.items():
        if choices.get(group) == old:
            fail(f"{group}={old} is now {new}")


def check_hydra_folders(config: DictConfig) -> None:
    for key, (default, why) in HYDRA_FOLDERS.items():
        value = OmegaConf.to_container(OmegaConf.select(config, key.rsplit(".", 1)[0]), resolve=False)
        value = value.get(key.rsplit(".", 1)[1])
        if value != default:
            fail(f"{key}={value} is not used by the lab: {why} (set results_dir=DIR instead)")


def check_grid(config: DictConfig) -> None:
    """interval() is a search's, not a grid's."""
    # the sweepers that expand a grid (the lab's, Hydra's basic one) take no interval()
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
