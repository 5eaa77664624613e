"""The cluster recipes in sweeps/cluster/: the `ray up` YAML passes Ray's own schema, and the SLURM
batch script really starts a Ray head, joins it and runs a sweep (with stand-ins for srun and
scontrol that run everything on this machine)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from lab import results
from sweeping import REPO, TINY, clean_env

CLUSTER = REPO / "sweeps" / "cluster"


def test_the_cluster_launcher_yaml_is_valid_for_ray_up():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    validate_config(prepare_config(config))  # raises on a field `ray up` would reject
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token" in c for c in starts if " start " in c)
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    # the repository goes to the nodes without what git ignores (a local .venv is gigabytes)
    assert config["rsync_filter"] == [".gitignore"] and ".venv/" in (REPO / ".gitignore").read_text()


FAKE_SRUN = """#!/bin/bash
# stands in for srun: drop the options, run the command on this machine
while [[ $1 == -* ]]; do case $1 in -w) shift 2;; *) shift;; esac; done
exec "$@"
"""


@pytest.mark.slow
def test_the_slurm_script_starts_ray_and_runs_a_sweep(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text(FAKE_SRUN)
    (fake / "scontrol").write_text("#!/bin/bash\necho localhost\n")  # a one-node allocation
    for tool in fake.iterdir():
        tool.chmod(0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_tmp = tempfile.mkdtemp(prefix="rayslurm", dir="/tmp")  # short: Ray's socket paths are capped
    # RAY_TMPDIR keeps this Ray out of /tmp/ray, where ray.init() elsewhere would find its address
    env = clean_env(PATH=f"{fake}{os.pathsep}{os.environ['PATH']}", RAY_TMPDIR=ray_tmp,
                    SLURM_SUBMIT_DIR=str(tmp_path),
                    SLURM_JOB_NODELIST="localhost", SLURM_CPUS_PER_TASK="2", SLURM_JOB_ID="42",
                    LAB_VENV=str(Path(sys.executable).parents[1]), RAY_PORT=str(port))
    log = tmp_path / "lab-sweep.log"  # a file: the Ray head left in the background keeps pipes open
    with open(log, "w") as out:
        script = subprocess.Popen(["bash", CLUSTER / "slurm.sbatch", *TINY, "seed=0,1"], cwd=REPO,
                                  env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            script.wait(timeout=240)
        finally:
            os.killpg(script.pid, signal.SIGKILL)  # the Ray head it left running (SLURM would end it)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    output = log.read_text()
    assert script.returncode == 0, output
    assert f"2 runs finished, 0 failed; results in {tmp_path / 'results' / 'slurm-42'}" in output
    assert len(results.run_files(tmp_path / "results" / "slurm-42")) == 2
