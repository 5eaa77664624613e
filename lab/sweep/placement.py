"""Where a sweep's runs train (`mode`): on Ray, in forks of this process, or in this process."""

import os

from lab.execution import schedule
from lab.config.jobs import Job

RAY_START_SECONDS = 3.0
"""About what starting and stopping an embedded local Ray costs in wall time (2.5 s and 0.3 s on
the 2-core development machine; also 3.3 CPU-seconds, and 0.7 s of imports per worker)."""

RAY_WORTH_SECONDS = 10 * RAY_START_SECONDS
"""Predicted work per core from which parallel=auto starts a local Ray: its start is then at most
a tenth of the sweep. Below, forks of this process, which have the lab imported, finish sooner
(seed 000's grid x 4 seeds, 19 s a core on 2 cores: 17 s in forks, 21.5 s on Ray)."""

FORK_SECONDS = 0.5
"""Below this much predicted work, forking trainers and reading their runs back costs about what
spreading the runs over the cores saves."""

MODES = {True: "ray", False: "driver", "processes": "processes"}
"""hydra.launcher.parallel's values but auto, and where each trains the runs."""


def cores(num_cpus=None) -> int:
    """The cores a local sweep uses: num_cpus, else every core of this machine."""
    return num_cpus or os.cpu_count() or 1


def joins(address) -> bool:
    """Whether Ray means a cluster to join (else a local Ray this process starts)."""
    return bool(address or os.environ.get("RAY_ADDRESS"))


def mode(jobs: list[Job], parallel, address=None, num_cpus=None) -> str:
    """Where the jobs train: "ray" (a cluster to join, or a local Ray), "processes" (forks of this
    process, one per core) or "driver" (this process), as `parallel` says (MODES). auto: Ray if a
    cluster was named, else by the predicted work (lab.execution.schedule.cost): this process on one core or
    below FORK_SECONDS, a local Ray from RAY_WORTH_SECONDS a core, forks between."""
    if parallel != "auto":
        return MODES[parallel]
    if joins(address):
        return "ray"
    n, work = cores(num_cpus), sum(map(schedule.cost, jobs))
    if n == 1 or work < FORK_SECONDS:
        return "driver"
    return "ray" if work / n > RAY_WORTH_SECONDS else "processes"


def without_ray_note(jobs: list[Job], where: str, num_cpus=None) -> str:
    """Why parallel=auto trains these jobs without Ray, and where."""
    work, n = sum(map(schedule.cost, jobs)), cores(num_cpus)
    if where == "driver":
        why = "on one core" if n == 1 else "too little to spread over cores"
        return (f"the runs' predicted work ({work:.1f} s) is {why}: training them in this process "
                "(hydra.launcher.parallel=true uses Ray anyway)")
    return (f"the runs' predicted work ({work:.1f} s, {work / n:.1f} s a core) is short beside "
            f"starting Ray (about {RAY_START_SECONDS:.0f} s): training them in {n} forks of this "
            "process (hydra.launcher.parallel=true uses Ray anyway)")
