"""The cluster recipes in sweeps/cluster/: the `ray up` YAML passes Ray's own schema. (The SLURM
batch script runs on a real SLURM in the cluster tier: tests/test_cluster_slurm.py.)"""

import yaml

from sweeping import REPO

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
