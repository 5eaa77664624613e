"""What the driver of a sweep does with each run it saves, beside saving it: Hydra's per-job
callbacks and the tracker of `hydra.launcher.track`.

The lab's runs train elsewhere (forks, Ray, a cluster), so the driver calls `on_job_start` and at
once `on_job_end` of the callbacks under `hydra.callbacks` as each run is saved, as Hydra's run_job
would (runs skipped as finished fire nothing). With `hydra.launcher.track=mlflow|tensorboard` each
saved run is also exported (lab.analysis.export.Tracker), as a later `lab-export` would.
"""

import itertools
import os
import sys

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobRuntime, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from lab.analysis import export
from lab.knobs import ConfigError

TRACKERS = (None, *export.TARGETS)  # hydra.launcher.track's values
TRACKER_PACKAGES = {"mlflow": "mlflow", "tensorboard": "tensorboardX"}


class Hooks:
    """Called by the driver for each run it saves (`saved`). `describe(results_dir, result)` gives
    the run's flat configuration, its overrides and its number in the sweep (hydra.job.num);
    `callbacks`: Hydra's of the sweep, or None (Hydra's run mode: Hydra itself calls them). A
    `track` not in TRACKERS, or a tracker not installed: ConfigError."""

    def __init__(self, callbacks, sweep_config: DictConfig | None, track, describe=None):
        if track not in TRACKERS:
            raise ConfigError(f"hydra.launcher.track={track!r} is not allowed: mlflow, tensorboard or null "
                              "(none)")
        if track is not None:
            try:
                __import__(TRACKER_PACKAGES[track])
            except ImportError:
                raise ConfigError(f"hydra.launcher.track={track} needs the tracking extra "
                                  f"({TRACKER_PACKAGES[track]} is missing): pip install -e "
                                  "'.[tracking]'") from None
        # a callback that does nothing on a job's start or end: nothing is composed for it
        listening = callbacks is not None and any(getattr(type(c), name) is not getattr(Callback, name)
                                                  for c in callbacks.callbacks
                                                  for name in ("on_job_start", "on_job_end"))
        self.callbacks = callbacks if listening else None
        self.sweep_config, self.track, self.describe = sweep_config, track, describe
        self.trackers = {}  # results_dir -> lab.analysis.export.Tracker

    def saved(self, results_dir, result) -> None:
        if self.callbacks is not None:
            self._notify(results_dir, result)
        if self.track is not None:
            if results_dir not in self.trackers:
                self.trackers[results_dir] = export.Tracker(results_dir, self.track)
            try:
                self.trackers[results_dir](result.run_id)
            except Exception as exc:  # noqa: BLE001 - the run is saved; the tracker is a view of it
                print(f"warning: run {result.run_id} not exported to {self.track} ({type(exc).__name__}: "
                      f"{exc}); `lab-export {results_dir} --to {self.track}` adds it", file=sys.stderr)

    def _notify(self, results_dir, result) -> None:
        cfg, overrides, num = self.describe(results_dir, result)
        config = OmegaConf.create(cfg)  # as Hydra gives a job's: its knobs and Hydra's node
        with open_dict(config):
            config.hydra = self.sweep_config.hydra  # OmegaConf sets a copy
        with read_write(config.hydra), open_dict(config.hydra):  # Hydra may hold its node read-only
            config.hydra.overrides.task = list(overrides)
            config.hydra.job.num, config.hydra.job.id = num, result.run_id
        before = HydraConfig.instance().cfg
        HydraConfig.instance().set_config(config)  # holds a copy of the job's Hydra node
        try:
            self.callbacks.on_job_start(config=config, task_function=None)
            ret = job_return(OmegaConf.create(cfg), HydraConfig.instance().cfg, overrides, result)
            self.callbacks.on_job_end(config=config, job_return=ret)
        finally:
            HydraConfig.instance().cfg = before


def job_return(task: DictConfig, hydra_cfg: DictConfig, overrides: list[str], result) -> JobReturn:
    """The JobReturn Hydra's run_job would give for the run (`task`: its config without Hydra's node):
    completed with its final exact evaluation (its eval_* columns), or failed with its error."""
    ret = JobReturn(overrides=list(overrides), cfg=task, hydra_cfg=hydra_cfg, working_dir=os.getcwd(),
                    task_name=JobRuntime.instance().get("name"))
    if result.failed:
        ret.status, ret.return_value = JobStatus.FAILED, RuntimeError(str(result.rows["error"].iloc[0]))
    else:
        ret.status, ret.return_value = JobStatus.COMPLETED, export.final(result.rows)
    return ret


def for_grid(callbacks, sweep_config: DictConfig, track, composer, job_overrides, first) -> Hooks:
    """The hooks of a grid (lab.sweep.launch): a run's config is its job's composition."""

    def describe(results_dir, result):
        num = first[results_dir, result.run_id]
        return composer(job_overrides[num]), job_overrides[num], num

    return Hooks(callbacks, sweep_config, track, describe)


def for_search(callbacks, sweep_config: DictConfig, track, base: dict) -> Hooks:
    """The hooks of a search (lab.search.driver): a run's config is the search's base with the knobs
    it trained with, its overrides the seed and the keys where it differs, its number its order."""
    numbers = itertools.count()

    def describe(results_dir, result):
        knobs = export.knobs(result.rows.iloc[0])
        cfg = {**base, **{k: v for k, v in knobs.items() if k in base}}
        return cfg, [f"{k}={v}" for k, v in cfg.items() if k == "seed" or v != base[k]], next(numbers)

    return Hooks(callbacks, sweep_config, track, describe)
