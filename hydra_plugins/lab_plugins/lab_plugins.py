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
from hydra.plugins.launcher import Launcher
from omegaconf import OmegaConf


@dataclass
class LabSweeperConf:
    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.LabSweeper"
    max_batch_size: Optional[int] = None
    """launch the grid in batches of this many jobs, each finished (and its figures drawn) before
    the next starts, as Hydra's basic sweeper does; null: the whole grid at once, which keeps
    every CPU busy to the end"""
    params: Optional[dict] = None


@dataclass
class LabRayLauncherConf:
    _target_: str = "hydra_plugins.lab_plugins.lab_plugins.LabRayLauncher"
    address: Optional[str] = None
    """Ray cluster to join: 'auto' (a cluster started on this machine) or the head's GCS address
    'host:6379'; null: RAY_ADDRESS if set, else an embedded local Ray"""
    num_cpus: Optional[int] = None
    """CPUs of the embedded local Ray; null: every core"""
    parallel: Any = "auto"
    """auto: Ray unless the runs' predicted work is less than starting Ray, then this process;
    true: always Ray; false: one run after another in this process, without Ray"""
    figures: bool = True
    """false: skip drawing the figures and the summary into results_dir at the end"""
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
    def sweep(self, arguments):
        from lab.compose import expand

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
