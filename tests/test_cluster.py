"""A real two-node Ray cluster on this machine (loopback only): a sweep joins it by address and by
RAY_ADDRESS, and every run's rows land in the driver's results_dir (`ray job submit --working-dir
.` is tests/test_cluster_ray.py's, on nodes with their own addresses).

The head node has no CPUs, so every training task must run on the second node, which is started
from another folder: results appearing only in the driver's results_dir show that workers send
results back instead of writing them. Token authentication is on, as on a real cluster.
"""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from lab import results
from sweeping import REPO, TINY, alone, clean_env, rows, sweep

pytestmark = [pytest.mark.slow, pytest.mark.integration]
BIN = Path(sys.executable).parent


def _free_ports(host, n):
    """n distinct free ports of host (all held open together, so none is handed out twice)."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind((host, 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _node_ports(ports):
    manager, objects, agent, agent_grpc, metrics, runtime_env = ports
    return [f"--node-manager-port={manager}", f"--object-manager-port={objects}",
            f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(GCS address, dashboard URL, environment with the cluster's token) of a 2-node cluster."""
    failures = []
    for _ in range(2):  # a second try on fresh ports, should another process take one meanwhile
        root = tmp_path_factory.mktemp("cluster")
        # Ray's temporary root for every process of these tests (short: Ray's socket paths are
        # capped). The cluster lives in its ray/ folder, where ray.init() looks for "the cluster
        # `ray start` started on this machine", as /tmp/ray is for a user's own `ray start`.
        temp_root = tempfile.mkdtemp(prefix="raylab", dir="/tmp")
        nodes = []
        try:
            try:
                started = _start_cluster(root, temp_root, nodes)
            except (RuntimeError, TimeoutError) as exc:
                failures.append(str(exc))
                continue
            if failures:  # shown in pytest's warnings summary: the retry hid a failure
                warnings.warn(f"the first 2-node Ray cluster did not start: {failures[0]}")
            yield started
            return
        finally:
            for node in nodes:  # each node's `ray start --block` and every process it started
                with contextlib.suppress(ProcessLookupError):  # all of them gone already
                    os.killpg(node.pid, signal.SIGKILL)
                node.wait()
            shutil.rmtree(temp_root, ignore_errors=True)
    pytest.fail("could not start a 2-node Ray cluster:\n" + "\n".join(failures))


def _start_cluster(root, temp_root, nodes) -> dict:
    """Start a head without CPUs and a second node with 2, appending their processes to nodes."""
    temp_dir = os.path.join(temp_root, "ray")
    host = _host()
    gcs, dashboard, client, *node_ports = _free_ports(host, 15)
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16), RAY_TMPDIR=temp_root,
                    PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    # A small object store: the tests move a few rows, and the default takes 30% of the memory.
    common = ["--block", f"--node-ip-address={host}", f"--temp-dir={temp_dir}", "--disable-usage-stats",
              f"--object-store-memory={200 * 2**20}"]
    head_dir, node2_dir = root / "head", root / "node2"
    head_dir.mkdir(), node2_dir.mkdir()
    with open(root / "head.log", "w") as log:  # the child keeps its own copy of the descriptor
        nodes.append(subprocess.Popen(
            [BIN / "ray", "start", "--head", f"--port={gcs}", "--num-cpus=0", *common, *_node_ports(node_ports[:6]),
             "--include-dashboard=true", f"--dashboard-host={host}", f"--dashboard-port={dashboard}",
             f"--ray-client-server-port={client}"],
            cwd=head_dir, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT))
    _wait_for(host, gcs, nodes[0], root, temp_dir)
    with open(root / "node2.log", "w") as log:
        nodes.append(subprocess.Popen(
            [BIN / "ray", "start", f"--address={host}:{gcs}", "--num-cpus=2",
             '--resources={"node2": 1}', *common, *_node_ports(node_ports[6:])],
            cwd=node2_dir, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT))
    _wait_for(host, dashboard, nodes[0], root, temp_dir)
    return {"address": f"{host}:{gcs}", "dashboard": f"http://{host}:{dashboard}",
            "env": env, "node2_dir": node2_dir}


def _host() -> str:
    """Loopback, where it answers; else this machine's own address, as Ray picks it."""
    with socket.socket() as server, socket.socket() as client, contextlib.suppress(OSError):
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.settimeout(2)
        if client.connect_ex(server.getsockname()) == 0:
            return "127.0.0.1"
    import ray.util
    return ray.util.get_node_ip_address()


