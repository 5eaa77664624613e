"""The Hydra entry point: `python -m lab.sweep [--multirun] key=value ...`.

Without --multirun it trains the one configuration in this process; with it, the lab's launcher
(hydra_plugins/lab_plugins) calls `launch` with the whole grid, which is planned in full before
anything trains, and Ctrl-C stops cleanly: what finished stays saved.

Its modules, in the order a sweep uses them:

    planning        what a grid comes to before anything trains (Plan, plan, list_plan)
    placement       where the runs train (mode): Ray, forks of this process, or this process
    record          the sweep record written into each results_dir it trains into
    execution       execute the runs where placement says, saving each; report what they did
    dispatch        the runs' batches on workers (lab.execution.workers): this process, forks, Ray actors
    overrides       the command line checked before Hydra: unknown keys, options, sweep names
    hydra_knobs     Hydra's own knobs the lab refuses (a Hydra callback)
    entry           launch (the whole grid from the lab's launcher) and one run (Hydra's run mode)
"""

import sys

import hydra
from omegaconf import DictConfig

from lab.cli import terminate_as_interrupt
from lab.config.compose import CONF_PACKAGE
from lab.sweep.entry import analyse, launch, run_one
from lab.sweep.execution import Interrupted, execute, report
from lab.sweep.hydra_knobs import HydraKnobs
from lab.sweep import overrides
from lab.sweep.dispatch import RETRIES
from lab.sweep.placement import FORK_SECONDS, MODES, RAY_START_SECONDS, RAY_WORTH_SECONDS, mode
from lab.sweep.planning import Plan, list_plan, plan
from lab.execution.progress import Execution, Outcome, Progress
from lab.execution.ray_connection import TOKEN_HINT, connect, disconnect

__all__ = ["FORK_SECONDS", "MODES", "RAY_START_SECONDS", "RAY_WORTH_SECONDS", "RETRIES", "TOKEN_HINT",
           "Execution", "HydraKnobs", "Interrupted", "Outcome", "Plan", "Progress", "analyse", "connect",
           "disconnect", "execute", "launch", "list_plan", "main", "mode", "plan", "report"]


def main() -> None:
    """The command: its overrides checked first (a misspelled key, option or sweep name gets one
    line and exit 2, lab.sweep.overrides), then Hydra's run or multirun."""
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
