"""The lab's Hydra plugins (Hydra only loads plugins from the `hydra_plugins` namespace).

- LabSweeper: Hydra's grid expansion, minus its habit of creating the sweep directory before any
  job is validated (a mistyped knob must leave the disk untouched).
- LabRayLauncher: hands the whole grid to lab.sweep.launch, which composes and validates every
  job, then runs them as Ray tasks (or only lists them: dry_run).
- The named sweeps (the package lab.sweeps: the repository's `sweeps/*.yaml`) become the config
  group `sweeps`, so `+sweeps=NAME` selects one. They are registered in Hydra's ConfigStore rather
  than by a search-path entry, because the only folder holding `sweeps/` is the repository root,
  and putting that on the search path made every folder in it (.venv, .git, tests) a config group.
"""

from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from omegaconf import OmegaConf


@dataclass
class LabSweeperConf:
    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.LabSweeper"
    max_batch_size: Optional[int] = None
    """launch the grid in batches of this many jobs, each finished (and its figures drawn) before
    the next starts, as Hydra's basic sweeper does; null: the whole grid at once, which keeps
    every CPU busy to the end"""
    params: Optional[dict] = None
    # The tune sweeper's settings (TuneSweeperConf): a named search (sweeps/search_*.yaml) sets
    # them, and the grid sweeper hands the search to TuneSweeper. A named sweep cannot select
    # hydra/sweeper itself: conf/config.yaml's own override of that group comes first and wins.
    num_samples: Optional[int] = None
    search: Optional[str] = None
    scheduler: Optional[str] = None
    objective: Optional[str] = None
    seed: Optional[int] = None
    grace_period: Optional[int] = None
    reduction_factor: Optional[float] = None
    max_concurrent: Optional[int] = None
    perturbation_interval: Optional[int] = None


@dataclass
class LabRayLauncherConf:
    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.LabRayLauncher"
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
    results_dir at the end; all: every figure; false: none of them"""
    dry_run: bool = False
    """true: list the runs that would train and those skipped, and stop: nothing trained or written"""
    dashboard: bool = False
    """true: start the embedded Ray with its dashboard and print its URL (joining a cluster: print
    the cluster's)"""


ConfigStore.instance().store(group="hydra/sweeper", name="lab_grid", node=LabSweeperConf, provider="lab")
ConfigStore.instance().store(group="hydra/launcher", name="lab_ray", node=LabRayLauncherConf, provider="lab")
for _sweep in resources.files("lab.sweeps").iterdir():
    if _sweep.name.endswith(".yaml"):  # every file is `# @package _global_`, an experiment preset
        ConfigStore.instance().store(group="sweeps", name=_sweep.name[:-5], package="_global_",
                                     node=OmegaConf.create(_sweep.read_text()), provider="lab")


class LabSweeper(BasicSweeper):
    def __init__(self, max_batch_size=None, params=None, **tune):
        super().__init__(max_batch_size, params)
        self.tune = {key: value for key, value in tune.items() if value is not None}

    def setup(self, *, hydra_context, task_function, config):
        if self.tune:  # a named search: TuneSweeper does the work (no launcher needed)
            self.search = TuneSweeper(params=self.params, **self.tune)
            self.search.setup(hydra_context=hydra_context, task_function=task_function, config=config)
        else:
            super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments):
        from lab.compose import expand

        if self.tune:
            return self.search.sweep(arguments)
        batch = expand(self.hydra_context.config_loader, self._parse_config(), list(arguments))
        size = self.max_batch_size or len(batch) or 1
        chunks = [batch[i:i + size] for i in range(0, len(batch), size)] or [batch]
        return [self.launcher.launch(chunk, initial_job_idx=i * size) for i, chunk in enumerate(chunks)]


class LabRayLauncher(Launcher):
    def __init__(self, address=None, num_cpus=None, parallel="auto", figures=True, dry_run=False,
                 dashboard=False):
        self.options = {"address": address, "num_cpus": num_cpus, "parallel": parallel, "figures": figures,
                        "dry_run": dry_run, "dashboard": dashboard}

    def setup(self, *, hydra_context, task_function, config):
        self.hydra_context, self.config = hydra_context, config

    def launch(self, job_overrides, initial_job_idx):
        from lab import sweep

        return sweep.launch(self.hydra_context.config_loader, self.config, job_overrides, **self.options)


# The Tune-backed search (issue 12): `hydra/sweeper=tune`, lab.search does the work.


@dataclass
class TuneSweeperConf:
    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.TuneSweeper"
    num_samples: int = 8
    """trials (configurations) to train"""
    search: str = "random"
    """random, or optuna (Optuna's TPE through Ray Tune)"""
    scheduler: str = "none"
    """none, asha (early stopping of hopeless trials) or pbt (population-based training)"""
    objective: str = "random"
    """exact win - loss of the greedy agent against random or onestep, in its seat (the mean of
    both in self-play); opponent: the fixed opponent the trials train against"""
    seed: int = 0
    """seeds the search: the same seed gives the same trials"""
    grace_period: Optional[int] = None
    """ASHA: iterations every trial trains before it can be stopped; null: about iterations / 9"""
    reduction_factor: float = 3.0
    """ASHA: keep about 1 in this many trials at each rung"""
    max_concurrent: Optional[int] = None
    """trials training at once; null: as many as there are cores"""
    perturbation_interval: Optional[int] = None
    """PBT: iterations between two exploit/explore steps; null: about iterations / 10"""
    params: Optional[dict] = None
    """the search space (key: override value), as hydra.sweeper.params of the grid sweeper"""


ConfigStore.instance().store(group="hydra/sweeper", name="tune", node=TuneSweeperConf, provider="lab")


class TuneSweeper(Sweeper):
    def __init__(self, params=None, **settings):
        from lab import search

        self.params = dict(params or {})
        self.settings = search.Settings(**settings)

    def setup(self, *, hydra_context, task_function, config):
        self.hydra_context, self.config = hydra_context, config

    def sweep(self, arguments):
        import sys

        from lab import search
        from lab.compose import flat
        from lab.knobs import ConfigError

        loader = self.hydra_context.config_loader
        parser = OverridesParser.create(config_loader=loader)
        try:
            self.settings.check()
            params = [f"{key}={value}" for key, value in self.params.items()]
            fixed, dims = search.space(parser.parse_overrides(params), parser.parse_overrides(list(arguments)))
            base = flat(loader.load_sweep_config(self.config, fixed))
            dims = search.resolve(base, dims)
            search.resolve_objective(self.settings, base)
            search.validate(base, dims)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
        except OverrideParseException as exc:  # Hydra's grammar: its first line says what is wrong
            print(f"error: {str(exc).splitlines()[0]}; a search space takes {search.GRAMMAR}", file=sys.stderr)
            sys.exit(2)
        launcher = self.config.hydra.launcher
        status = search.search(base, dims, self.settings, address=launcher.get("address"),
                               num_cpus=launcher.get("num_cpus"), figures=launcher.get("figures", True))
        if status:
            sys.exit(status)
        return []
