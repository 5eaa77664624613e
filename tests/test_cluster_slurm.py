"""The SLURM recipe (sweeps/cluster/slurm.sbatch) on a real SLURM whose nodes have their own
addresses and hostnames (tests/cluster/cluster.sh), submitted as a user submits it, and the faults
such a cluster has: a worker node lost mid-sweep, the head node's driver and Ray head killed, the
job cancelled. Every fault ends with each run in results_dir exactly once, and nothing of the job
left running on any node."""

import contextlib
import os
import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from cluster import FAST_FAILURE_DETECTION, Cluster, running, wait_for
from lab import results
from sweeping import SECONDS

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.integration]

RECIPE = "sweeps/cluster/slurm.sbatch"
RUNS, ITERATIONS = 16, 100
GRID = [*SECONDS, f"iterations={ITERATIONS}", f"seed=range(0,{RUNS})", "hydra.launcher.figures=false"]
"""16 runs of about a second each: a sweep long enough to be hit mid-way"""


@pytest.fixture
def cluster():
    with running(nodes=3) as cluster:
        yield cluster


def submit(cluster, tmp_path, *args, nodes=2, env=None):
    """`sbatch --nodes=N sweeps/cluster/slurm.sbatch ARGS` from the repository (its log in
    tmp_path); returns the job id and the path of its log."""
    job = cluster.sbatch(f"--nodes={nodes}", f"--output={tmp_path}/lab-sweep-%j.log", RECIPE, *args, env=env)
    return job, tmp_path / f"lab-sweep-{job}.log"


LINGER = 30
"""Seconds a Ray worker may outlive its job: SLURM's proctrack/linuxproc finds a job's processes by
parentage, so a worker that was being forked as its raylet ended is not signalled; Ray's workers
check their raylet every second and exit once it is gone (a starting one once it fails to connect)."""


def finished(cluster, job, log, timeout=300):
    """Wait for the job to end; its log. Then nothing of it runs on any node."""
    cluster.wait_job(job, timeout)
    nothing_left(cluster, cluster.nodes)
    return log.read_text()


