"""A real small cluster on this machine for the `cluster` tier (tests/cluster/cluster.sh): nodes
with their own addresses and hostnames, a real SLURM, and Ray started on them the way the recipes
in sweeps/cluster/ start it.

`Cluster` wraps the script: commands on a node, SLURM jobs submitted from the login node `ctl`,
Ray heads and workers started by hand (as `ray up` or an admin would), the processes running on
each node, and the faults (a node's processes killed, its link cut)."""

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sweeping import REPO, clean_env

SCRIPT = Path(__file__).with_name("cluster.sh")
BIN = Path(sys.executable).parent
SUBNET = "10.77.0"
REQUIRED = os.environ.get("LAB_CLUSTER_TIER") == "required"
"""Set by .ci/run: a machine that cannot run the tier fails it instead of skipping it."""
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel", "squeue")
DAEMONS = ("munged", "slurmctld", "slurmd")
"""What runs on a node of its own, beside its init; everything else is a job's."""
FAST_FAILURE_DETECTION = {
    # Ray's defaults notice a node that vanished from the network after minutes (gRPC keepalive
    # 5 min + 2 min, node health checks 5 x 10 s); the tests wait seconds. Every process of the
    # job gets them: sbatch exports the submitter's environment to every node.
    "RAY_grpc_client_keepalive_time_ms": "5000", "RAY_grpc_client_keepalive_timeout_ms": "5000",
    "RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


def ip(node: str) -> str:
    return f"{SUBNET}.1" if node == "ctl" else f"{SUBNET}.1{node.removeprefix('node')}"


def unavailable() -> str | None:
    """Why this machine cannot run the tier (one line), or None."""
    if os.geteuid() != 0:
        return "the cluster tier needs root (network namespaces and SLURM's daemons)"
    missing = [tool for tool in (*SLURM_TOOLS, "unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed: apt-get install slurm-wlm munge (as .ci/run does)"
    probe = subprocess.run(["unshare", "--net", "--uts", "--mount", "--pid", "--fork", "true"],
                           capture_output=True, text=True)
    if probe.returncode:
        return f"this machine cannot create namespaces: {probe.stderr.strip()}"
    return None


def require() -> None:
    """Skip the calling test where the machine cannot run the tier (fail it where it must)."""
    reason = unavailable()
    if reason:
        (pytest.fail if REQUIRED else pytest.skip)(reason)


@contextlib.contextmanager
def running(nodes: int = 3):
    """A cluster of `nodes` nodes for the with-block, torn down whatever happens in it (skips
    where the machine cannot run one)."""
    require()
    cluster = Cluster(nodes)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


class Cluster:
    """A cluster of tests/cluster/cluster.sh in a fresh folder: `up()`, and `down()` leaves nothing."""

    def __init__(self, nodes: int = 3, folder: Path | None = None):
        if folder is None:  # short: Ray's socket paths under DIR/tmp are capped at 107 characters
            folder = Path(tempfile.mkdtemp(prefix="labc", dir="/tmp")) / "c"
            folder.parent.chmod(0o755)  # munged wants every folder above its socket open to all
        self.dir = folder
        self.nodes = [f"node{i}" for i in range(1, nodes + 1)]
        token = secrets.token_hex(16)  # for Ray started by hand (the SLURM recipe makes its own)
        self.env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token,
                             PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", LAB_VENV=str(BIN.parent))

    def up(self) -> None:
        self._script("up", str(len(self.nodes)), timeout=60)

    def _script(self, *args, timeout=30, **kwargs) -> subprocess.CompletedProcess:
        done = subprocess.run(["bash", SCRIPT, args[0], self.dir, *args[1:]], capture_output=True,
                              text=True, timeout=timeout, **kwargs)
        if done.returncode:
            raise RuntimeError(f"cluster.sh {args[0]} failed:\n{done.stdout}{done.stderr}")
        return done

    def on(self, node: str, *command, env=None, timeout=120, cwd=REPO) -> subprocess.CompletedProcess:
        """Run a command on a node and wait for it (output captured; no check)."""
        return subprocess.run(["bash", SCRIPT, "on", self.dir, node, *map(str, command)], cwd=cwd,
                              env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)

    def start(self, node: str, *command, log: Path, env=None, cwd=REPO) -> subprocess.Popen:
        """Start a command on a node in the background, its output into `log`."""
        with open(log, "w") as out:
            return subprocess.Popen(["bash", SCRIPT, "on", self.dir, node, *map(str, command)], cwd=cwd,
                                    env={**self.env, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    # SLURM

    def sbatch(self, *args, env=None) -> int:
        """Submit from the login node, as a user in the repository would; returns the job id."""
        done = self.on("ctl", "sbatch", "--parsable", *args, env=env)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip().split(";")[0])

    def job_state(self, job: int) -> str:
        """PENDING, RUNNING, COMPLETING, ... or '' once SLURM has forgotten the job."""
        return self.on("ctl", "squeue", "-h", "-j", job, "-o", "%T").stdout.strip()

    def wait_job(self, job: int, timeout=300) -> None:
        """Until the job has left the queue (its processes ended on every node)."""
        wait_for(lambda: self.job_state(job) == "", timeout, f"the end of job {job}")

    # Ray by hand, as sweeps/cluster/ray-cluster.yaml starts it on each machine

    def ray_head(self, node: str, log_dir: Path, cpus: int = 1) -> str:
        """A Ray head on `node` with its dashboard (for `ray job submit`); returns its GCS address."""
        self.start(node, "ray", "start", "--head", "--block", f"--node-ip-address={ip(node)}", "--port=6379",
                   f"--num-cpus={cpus}", "--include-dashboard=true", "--dashboard-host=0.0.0.0",
                   "--disable-usage-stats", f"--object-store-memory={200 * 2**20}",
                   log=log_dir / f"ray-{node}.log")
        for port in (6379, 8265, 10001):  # the GCS, the dashboard (jobs), the Ray client server
            self.wait_listening(node, port, log_dir / f"ray-{node}.log")
        return f"{ip(node)}:6379"

    def ray_worker(self, node: str, address: str, log_dir: Path, cpus: int = 1) -> None:
        """A Ray worker node joining the head at `address` (no wait: runs queue until it joins)."""
        self.start(node, "ray", "start", "--block", f"--address={address}", f"--num-cpus={cpus}",
                   "--disable-usage-stats", f"--object-store-memory={200 * 2**20}",
                   log=log_dir / f"ray-{node}.log")

    def wait_listening(self, node: str, port: int, log: Path, timeout=120) -> None:
        def answers():
            return self.on("ctl", "bash", "-c", f"echo > /dev/tcp/{ip(node)}/{port}", timeout=10).returncode == 0
        wait_for(answers, timeout, f"{node}:{port} answering", log)

    def ray_nodes(self, head: str) -> list[str]:
        """The hostnames of the alive nodes of the Ray cluster whose head is on `head`."""
        script = (f"import ray; ray.init(address='{ip(head)}:6379', logging_level='ERROR'); "
                  "print(*sorted(n['NodeManagerHostname'] for n in ray.nodes() if n['Alive']))")
        done = self.on(head, sys.executable, "-c", script)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    # Processes and faults

    def processes(self, node: str) -> list[tuple[int, str]]:
        """(PID as this machine sees it, command line) of every process on the node (in its PID
        namespace: what `cluster.sh pids DIR NODE` lists, without starting a shell to poll)."""
        namespace = (self.dir / node / "pidns").read_text().strip()
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if os.readlink(proc / "ns" / "pid") == namespace:
                    found.append((int(proc.name), (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()))
            except OSError:
                continue  # ended meanwhile
        return found

    def jobs_processes(self, node: str) -> list[tuple[int, str]]:
        """The processes on the node but its own (its init and that init's sleep, munged,
        slurmctld, slurmd): what jobs or Ray run there."""
        init = int((self.dir / node / "pid").read_text())
        return [(pid, command) for pid, command in self.processes(node)
                if pid != init and not (command == "sleep 86400" and _parent(pid) == init)
                and Path(command.split(" ")[0]).name not in DAEMONS]

    def training(self, node: str) -> bool:
        """Whether a Ray worker on the node is training runs (Ray names it after its task)."""
        return any(command.startswith("ray::mc_vfa:") for _, command in self.processes(node))

    def lose(self, node: str) -> None:
        """The node dies as a machine does: everything a job runs on it SIGKILLed (Ray's raylet
        and workers, the driver if there), and its link cut (its slurmd, unreachable, stays)."""
        for pid, _ in self.jobs_processes(node):
            self.kill(pid)
        self._script("cut", node)

    @staticmethod
    def kill(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)

    def down(self) -> None:
        self._script("down")
        shutil.rmtree(self.dir.parent, ignore_errors=True)


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def wait_for(condition, timeout, what, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            tail = "\n" + "\n".join(log.read_text().splitlines()[-20:]) if log and log.exists() else ""
            raise TimeoutError(f"no {what} after {timeout} s{tail}")
        time.sleep(0.5)
