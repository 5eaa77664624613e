"""The lab's Hydra plugins (Hydra only loads plugins from the `hydra_plugins` namespace).

- LabSweeper: Hydra's grid expansion, minus its habit of creating the sweep directory before any
  job is validated (a mistyped knob must leave the disk untouched).
- LabLauncher (`hydra/launcher=lab`, the default): hands the whole grid to lab.sweep.launch, which
  composes and validates every job, then trains them where lab.sweep.mode says: in this
  process, in forks of it, or on Ray actors (or only lists them: dry_run). Its former name
  `hydra/launcher=lab_ray` stays registered only for lab.sweep.HydraKnobs to refuse it in one line
  naming the new one.
- SearchSweeper (`hydra/sweeper=search`): reads the search space from the overrides, validates
  it, and hands it to lab.search.driver. Its settings and the grid sweeper's copy of them (for
  named searches) are built from lab.search.settings.SearchSettings.
- The named sweeps (the package lab.sweeps: the repository's `sweeps/*.yaml`) become the config
  group `sweeps`, so `+sweeps=NAME` selects one. They are registered in Hydra's ConfigStore rather
  than by a search-path entry, because the only folder holding `sweeps/` is the repository root,
  and putting that on the search path made every folder in it (.venv, .git, tests) a config group.
- `opponent=PATH.npz`: `opponent` is a config group (conf/opponent/), so Hydra reads
  `opponent=VALUE` as the choice of a file conf/opponent/VALUE.yaml and would refuse any other
  value. CheckpointOpponentSource, on the search path, answers for every option of the group that
  names a `.npz` file: the config `opponent: PATH` (global package), what the group's own files
  hold. Whether PATH is a lab checkpoint is checked by lab.config.jobs like every other knob.
"""

import dataclasses
import functools
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, OverrideParseException
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.launcher import Launcher
from hydra.plugins.search_path_plugin import SearchPathPlugin
from hydra.plugins.sweeper import Sweeper
from omegaconf import OmegaConf

from lab.cli import fail, first_line, require_writable
from lab.compat.hydra import basic_sweeper, sweeper_params
from lab.config.compose import expand, flat
from lab.knobs import ConfigError
from lab.search.settings import SearchSettings


def _sweeper_conf(name: str, target: str, fields: list, optional: bool):
    """A sweeper's Hydra config: `fields`, then every search setting (lab.search.settings.SearchSettings,
    defined there once) with its default, or optional (None) where `optional`."""
    settings = [(f.name, Optional[f.type], None) if optional else (f.name, f.type, f.default)
                for f in dataclasses.fields(SearchSettings)]
    return dataclasses.make_dataclass(name, [("_target_", str, target), *fields, *settings])


LabSweeperConf = _sweeper_conf("LabSweeperConf", "hydra_plugins.lab_plugins.lab_plugins.LabSweeper", [
    # launch the grid in batches of this many jobs, each finished (and its figures drawn) before
    # the next starts, as Hydra's basic sweeper does; null: the whole grid at once
    ("max_batch_size", Optional[int], None),
    ("params", Optional[dict], None),
], optional=True)
"""The grid sweeper. It also takes the search's settings, all null: a named search
(sweeps/search_*.yaml) sets them, `search` among them, and the grid sweeper hands the search over
to SearchSweeper (a named sweep cannot select hydra/sweeper itself: conf/config.yaml's own
override of that group comes first and wins). Without `search`, they are refused."""


