"""Ray's private APIs the lab uses, and nowhere else: checked against ray 2.60 (CHECKED).

tests/test_compat_ray_hydra.py fails, naming the function here to change, when a name moves or
the installed Ray is outside CHECKED. Ray is imported inside each function: importing the lab must
not import Ray (a sweep that trains without Ray never pays for it).
"""

CHECKED = ("2.60",)  # Ray releases (major.minor) checked


def local_node_processes() -> dict[str, list]:
    """The processes of the Ray this process started, by kind ("monitor", "gcs_server", ...),
    each with a `.process` (a subprocess.Popen); empty when it started none (it joined a cluster,
    or Ray is not running). Ray keeps them in its private `_global_node.all_processes`."""
    import ray  # not at the lab's import (module doc): only a sweep on Ray pays for Ray

    node = getattr(ray._private.worker, "_global_node", None)
    return getattr(node, "all_processes", {})


def reread_config() -> None:
    """Make Ray read its configuration (RAY_AUTH_MODE among it) again from the environment, as Ray
    does itself when it sets the authentication mode: its private ray._raylet.Config caches it."""
    from ray._raylet import Config  # not at the lab's import (module doc): only a sweep on Ray

    Config.initialize("")


def set_process_title(title: str) -> None:
    """Title this Ray worker process (what `ps` and `top` show). Ray titles a worker after the task
    it runs (`ray::<name>`), but an actor's after its class whatever the call: the lab titles its
    actors' calls itself, with Ray's own private ray._raylet.setproctitle."""
    from ray._raylet import setproctitle  # in a Ray actor; importing this module must not load Ray

    setproctitle(title)
