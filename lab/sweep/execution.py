"""Executing a sweep's runs where `placement.mode` says, saving each as it arrives, and the
report of what they did."""

import sys
import time
from dataclasses import dataclass

from lab.results import provenance
from lab.cli import plural
from lab.config.jobs import Job
from lab.sweep import dispatch, placement
from lab.sweep.progress import Outcome, Progress
from lab.sweep.store import Store


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped `execute`: the runs in flight were cancelled, `saved` runs of this sweep
    are stored."""

    def __init__(self, saved: int):
        super().__init__(saved)
        self.saved = saved


@dataclass
class Execution:
    """What `execute` did: the runs' outcomes, on how many cores, and the sweep's wall time from
    its start (composing and planning included) until the runs were saved and Ray stopped."""

    done: list[Outcome]
    cores: int
    seconds: float
    retried: int = 0
    """runs sent again after Ray lost them with their worker or node"""

    def efficiency(self) -> str:
        """Core utilisation (the runs' wall seconds on their workers, storing them included, over
        cores x the sweep's), the fixed cost (the sweep's wall time before the first run began and
        after the last one ended), and the utilisation between those two moments."""
        busy = sum(o.wall_seconds for o in self.done)
        span = max(o.ended for o in self.done) - min(o.ended - o.wall_seconds for o in self.done)
        return (f"{busy / (self.cores * self.seconds):.0%} of {self.cores} core"
                f"{'s' * (self.cores > 1)} busy over {self.seconds:.1f} s; fixed cost "
                f"{max(0.0, self.seconds - span):.1f} s (planning, starting workers, saving); "
                f"{busy / (self.cores * max(span, 1e-9)):.0%} busy while runs trained")


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