@dataclass
class LabLauncherConf:
    """The lab's launcher (hydra/launcher=lab): where and how a grid's runs train."""

    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.LabLauncher"
    address: Optional[str] = None
    """Ray cluster to join: 'auto' (a cluster started on this machine) or the head's GCS address
    'host:6379'; null: RAY_ADDRESS if set, else an embedded local Ray"""
    num_cpus: Optional[int] = None
    """CPUs of the embedded local Ray (or forks of the driver, with parallel=processes); null:
    every core"""
    parallel: Any = "auto"
    """auto: Ray unless the runs' predicted work, spread over the cores, ends before Ray could
    start: then forks of this process (or this process, for too little work to spread); true:
    always Ray; processes: forks of this process, one per core, without Ray; false: one run after
    another in this process"""
    figures: Any = True
    """true: draw the summary, the report and the figures of up to 16 configurations into
    results_dir at the end (a search: its own figures, the summary and the report); all: every
    figure; false: none of them"""
    dry_run: bool = False
    """true: list the runs that would train and those skipped, and stop: nothing trained or written"""
    dashboard: bool = False
    """true: start the embedded Ray with its dashboard and print its URL (joining a cluster: print
    the cluster's)"""
    track: Optional[str] = None
    """mlflow or tensorboard: export each run to that tracker (results_dir's default store, as
    lab-export does) as the driver saves it; null: none"""


ConfigStore.instance().store(group="hydra/sweeper", name="lab_grid", node=LabSweeperConf, provider="lab")
ConfigStore.instance().store(group="hydra/launcher", name="lab", node=LabLauncherConf, provider="lab")
ConfigStore.instance().store(group="hydra/launcher", name="lab_ray", node=LabLauncherConf, provider="lab")
for _sweep in resources.files("lab.sweeps").iterdir():
    if _sweep.name.endswith(".yaml"):  # every file is `# @package _global_`, an experiment preset
        ConfigStore.instance().store(group="sweeps", name=_sweep.name[:-5], package="_global_",
                                     node=OmegaConf.create(_sweep.read_text()), provider="lab")


class LabSweeper(basic_sweeper()):  # Hydra's BasicSweeper, a private class (lab.compat.hydra)
    def __init__(self, max_batch_size=None, params=None, **settings):
        super().__init__(max_batch_size, params)
        self.settings = {key: value for key, value in settings.items() if value is not None}

    def setup(self, *, hydra_context, task_function, config):
        if self.settings and "search" not in self.settings:  # every named search sets its sampler
            fail(f"hydra.sweeper.{min(self.settings)} is a search's setting, and this sweep is a grid, which "
                 "trains every value it lists (seed=0,1,2 for three seeds); a search is hydra/sweeper=search "
                 "or a named search (+sweeps=search_q_table)")
        if self.max_batch_size is not None and self.max_batch_size < 1:
            fail(f"hydra.sweeper.max_batch_size={self.max_batch_size} is not allowed: a positive number of "
                 "runs a batch, or null (the whole grid at once)")
        if self.settings:  # a named search: SearchSweeper does the work (no launcher needed)
            self.search = SearchSweeper(params=self.params, **self.settings)
            self.search.setup(hydra_context=hydra_context, task_function=task_function, config=config)
        else:
            super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments):
        if self.settings:
            return self.search.sweep(arguments)
        batch = expand(self.hydra_context.config_loader, sweeper_params(self), list(arguments))
        size = self.max_batch_size or len(batch) or 1
        chunks = [batch[i:i + size] for i in range(0, len(batch), size)] or [batch]
        return [self.launcher.launch(chunk, initial_job_idx=i * size) for i, chunk in enumerate(chunks)]


class LabLauncher(Launcher):
    def __init__(self, **options):  # LabLauncherConf's fields, lab.sweep.launch's keyword arguments
        self.options = options

    def setup(self, *, hydra_context, task_function, config):
        self.hydra_context, self.config = hydra_context, config

    def launch(self, job_overrides, initial_job_idx):
        from lab import sweep  # every Hydra start-up (compose() too) loads this plugin: the sweep only a grid

        return sweep.launch(self.hydra_context.config_loader, self.config, job_overrides,
                            hydra_callbacks=self.hydra_context.callbacks, **self.options)


# The search (issue 22): `hydra/sweeper=search`, lab.search does the work.

SearchSweeperConf = _sweeper_conf("SearchSweeperConf", "hydra_plugins.lab_plugins.lab_plugins.SearchSweeper", [
    ("params", Optional[dict], None),  # the search space (key: override value), as a grid's params
], optional=False)

ConfigStore.instance().store(group="hydra/sweeper", name="search", node=SearchSweeperConf, provider="lab")


