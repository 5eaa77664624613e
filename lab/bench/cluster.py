"""The parallel grid with the SLURM recipe on 2 nodes of 1 CPU against 1 node (`--cluster`, issue
25: root, SLURM and a checkout of the lab; namespaces on this machine, tests/cluster/cluster.sh)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.bench.parallel import PARALLEL_GRID, cores_line, warm_up

CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "cluster" / "cluster.sh"


def cluster_unavailable() -> str | None:
    """Why the cluster section cannot run here, or None."""
    if not CLUSTER_SCRIPT.exists():
        return f"it needs the repository's {CLUSTER_SCRIPT.relative_to(CLUSTER_SCRIPT.parents[2])} (a checkout of the lab)"
    if os.geteuid() != 0:
        return "it needs root (network namespaces and SLURM's daemons)"
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        return "it needs SLURM and munge: apt-get install slurm-wlm munge"
    return None


def slurm_sweep_seconds(cluster: Path, nodes: int, args: list[str], log: Path) -> tuple[float, float, str]:
    """`sbatch --nodes=N sweeps/cluster/slurm.sbatch ARGS` from the login node of the namespace
    cluster in `cluster`: the job's wall time from submission until it left the queue (Ray's
    start and stop included; squeue asked every 0.2 s, as sbatch --wait asks ever more rarely),
    the sweep's own and its `cores:` line."""
    def on_ctl(*command) -> str:
        return subprocess.run(["bash", CLUSTER_SCRIPT, "on", cluster, "ctl", *command], cwd=CLUSTER_SCRIPT.parents[2],
                              env={**os.environ, "LAB_VENV": sys.prefix}, capture_output=True, text=True,
                              check=True).stdout.strip()

    start = time.perf_counter()
    job = on_ctl("sbatch", "--parsable", f"--nodes={nodes}", f"--output={log}", "sweeps/cluster/slurm.sbatch",
                 *args, "hydra.launcher.figures=false").split(";")[0]
    while on_ctl("squeue", "-h", "-j", job):
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    output = log.read_text()
    if "cores: " not in output:
        raise RuntimeError(f"the job failed:\n{output[-3000:]}")
    return (seconds, *cores_line(output))


def cluster_section(quick: bool) -> None:
    reason = cluster_unavailable()
    if reason:
        print(f"cluster: not measured: {reason}")
        return
    grid = [*PARALLEL_GRID, *(["iterations=50"] if quick else [])]
    print(f"cluster: sbatch --nodes=N sweeps/cluster/slurm.sbatch {' '.join(grid)}, on SLURM nodes of "
          "1 CPU each (tests/cluster/cluster.sh: namespaces sharing this machine's cores)")
    warm_up()
    with tempfile.TemporaryDirectory(prefix="labbench", dir="/tmp") as out:  # short: Ray's socket paths
        cluster = Path(out) / "c"
        Path(out).chmod(0o755)  # munged wants every folder above its socket open to all
        subprocess.run(["bash", CLUSTER_SCRIPT, "up", cluster, "2"], check=True)
        walls = {}
        try:
            for nodes in (1, 2):
                job, walls[nodes], line = slurm_sweep_seconds(
                    cluster, nodes, [*grid, f"results_dir={out}/results{nodes}"], Path(out) / f"job{nodes}.log")
                print(f"  {nodes} node{'s' * (nodes > 1)}: the sweep {walls[nodes]:.1f} s, the job {job:.1f} s "
                      f"(with Ray's start); {line}")
        finally:
            subprocess.run(["bash", CLUSTER_SCRIPT, "down", cluster], check=True)
    print(f"  speed-up with 2 nodes: {walls[1] / walls[2]:.2f}x")