def _wait_for(host, port, head, root, temp_dir, timeout=120):
    """Wait until host:port answers. A head that exits or never listens fails the tests with its
    logs, so a failure on a machine we cannot log into (CI) still says why."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if head.poll() is not None:
            raise RuntimeError(f"`ray start --head` exited with {head.returncode}\n{_logs(root, temp_dir)}")
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s\n{_logs(root, temp_dir)}")


def _logs(root, temp_dir, lines=15) -> str:
    """The last lines of `ray start`'s output and of the head's own logs."""
    head_logs = Path(temp_dir, "session_latest", "logs")
    logs = sorted(root.glob("*.log")) + sorted(head_logs.glob("gcs_server.*")) + sorted(head_logs.glob("raylet.*"))
    shown = []
    for log in logs:
        if log.stat().st_size:
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            shown.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n".join(shown)


def _same_rows(stored: pd.DataFrame, seed, tmp_path):
    """The stored rows of `seed` equal the same run trained in this process."""
    expected = alone([*TINY, f"seed={seed}"], tmp_path / f"alone{seed}")
    pd.testing.assert_frame_equal(stored[stored.seed == seed].reset_index(drop=True), expected)


def test_a_sweep_joins_the_cluster_by_address_and_results_come_home(cluster, tmp_path):
    done = sweep(["--multirun", f"hydra.launcher.address={cluster['address']}", "results_dir=results",
                  *TINY, "seed=0,1,2"], cwd=tmp_path, env=cluster["env"])
    assert done.returncode == 0, done.stderr
    assert f"3 runs finished, 0 failed; results in {tmp_path / 'results'}" in done.stdout
    stored = rows(tmp_path / "results")
    assert sorted(stored.seed.unique()) == [0, 1, 2] and (stored.status == "finished").all()
    assert len(results.run_files(tmp_path / "results")) == 3
    assert not list(cluster["node2_dir"].rglob("*.parquet"))  # the training node wrote nothing
    _same_rows(stored, 1, tmp_path)  # and a run trained on node 2 equals the same run trained here


def test_a_sweep_joins_the_cluster_named_by_ray_address(cluster, tmp_path):
    env = {**cluster["env"], "RAY_ADDRESS": cluster["address"]}
    done = sweep(["--multirun", "results_dir=results", *TINY, "seed=3,4"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(rows(tmp_path / "results").seed.unique()) == [3, 4]


def test_joining_without_the_token_setting_says_what_to_set(cluster, tmp_path):
    env = {k: v for k, v in cluster["env"].items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token either
    env["RAY_gcs_server_port_wait_time_s"] = "2"  # give up after 2 connection attempts, not 20
    failed = sweep(["--multirun", f"hydra.launcher.address={cluster['address']}", "results_dir=results", *TINY],
                   cwd=tmp_path, env=env, timeout=120)
    assert failed.returncode == 2
    assert f"could not join the Ray cluster at {cluster['address']}" in failed.stderr
    assert "RAY_AUTH_MODE=token" in failed.stderr
    assert not (tmp_path / "results").exists()


def test_a_search_trains_its_trials_on_the_cluster(cluster, tmp_path):
    """The same search command, joined to the cluster: its trials train in actors on node 2 (the
    head has no CPUs), their runs land in the driver's results_dir, equal to runs trained here."""
    done = sweep(["--multirun", "hydra/sweeper=search", f"hydra.launcher.address={cluster['address']}",
                  "hydra.sweeper.num_samples=4", "hydra.sweeper.seeds=2", "hydra.sweeper.scheduler=asha",
                  "algorithm=q_table", "iterations=30", "episodes_per_update=20", "eval_every=3",
                  "alpha=tag(log,interval(0.01,1))", "hydra.launcher.figures=false", "results_dir=results"],
                 cwd=tmp_path, env=cluster["env"])
    assert done.returncode == 0, done.stderr
    assert "4 trials:" in done.stdout and "cores: " in done.stdout and "of 2 cores busy" in done.stdout
    stored = rows(tmp_path / "results")
    assert stored["run_id"].nunique() == 8 and sorted(stored["seed"].unique()) == [0, 1]
    assert not list(cluster["node2_dir"].rglob("*.parquet"))  # the training node wrote nothing
    first = stored[stored["run_id"] == stored["run_id"].iloc[0]].reset_index(drop=True)
    alpha, seed, last = float(first["alpha"].iloc[0]), int(first["seed"].iloc[0]), int(first["iteration"].max())
    expected = alone(["algorithm=q_table", "iterations=30", "episodes_per_update=20", "eval_every=3",
                      f"alpha={alpha!r}", f"seed={seed}"], tmp_path / "alone")
    expected = expected[expected["iteration"] <= last].drop(columns="status").reset_index(drop=True)
    pd.testing.assert_frame_equal(first.drop(columns="status"), expected)


SHIPPED = """
import os, ray
import lab
from lab import sweep
sweep.connect()  # RAY_ADDRESS names the cluster

@ray.remote(num_cpus=1, resources={"node2": 1})
def where():
    import lab
    return lab.__file__, os.getcwd()

print(*ray.get(where.remote()), sep="\\n")
"""


def test_workers_import_the_lab_shipped_by_the_driver(cluster, tmp_path):
    """Joining a cluster ships `lab` to it, so a node without this repository can run the tasks."""
    env = {**cluster["env"], "RAY_ADDRESS": cluster["address"]}
    shown = subprocess.run([sys.executable, "-c", SHIPPED], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    module_file, cwd = shown.stdout.split()
    assert "runtime_resources" in module_file and "py_modules_files" in module_file
    assert not module_file.startswith(str(REPO))
    assert Path(cwd) != tmp_path  # the worker does not run in the driver's folder