class SearchSweeper(Sweeper):
    def __init__(self, params=None, **settings):
        self.params = dict(params or {})
        self.settings = SearchSettings(**settings)

    def setup(self, *, hydra_context, task_function, config):
        self.hydra_context, self.config = hydra_context, config

    def sweep(self, arguments):
        # numba, pandas and the search's driver (~1 s): only once a search starts, not at every Hydra start-up
        from lab.config.jobs import check_settings
        from lab.results import ResultsError, statuses
        from lab.search import driver, space
        from lab.sweep import callbacks, check_launcher, draw_search

        loader = self.hydra_context.config_loader
        parser = OverridesParser.create(config_loader=loader)
        launcher = self.config.hydra.launcher
        try:
            _require_optuna()
            self.settings.check()
            figures = launcher.get("figures", True)
            check_launcher(launcher.get("parallel", "auto"), figures, launcher.get("num_cpus"))
            params = [f"{key}={value}" for key, value in self.params.items()]
            fixed, dims = space.space(parser.parse_overrides(params), parser.parse_overrides(list(arguments)))
            base = flat(loader.load_sweep_config(self.config, fixed))
            dims = space.resolve(base, dims)
            space.resolve_objective(self.settings, base)
            space.validate(base, dims)
            hooks = callbacks.for_search(self.hydra_context.callbacks, self.config, launcher.get("track"), base)
            results_dir = check_settings(base)[0]
            statuses(results_dir)  # a damaged table there: one line, before anything is written
        except (ConfigError, ResultsError) as exc:
            fail(str(exc))
        except OverrideParseException as exc:  # Hydra's grammar: its first line says what is wrong
            fail(f"{first_line(exc)}; a search space takes {space.GRAMMAR}")
        except HydraException as exc:  # composing the fixed overrides
            fail(str(exc))
        if launcher.get("dry_run", False):
            print(driver.describe(base, dims, self.settings))
            print("dry run: nothing trained, nothing written")
            return []
        require_writable(results_dir)
        status = driver.search(base, dims, self.settings, address=launcher.get("address"),
                               num_cpus=launcher.get("num_cpus"), parallel=launcher.get("parallel", "auto"),
                               after=functools.partial(draw_search, figures=figures) if figures else None,
                               hooks=hooks)
        if status:
            sys.exit(status)
        return []


def _require_optuna() -> None:
    try:
        import optuna  # noqa: F401 - only whether the search extra is installed: the search imports it
    except ImportError:
        raise ConfigError("hydra/sweeper=search needs Optuna, the lab's search extra: pip install "
                          "'tictactoe-lab[search]' (from a checkout: pip install -e '.[search]')") from None


# `opponent=PATH.npz` (the module doc)

GROUP = "opponent/"
SUFFIX = ".npz"


def checkpoint_path(config_path: str) -> Optional[str]:
    """The checkpoint path an option of the group `opponent` names, or None if it names none.
    Hydra asks for 'opponent/<value>' (plus '.yaml'); an absolute path gives 'opponent//...'."""
    if not config_path.startswith(GROUP):
        return None
    value = config_path[len(GROUP):].removesuffix(".yaml")
    return value if value.endswith(SUFFIX) else None


class CheckpointOpponentSource(ConfigSource):
    @staticmethod
    def scheme() -> str:
        return "lab-checkpoint-opponent"

    def load_config(self, config_path: str) -> ConfigResult:
        path = checkpoint_path(config_path)
        if path is None:
            raise ConfigLoadError(f"not a checkpoint opponent: {config_path}")
        return ConfigResult(provider=self.provider, path=f"{self.scheme()}://{self.path}",
                            config=OmegaConf.create({"opponent": path}), header={"package": "_global_"})

    def is_group(self, config_path: str) -> bool:
        return False

    def is_config(self, config_path: str) -> bool:
        return checkpoint_path(config_path) is not None

    def available(self) -> bool:
        return True

    def list(self, config_path: str, results_filter: Optional[ObjectType]) -> list[str]:
        return []  # nothing to list: any .npz path is an option, none is enumerable


class CheckpointOpponentSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="lab-checkpoint-opponent",
                           path=f"{CheckpointOpponentSource.scheme()}://")