def nothing_left(cluster, nodes):
    """Within LINGER seconds of its job's end, nothing of the job runs on the nodes."""
    deadline = time.monotonic() + LINGER
    for node in nodes:
        while (left := cluster.jobs_processes(node)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert left == [], node


def complete(results_dir, runs, iterations):
    """Every run in results_dir exactly once, finished with all its iterations."""
    table = results.load(results_dir)
    assert table.run_id.nunique() == runs == len(results.run_files(results_dir))
    for run_id, rows in table.groupby("run_id"):
        assert list(rows.iteration) == list(range(1, iterations + 1)), run_id
        assert (rows.status == "finished").all(), run_id
    return results.runs(table)


def test_the_recipe_trains_on_both_nodes_and_names_them(cluster, tmp_path):
    results_dir = tmp_path / "smoke"
    job, log = submit(cluster, tmp_path, "+sweeps=smoke", f"results_dir={results_dir}")
    output = finished(cluster, job, log)
    assert "Ray: 2 of 2 nodes joined" in output and f"4 runs finished, 0 failed; results in {results_dir}" in output, output
    runs = complete(results_dir, runs=4, iterations=200)
    assert set(runs.host) == {"node1", "node2"}  # each run's table names the node that trained it
    record = yaml.safe_load(next((results_dir / results.SWEEPS).glob("*.yaml")).read_text())
    assert record["host"] == "node1"  # the driver ran on the head's node
    assert "hydra.launcher.address=10.77.0.11:6379" in record["command"]


def test_a_worker_node_lost_mid_sweep_sends_its_runs_to_the_other_node(cluster, tmp_path):
    results_dir = tmp_path / "lost"
    job, log = submit(cluster, tmp_path, *GRID, f"results_dir={results_dir}", env=FAST_FAILURE_DETECTION)
    wait_for(lambda: cluster.training("node2"), 120, "a run training on node2", log)
    cluster.lose("node2")
    cluster.wait_job(job)  # --no-kill: SLURM lets the job finish on node1
    output = log.read_text()
    assert re.search(rf"{RUNS} runs finished, 0 failed, \d+ retried after their worker or node was lost", output), output
    # Ray names the loss after what it saw first: the actor dead, or its node not answering
    lost = re.findall(r"\((\w+)(?:, \.\.\.)?\) lost with Actor(?:Died|Unavailable)Error: sent again \(1 of 3\)",
                      output)
    assert lost, output
    runs = complete(results_dir, runs=RUNS, iterations=ITERATIONS).set_index("run_id")
    assert set(runs.host) <= {"node1", "node2"} and (runs.host[lost] == "node1").all()
    nothing_left(cluster, ["node1"])


def stopped(cluster, tmp_path, args, results_dir, stop, before: dict) -> dict:
    """Submit the sweep, `stop(job)` it once two more runs than `before` are saved, and check
    that the runs saved are whole and those saved `before` untouched; returns them all."""
    job, log = submit(cluster, tmp_path, *args)
    wait_for(lambda: len(results.run_files(results_dir)) >= len(before) + 2, 180, "two more saved runs", log)
    stop(job)
    output = finished(cluster, job, log)
    if before:
        assert f"{len(before)} runs already finished in results_dir: skipped" in output, output
    saved = {path: path.read_bytes() for path in results.run_files(results_dir)}
    assert len(before) + 2 <= len(saved) < RUNS
    assert all(saved[path] == content for path, content in before.items())  # not trained again
    for path in saved:  # whole: every iteration, finished
        table = pq.read_table(path).to_pandas()
        assert len(table) == ITERATIONS and (table.status == "finished").all()
    return saved


def test_a_job_stopped_mid_sweep_keeps_its_runs_and_the_same_command_trains_the_rest(cluster, tmp_path):
    """The head node lost (the driver and the Ray head SIGKILLed), then the resubmitted job
    cancelled with scancel: each time the runs saved stay whole, nothing is left running on any
    node, and the same command submitted again trains only the runs not saved yet."""
    results_dir = tmp_path / "resumed"
    args = [*GRID, f"results_dir={results_dir}"]

    def kill_driver_and_head(job):
        # SLURM's own step processes and the batch script stay: they see these die and end the job
        for pid, command in cluster.jobs_processes("node1"):
            if not command.startswith(("slurmstepd", "/bin/bash")):
                cluster.kill(pid)

    saved = stopped(cluster, tmp_path, args, results_dir, kill_driver_and_head, before={})
    saved = stopped(cluster, tmp_path, args, results_dir, lambda job: cluster.on("ctl", "scancel", job), saved)
    job, log = submit(cluster, tmp_path, *args)
    output = finished(cluster, job, log)
    assert f"{len(saved)} runs already finished in results_dir: skipped" in output, output
    assert f"{RUNS - len(saved)} runs finished, 0 failed; results in {results_dir}" in output
    complete(results_dir, runs=RUNS, iterations=ITERATIONS)
    assert all(path.read_bytes() == content for path, content in saved.items())


def namespaces(pid: int) -> set[str]:
    return {os.readlink(f"/proc/{pid}/ns/{kind}") for kind in ("pid", "net", "uts", "mnt")}


def test_teardown_leaves_nothing_whatever_happens(tmp_path):
    """A test that fails with a job and Ray running on the nodes still leaves no process,
    namespace, mount or file of the cluster, and a new cluster in the same place starts clean."""
    mounts = Path("/proc/self/mountinfo").read_text()
    with pytest.raises(RuntimeError, match="the test failed"), running(nodes=2) as cluster:
        job = cluster.sbatch("--nodes=2", f"--output={tmp_path}/job.log", "--wrap", "srun sleep 600")
        address = cluster.ray_head("node1", tmp_path)
        cluster.ray_worker("node2", address, tmp_path)
        wait_for(lambda: cluster.job_state(job) == "RUNNING", 60, "the job running")
        wait_for(lambda: any("raylet" in c for _, c in cluster.processes("node2")), 60, "a raylet on node2")
        inits = {node: int((cluster.dir / node / "pid").read_text()) for node in ("ctl", *cluster.nodes)}
        theirs = set().union(*(namespaces(pid) for pid in inits.values()))
        raise RuntimeError("the test failed")
    assert not cluster.dir.exists()
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if namespaces(int(proc.name)) & theirs or str(cluster.dir) in (proc / "cmdline").read_text():
                left.append(proc.name)
    assert left == []  # no slurmd, slurmctld, munged, raylet, worker or sleep: no namespace either
    assert Path("/proc/self/mountinfo").read_text() == mounts  # the nodes' mounts were theirs alone

    again = Cluster(nodes=2, folder=cluster.dir)  # the same folder, addresses and names
    try:
        again.up()
        assert again.on("ctl", "squeue", "-h").stdout == ""  # no job from before
        assert again.on("ctl", "sinfo", "-h", "-t", "idle", "-o", "%D").stdout.strip() == "2"
    finally:
        again.down()
