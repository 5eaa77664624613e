"""Executing a sweep's runs where `placement.mode` says, saving each as it arrives, and the
report of what they did."""

import sys
import time

from lab.results import provenance
from lab.cli import plural
from lab.config.jobs import Job
from lab.sweep import dispatch, placement
from lab.execution.progress import Execution, Progress
from lab.sweep.store import Store


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped `execute`: the runs in flight were cancelled, `saved` runs of this sweep
    are stored."""

    def __init__(self, saved: int):
        super().__init__(saved)
        self.saved = saved


def execute(jobs: list[Job], address=None, num_cpus=None, parallel="auto",
            started: float | None = None, dashboard: bool = False, hooks=None) -> Execution:
    """Run the jobs where `placement.mode` says, storing each batch of runs as it ends
    (lab.sweep.store) and telling `hooks` (lab.sweep.callbacks.Hooks) of each; `started`: the sweep's
    start (time.perf_counter; default now). Ctrl-C cancels the runs in flight and raises
    Interrupted; every run saved so far stays."""
    started = time.perf_counter() if started is None else started
    if not jobs:
        return Execution([], 1, 0.0)
    progress = Progress(len(jobs))
    code = provenance.code()  # the driver's: a worker may run a copy of the package without git
    with Store(jobs, progress, hooks) as store:
        try:
            where = placement.mode(jobs, parallel, address, num_cpus)
            cores, retried = dispatch.train(jobs, code, store, where, address, num_cpus, dashboard)
        except KeyboardInterrupt:
            raise Interrupted(len(store.done)) from None
        finally:
            progress.close()
    return Execution(store.done, cores, time.perf_counter() - started, retried)


def report(jobs: list[Job], execution: Execution) -> int:
    """Print where results are, what failed and how busy the cores were; the exit status."""
    failed = [o for o in execution.done if o.failed]
    dirs = sorted({str(j.results_dir) for j in jobs})
    retried = (f", {execution.retried} retried after their worker or node was lost"
               if execution.retried else "")
    where = f"; results in {', '.join(dirs)}" if dirs else ""
    print(f"{plural(len(execution.done) - len(failed), 'run')} finished, {len(failed)} failed{retried}{where}")
    for outcome in failed:
        print(f"  failed {outcome.run_id}: {outcome.error}", file=sys.stderr)
    if execution.done:
        print(f"cores: {execution.efficiency()}")
    return 1 if failed else 0
