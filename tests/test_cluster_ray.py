"""A multi-node Ray on nodes with their own addresses and hostnames (tests/cluster/cluster.sh),
started by hand as on machines one can ssh into (sweeps/cluster/ray-cluster.yaml): a head on
node1, a worker on node2, 1 CPU each. A sweep reaches it with `ray job submit`, from the login
node outside the cluster (hydra.launcher.address=ray://...), and as a search; a node that joins
mid-sweep gets runs. Each run's table names the node that trained it."""

import sys

import pytest
import yaml

from cluster import ip, running, wait_for
from lab import results
from sweeping import SECONDS, TINY

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.integration]

NO_FIGURES = "hydra.launcher.figures=false"


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """(cluster, the head's GCS address) with Ray on node1 (head) and node2."""
    logs = tmp_path_factory.mktemp("ray-logs")
    with running(nodes=3) as cluster:
        address = cluster.ray_head("node1", logs)
        cluster.ray_worker("node2", address, logs)
        wait_for(lambda: cluster.ray_nodes("node1") == ["node1", "node2"], 120, "node2 in the Ray cluster")
        cluster.logs = logs
        yield cluster, address


def hosts(results_dir) -> set[str]:
    return set(results.runs(results.load(results_dir)).host)


def test_ray_job_submit_to_the_head_trains_on_both_nodes(ray_cluster, tmp_path):
    cluster, _ = ray_cluster
    results_dir = tmp_path / "submitted"
    submit = cluster.on("ctl", "ray", "job", "submit", f"--address=http://{ip('node1')}:8265", "--working-dir", ".",
                        "--", "python", "-m", "lab.sweep", "--multirun", f"results_dir={results_dir}", *SECONDS,
                        "iterations=100", "seed=range(0,6)", NO_FIGURES, timeout=300)
    assert submit.returncode == 0, submit.stdout + submit.stderr
    assert f"6 runs finished, 0 failed; results in {results_dir}" in submit.stdout
    assert hosts(results_dir) == {"node1", "node2"}
    record = yaml.safe_load(next((results_dir / results.SWEEPS).glob("*.yaml")).read_text())
    assert record["host"] == "node1"  # a submitted job's driver runs on the head


def test_a_sweep_from_outside_the_cluster_joins_it_by_ray_client(ray_cluster, tmp_path):
    cluster, _ = ray_cluster
    results_dir = tmp_path / "outside"
    # the login node `ctl` runs no Ray: it reaches the head's Ray client server
    done = cluster.on("ctl", sys.executable, "-m", "lab.sweep", "--multirun",
                      f"hydra.launcher.address=ray://{ip('node1')}:10001", f"results_dir={results_dir}", *TINY,
                      "seed=0,1,2,3", NO_FIGURES, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"4 runs finished, 0 failed; results in {results_dir}" in done.stdout
    assert hosts(results_dir) <= {"node1", "node2"}
    record = yaml.safe_load(next((results_dir / results.SWEEPS).glob("*.yaml")).read_text())
    assert record["host"] == "ctl"


def test_a_search_spreads_its_trials_over_both_nodes(ray_cluster, tmp_path):
    cluster, address = ray_cluster
    results_dir = tmp_path / "search"
    # joining a cluster, the search trains its trials in one Ray actor per CPU: one on each node;
    # trials of about 2 s each, so that the actor ready first cannot train all four before the other
    # has imported the lab (a few seconds on a loaded machine: 20,000-episode trials once could)
    done = cluster.on("node1", sys.executable, "-m", "lab.sweep", "--multirun", "hydra/sweeper=search",
                      "hydra.sweeper.num_samples=4", f"hydra.launcher.address={address}", "algorithm=q_table",
                      "opponent=random", "player=1", "episodes_per_update=10000", "iterations=500",
                      "alpha=interval(0.1,0.5)", f"results_dir={results_dir}", NO_FIGURES, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 trials: 4 finished, 0 stopped early, 0 failed" in done.stdout
    assert "of 2 cores busy" in done.stdout  # the cluster's two CPUs, not this node's
    assert hosts(results_dir) == {"node1", "node2"}


def test_a_node_that_joins_mid_sweep_gets_runs(ray_cluster, tmp_path):
    cluster, address = ray_cluster
    results_dir = tmp_path / "joined"
    log = tmp_path / "sweep.log"
    sweep = cluster.start("node1", sys.executable, "-m", "lab.sweep", "--multirun", f"hydra.launcher.address={address}",
                          f"results_dir={results_dir}", *SECONDS, "iterations=200", "seed=range(0,72)", NO_FIGURES,
                          log=log)
    try:
        wait_for(lambda: results.run_files(results_dir), 120, "a first finished run", log)
        cluster.ray_worker("node3", address, cluster.logs)
        # node3's Ray takes seconds to start (tens on a loaded machine): 72 runs of about a second on
        # two 1-CPU nodes leave it time to join while many of them are still to come
        wait_for(lambda: "node3" in cluster.ray_nodes("node1"), 240, "node3 in the Ray cluster", log)
        left = 72 - len(results.run_files(results_dir))
        assert sweep.poll() is None and left > 4, f"the sweep had {left} runs left when node3 joined"
        assert sweep.wait(timeout=300) == 0, log.read_text()
    finally:
        if sweep.poll() is None:
            sweep.kill()
        for pid, _ in cluster.jobs_processes("node3"):  # node3 leaves again
            cluster.kill(pid)
    assert "72 runs finished, 0 failed" in log.read_text()
    assert hosts(results_dir) == {"node1", "node2", "node3"}
