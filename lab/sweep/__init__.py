"""The Hydra entry point: `python -m lab.sweep [--multirun] key=value ...`.

Without --multirun it trains the one configuration in this process; with it, the lab's launcher
(hydra_plugins/lab_plugins) calls `launch` (lab.sweep.entry) with the whole grid, which is planned
in full before anything trains, and Ctrl-C stops cleanly: what finished stays saved. Its modules,
one per step of a sweep, are in docs/architecture.md's module table.
"""

import sys

import hydra
from omegaconf import DictConfig

from lab.cli import terminate_as_interrupt
from lab.config.compose import CONF_PACKAGE
from lab.sweep.entry import analyse, launch, run_one
from lab.sweep import overrides
from lab.sweep.overrides import HydraKnobs
from lab.sweep.dispatch import (FORK_SECONDS, MODES, RAY_START_SECONDS, RAY_WORTH_SECONDS, RETRIES,
                                Interrupted, execute, mode, report)
from lab.sweep.planning import Plan, list_plan, plan
from lab.execution.progress import Execution, Outcome, Progress
from lab.execution.ray_connection import TOKEN_HINT, connect, disconnect

__all__ = ["FORK_SECONDS", "MODES", "RAY_START_SECONDS", "RAY_WORTH_SECONDS", "RETRIES", "TOKEN_HINT",
           "Execution", "HydraKnobs", "Interrupted", "Outcome", "Plan", "Progress", "analyse", "connect",
           "disconnect", "execute", "launch", "list_plan", "main", "mode", "plan", "report"]


def main() -> None:
    """The command: its overrides checked first (lab.sweep.overrides), then Hydra's run or multirun."""
    terminate_as_interrupt()  # `timeout`'s SIGTERM stops a sweep as Ctrl-C does: Ray and forks stopped
    overrides.check(sys.argv[1:])
    hydra_main()


# Defined here, not in lab.sweep.entry: Hydra names the job after the module of its task function
# (hydra.job.name, which a config can interpolate), and that name has always been `sweep`.
@hydra.main(version_base="1.3", config_path=f"pkg://{CONF_PACKAGE}", config_name="config")
def hydra_main(cfg: DictConfig) -> dict:
    """One run in this process (Hydra's run mode); returns its final exact evaluation, the
    return_value Hydra hands to on_job_end (lab.sweep.callbacks)."""
    return run_one(cfg)
