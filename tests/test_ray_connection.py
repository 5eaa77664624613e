"""Joining or starting Ray (lab.execution.ray_connection): the dashboard flag, token mode for a local
Ray, the token hint when joining fails, in one line. Ray is faked, except in the integration test at
the end, which starts a real local Ray."""

import os
import socket
import subprocess
import sys
import types

import pytest

from lab import sweep
from lab.execution import ray_connection
from sweeping import clean_env, serial_grid

def _unset_auth_mode(monkeypatch):
    """No RAY_AUTH_MODE during the test, and none after it either: connect() sets it, and
    monkeypatch.delenv of a variable that is not set would not remove it afterwards (a later
    test's real Ray would then start with a mode its process's cached configuration lacks)."""
    monkeypatch.setenv("RAY_AUTH_MODE", "")
    monkeypatch.delenv("RAY_AUTH_MODE")


class FakeRay:
    """ray.init's arguments, and a context with a dashboard URL; or `fail` raised (an exception, or
    one per call: an exception or None for a call that succeeds)."""

    def __init__(self, monkeypatch, fail=None):
        self.calls, self.failures = [], iter(fail) if isinstance(fail, list) else None
        self.fail = fail if self.failures is None else None
        monkeypatch.setattr("ray.init", self.init)
        # connect() re-reads Ray's cached configuration after setting RAY_AUTH_MODE: not in this
        # process, which other tests share
        self.reconfigured = []
        monkeypatch.setattr("lab.compat.ray.reread_config", lambda: self.reconfigured.append(""))

    def init(self, **kwargs):
        self.calls.append(kwargs)
        fail = next(self.failures) if self.failures else self.fail
        if fail:
            raise fail
        return types.SimpleNamespace(dashboard_url="127.0.0.1:8265" if kwargs.get("include_dashboard") else "")


def test_the_dashboard_is_off_by_default_and_the_flag_turns_it_on(monkeypatch, capsys):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    _unset_auth_mode(monkeypatch)
    fake = FakeRay(monkeypatch)
    sweep.connect(num_cpus=1)
    assert fake.calls[-1]["include_dashboard"] is False and "dashboard" not in capsys.readouterr().out
    sweep.connect(num_cpus=1, dashboard=True)
    assert fake.calls[-1]["include_dashboard"] is True
    assert "Ray dashboard: http://127.0.0.1:8265" in capsys.readouterr().out
    from hydra_plugins.lab_plugins.lab_plugins import LabLauncher, LabLauncherConf
    assert LabLauncherConf.dashboard is False and LabLauncher(dashboard=True).options["dashboard"] is True


def test_the_dashboard_flag_reaches_the_launcher(tmp_path):
    done = serial_grid(tmp_path, "hydra.launcher.dashboard=true", "hydra.launcher.dry_run=true")
    assert done.returncode == 0, done.stderr  # accepted (a dry run starts no Ray)


def test_a_local_ray_gets_token_mode_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    _unset_auth_mode(monkeypatch)
    fake = FakeRay(monkeypatch)
    sweep.connect(num_cpus=1)
    assert os.environ["RAY_AUTH_MODE"] == "token"  # Ray's default, said: no warning
    assert fake.reconfigured == [""]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    sweep.connect(num_cpus=1)
    assert os.environ["RAY_AUTH_MODE"] == "disabled" and fake.reconfigured == ["", ""]


@pytest.fixture
def listening():
    """host:port of a socket that accepts connections (no process: a listening socket here)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield "127.0.0.1:%d" % server.getsockname()[1]


def _free_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


def test_the_token_hint_comes_only_with_authentication_errors(monkeypatch, listening):
    from ray.exceptions import AuthenticationError

    _unset_auth_mode(monkeypatch)
    refused = ConnectionError("Failed to connect to Ray cluster")
    # Ray's own authentication error, whatever the address
    assert ray_connection.token_hint(_free_address(), AuthenticationError("no token found")) == ray_connection.TOKEN_HINT
    # a client without token mode, refused by a cluster that listens: authentication
    assert ray_connection.token_hint(listening, refused) == ray_connection.TOKEN_HINT
    # nothing listens there (a wrong address, a stopped cluster), or another kind of error: no hint
    assert ray_connection.token_hint(_free_address(), refused) == ""
    assert ray_connection.token_hint("ray://somewhere", refused) == ""
    assert ray_connection.token_hint(listening, ValueError("bad argument")) == ""
    # token mode was on: the token was sent, so a refusal is not its absence
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert ray_connection.token_hint(listening, refused) == ""


def test_joining_fails_in_one_line_with_or_without_the_hint(monkeypatch, capsys, listening):
    _unset_auth_mode(monkeypatch)
    FakeRay(monkeypatch, fail=ConnectionError("Failed to connect to Ray cluster"))
    address = _free_address()
    with pytest.raises(SystemExit) as stop:
        sweep.connect(address)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: could not join the Ray cluster at {address}") and "RAY_AUTH_MODE" not in err
    with pytest.raises(SystemExit):
        sweep.connect(listening)
    assert "needs RAY_AUTH_MODE=token" in capsys.readouterr().err


def test_a_ray_client_whose_initialization_fails_tries_again_then_stops_in_one_line(monkeypatch, capsys):
    _unset_auth_mode(monkeypatch)
    monkeypatch.setattr("ray.shutdown", lambda: None)
    aborted = ConnectionAbortedError("Initialization failure from server:\n")
    fake = FakeRay(monkeypatch, fail=[aborted, None])  # the second attempt joins
    sweep.connect("ray://head:10001")
    assert len(fake.calls) == 2
    assert capsys.readouterr().out == ("joining the Ray cluster at ray://head:10001 failed (Initialization failure "
                                       "from server:); trying again (2/3)\n")
    fake = FakeRay(monkeypatch, fail=aborted)  # never joins: three attempts, then one line
    with pytest.raises(SystemExit) as stop:
        sweep.connect("ray://head:10001")
    assert stop.value.code == 2 and len(fake.calls) == ray_connection.JOIN_ATTEMPTS == 3
    assert capsys.readouterr().err == ("error: could not join the Ray cluster at ray://head:10001 (3 attempts): "
                                       "Initialization failure from server:\n")


LOCAL_START = """
from lab import sweep
sweep.connect(num_cpus=1, dashboard=True)
import ray
print("cpus", ray.cluster_resources().get("CPU"))
"""


@pytest.mark.integration
def test_a_local_ray_starts_with_its_dashboard_and_without_the_token_warning(tmp_path):
    env = clean_env()
    env.pop("RAY_AUTH_MODE", None)
    done = subprocess.run([sys.executable, "-c", LOCAL_START], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "Ray dashboard: http://" in done.stdout and "cpus 1.0" in done.stdout
    assert "Token authentication is enabled" not in done.stderr, done.stderr
