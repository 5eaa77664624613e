"""Connecting to Ray and stopping it: join a cluster or start a local Ray (token mode, dashboard),
a one-line error with a hint when joining fails, and a quicker stop of a Ray this process started."""

import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path

import lab
from lab.cli import fail, first_line
from lab.compat import ray as ray_compat

TOKEN_HINT = ("; a cluster with token authentication (Ray's default when ~/.ray/auth_token exists) "
              "needs RAY_AUTH_MODE=token and its token in ~/.ray/auth_token or RAY_AUTH_TOKEN")
JOIN_ATTEMPTS = 3


def connect(address=None, num_cpus=None, dashboard=False) -> None:
    """Join the Ray cluster at `address` (else RAY_ADDRESS), shipping it the `lab` package (its
    nodes need the dependencies, not this repository), or start a local Ray of num_cpus (with its
    dashboard if `dashboard`, whose URL is printed). Joining, Ray's own SIGTERM handler stays (it
    exits at once): a scheduler stopping the job stops the cluster's Ray too, and the Ctrl-C path
    would wait on its head."""
    try:
        with contextlib.nullcontext() if joins(address) else _keeping_sigterm():
            _connect(address, num_cpus, dashboard)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while Ray starts: what it started stops too
        with contextlib.suppress(Exception):
            disconnect()
        raise


def joins(address) -> bool:
    """Whether Ray means a cluster to join (else a local Ray this process starts)."""
    return bool(address or os.environ.get("RAY_ADDRESS"))


@contextlib.contextmanager
def _keeping_sigterm():
    """Ray's start replaces this process's SIGTERM handler with its own (sys.exit(15)): the
    lab's (lab.cli.terminate_as_interrupt: stop as Ctrl-C does, Ray included) is put back, and
    a SIGTERM during the start becomes the Ctrl-C it would have been."""
    main = threading.current_thread() is threading.main_thread()
    kept = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    except SystemExit as exc:
        if main and callable(kept) and exc.code == signal.SIGTERM:
            kept = signal.SIG_IGN  # the sweep stops now: a later signal would cut that short
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            raise KeyboardInterrupt from None
        raise
    finally:
        if main and kept is not None:
            signal.signal(signal.SIGTERM, kept)


def _connect(address, num_cpus, dashboard) -> None:
    import ray  # not loaded until a sweep runs on Ray: ~0.3 s of start-up

    quiet = {"logging_level": "WARNING", "log_to_driver": False}
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        if dashboard:  # refused in one line without the packages of Ray's dashboard (ray[default])
            try:
                import ray.dashboard.optional_deps  # noqa: F401 - what Ray imports to decide the same
            except ImportError as exc:
                fail(f"hydra.launcher.dashboard=true needs the packages of Ray's dashboard ({exc}): "
                     "pip install 'ray[default]'")
        # Ray 2.60 turns token authentication on for a new local cluster, with a warning unless
        # RAY_AUTH_MODE says so: saying so keeps it on without it (a mode the user set stays). Ray's
        # configuration cached here is read again, else it would not send the token to its own cluster.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        ray_compat.reread_config()
        # "local" starts a private Ray even when a `ray start` cluster runs on this machine
        # (plain ray.init() would join it).
        context = ray.init(address="local", num_cpus=num_cpus, include_dashboard=dashboard, **quiet)
    else:
        context = _join(ray, address, quiet)
    if dashboard:
        url = getattr(context, "dashboard_url", None)
        print(f"Ray dashboard: http://{url}" if url else
              "Ray dashboard: none (the cluster was started without one)", flush=True)


def _join(ray, address, quiet):
    """ray.init on the cluster at `address`, tried JOIN_ATTEMPTS times while the server fails its Ray
    client's initialization (a ray:// client's data stream broke while a loaded head started its
    server); other failures end it in one line."""
    for attempt in range(1, JOIN_ATTEMPTS + 1):
        try:
            return ray.init(address=address, runtime_env={"py_modules": [str(Path(lab.__file__).parent)]}, **quiet)
        except ConnectionAbortedError as exc:
            if attempt == JOIN_ATTEMPTS:
                fail(f"could not join the Ray cluster at {address} ({JOIN_ATTEMPTS} attempts): {first_line(exc)}")
            with contextlib.suppress(Exception):  # what the failed attempt left of its client
                ray.shutdown()
            print(f"joining the Ray cluster at {address} failed ({first_line(exc)}); "
                  f"trying again ({attempt + 1}/{JOIN_ATTEMPTS})", flush=True)
        except Exception as exc:  # noqa: BLE001 - ConnectionError, Ray's AuthenticationError, ...
            fail(f"could not join the Ray cluster at {address}: {exc}{token_hint(address, exc)}")


def disconnect() -> None:
    """ray.shutdown(), a second sooner for a local Ray: Ray stops its autoscaler monitor after the
    GCS, which the monitor keeps calling until Ray kills it a second later; a local Ray never
    autoscales, so its monitor is killed first (joining a cluster, this process owns none)."""
    import ray  # not loaded until a sweep runs on Ray: ~0.3 s of start-up

    for monitor in ray_compat.local_node_processes().get("monitor", []):
        monitor.process.kill()
        monitor.process.wait()
    ray.shutdown()


def ray_started() -> bool:
    """Whether this process has started or joined Ray: never, if it has not imported it (which
    would cost ~0.3 s)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def token_hint(address: str, exc: BaseException) -> str:
    """TOKEN_HINT where the failure to join is one of authentication, else nothing: Ray 2.60's
    AuthenticationError (token mode on without a token), or a ConnectionError with token mode off
    while something listens at the address (a cluster with token mode refuses such a client until
    it gives up as if nothing were there)."""
    from ray.exceptions import AuthenticationError  # not loaded until a sweep runs on Ray: ~0.3 s of start-up

    if isinstance(exc, AuthenticationError):
        return TOKEN_HINT
    host, _, port = address.rpartition(":")  # HOST:PORT; other address forms: nothing to try
    if not isinstance(exc, ConnectionError) or os.environ.get("RAY_AUTH_MODE", "").lower() == "token" \
            or not host or not port.isdigit() or "/" in host:
        return ""
    with contextlib.suppress(OSError), socket.create_connection((host.strip("[]"), int(port)), timeout=2):
        return TOKEN_HINT
    return ""
