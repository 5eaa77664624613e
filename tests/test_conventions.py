"""The conventions a Hydra, Ray and pandas user expects (issue 14): a record of every sweep under
results_dir/_sweeps, the note and the switch on runs trained by another code version, Hydra's own
folder and sweeper knobs honoured or refused in one line, and the Ray options (dashboard, token).

Sweeps run in this process without Ray (hydra.launcher.parallel=false), except the integration
test at the end, which starts a real local Ray.
"""

import socket
import subprocess
import sys
import types

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from lab import provenance, results, sweep
from sweeping import TINY, clean_env, cli, snapshot

SERIAL = ["hydra.launcher.parallel=false", "hydra.launcher.figures=false"]


def _sweep(tmp_path, *args):
    return cli(["--multirun", "results_dir=results", *TINY, *SERIAL, *args], tmp_path)


def _records(tmp_path):
    return sorted((tmp_path / "results" / results.SWEEPS).glob("*.yaml"))


def test_a_sweep_that_trains_leaves_a_record_of_its_config(tmp_path):
    done = _sweep(tmp_path, "seed=0,1")
    assert done.returncode == 0, done.stderr
    (record,) = _records(tmp_path)
    doc = OmegaConf.load(record)
    assert doc.overrides[-1] == "seed=0,1" and "results_dir=results" in doc.overrides
    assert "hydra.launcher.parallel=false" in doc.hydra_overrides
    assert doc.config.results_dir == "results" and doc.config.iterations == 3
    assert doc.config.algorithm == "mc_vfa" and "hydra" not in doc.config
    assert doc.code.git_commit == provenance.code()["git_commit"]
    assert doc.runs == {"configurations": 2, "train": 2, "skip": 0}
    assert doc.sweeper._target_.endswith("LabSweeper") and doc.launcher.parallel is False
    assert record.name.endswith("Z.yaml")  # a UTC timestamp
    # the readers skip it
    assert len(pd.read_parquet(tmp_path / "results")) == 6 and len(results.load(tmp_path / "results")) == 6

    # nothing left to train: no new record; a second sweep that trains: a second one
    assert _sweep(tmp_path, "seed=0,1").returncode == 0
    assert len(_records(tmp_path)) == 1
    assert _sweep(tmp_path, "seed=2").returncode == 0
    assert len(_records(tmp_path)) == 2


def test_no_record_on_a_dry_run_or_an_invalid_knob(tmp_path):
    assert _sweep(tmp_path, "seed=0,1", "hydra.launcher.dry_run=true").returncode == 0
    assert _sweep(tmp_path, "seed=0,1", "alpha=7").returncode == 2
    assert not (tmp_path / "results").exists()


def _rewrite_commit(path, commit):
    """Make a stored run look trained by another commit."""
    table = pq.read_table(path)
    column = pa.array([commit] * table.num_rows, pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("git_commit"), "git_commit", column), path)


@pytest.fixture
def one_run_from_old_code(tmp_path):
    """results/ with two finished runs, one of them stamped with another commit."""
    assert _sweep(tmp_path, "seed=0,1").returncode == 0
    old = results.run_files(tmp_path / "results")[0]
    _rewrite_commit(old, "0123456789ab" + "c" * 28)
    return old


def test_runs_of_another_code_version_are_reused_with_a_note(tmp_path, one_run_from_old_code):
    before = snapshot(tmp_path / "results")
    done = _sweep(tmp_path, "seed=0,1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "other code" in line]
    current = provenance.version_of(provenance.code())
    assert lines == [f"1 runs finished in results_dir were trained by other code: 0123456789ab"
                     f"{'+dirty' if provenance.code()['git_dirty'] else ''} (1); this is {current}: "
                     "reused as they are (on_code_change=rerun trains them again)"]
    assert "0 runs to train" in done.stdout
    assert snapshot(tmp_path / "results") == before  # nothing trained, no record


def test_on_code_change_rerun_trains_them_again(tmp_path, one_run_from_old_code):
    done = _sweep(tmp_path, "seed=0,1", "on_code_change=rerun")
    assert done.returncode == 0, done.stderr
    assert "1 runs to train" in done.stdout
    assert "trained by other code: 0123456789ab" in done.stdout and "training them again" in done.stdout
    again = pq.read_table(one_run_from_old_code, columns=["git_commit"]).to_pydict()["git_commit"]
    assert set(again) == {provenance.code()["git_commit"]}
    # the same code now: nothing more to say or do
    done = _sweep(tmp_path, "seed=0,1", "on_code_change=rerun")
    assert "0 runs to train" in done.stdout and "other code" not in done.stdout


def test_a_dirty_tree_of_the_same_commit_is_the_same_code():
    code = {"lab_version": "0.1.0", "git_commit": "a" * 40, "git_dirty": False}
    assert provenance.same_code({**code, "git_dirty": True}, code)
    assert not provenance.same_code({**code, "git_commit": "b" * 40}, code)
    assert provenance.same_code({**code, "git_commit": None}, code)  # a wheel: its lab version
    assert not provenance.same_code({"lab_version": None, "git_commit": None, "git_dirty": None}, code)


def test_stored_reads_the_code_of_each_run(tmp_path, one_run_from_old_code):
    stored = results.stored(tmp_path / "results")
    assert {s.status for s in stored.values()} == {"finished"}
    assert stored[one_run_from_old_code.stem].code["git_commit"].startswith("0123456789ab")
    assert results.statuses(tmp_path / "results") == {k: "finished" for k in stored}


REFUSED = [  # (arguments, what the one line says)
    (["--multirun", "hydra.sweep.dir=elsewhere"], "hydra.sweep.dir=elsewhere is not used by the lab"),
    (["--multirun", "hydra.sweep.subdir=job${hydra.job.num}"], "hydra.sweep.subdir=job${hydra.job.num} is not used"),
    (["hydra.run.dir=elsewhere"], "hydra.run.dir=elsewhere is not used by the lab: a run's results go to results_dir"),
    (["--multirun", "hydra.run.dir=elsewhere"], "hydra.run.dir=elsewhere is not used"),
    (["--multirun", "seed=interval(0,5)"], "seed=interval(0,5): a grid takes comma lists (a,b,c), range(), "
                                           "choice() or glob(); interval() belongs to a search"),
    (["--multirun", "hydra/sweeper=basic", "alpha=interval(0.001,0.1)"], "interval() belongs to a search"),
    (["--multirun", "+sweeps=smoke", "alpha=interval(0.001,0.1)"], "interval() belongs to a search"),
    (["on_code_change=maybe"], "on_code_change='maybe' is not allowed: on_code_change must be reuse"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_hydra_knobs_the_lab_does_not_follow_are_refused_in_one_line(tmp_path, args, message):
    before = snapshot(tmp_path)
    done = cli([*args, "results_dir=results", *TINY, *SERIAL], tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert snapshot(tmp_path) == before


def test_hydra_folder_knobs_at_their_values_pass(tmp_path):
    done = _sweep(tmp_path, "hydra.sweep.dir=${results_dir}/_sweeps", "hydra.run.dir=.")
    assert done.returncode == 0, done.stderr


def test_hydras_basic_sweeper_keeps_results_dir_a_table(tmp_path):
    done = _sweep(tmp_path, "hydra/sweeper=basic", "seed=0,1,2", "hydra.sweeper.max_batch_size=2")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "results"
    assert (out / results.SWEEPS / "multirun.yaml").is_file()  # Hydra's own record, beside ours
    assert not list(out.glob("*.yaml"))
    assert pd.read_parquet(out)["seed"].nunique() == 3 and len(results.load(out)) == 9
    assert done.stdout.count("configurations,") == 2  # two batches


def test_the_lab_sweeper_honours_max_batch_size(tmp_path):
    done = _sweep(tmp_path, "seed=0,1,2", "hydra.sweeper.max_batch_size=2")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if "configurations," in line] == \
        ["2 configurations, 2 runs to train", "1 configurations, 1 runs to train"]
    assert len(results.statuses(tmp_path / "results")) == 3


def _unset_auth_mode(monkeypatch):
    """No RAY_AUTH_MODE during the test, and none after it either: connect() sets it, and
    monkeypatch.delenv of a variable that is not set would not remove it afterwards (a later
    test's real Ray would then start with a mode its process's cached configuration lacks)."""
    monkeypatch.setenv("RAY_AUTH_MODE", "")
    monkeypatch.delenv("RAY_AUTH_MODE")


class FakeRay:
    """ray.init's arguments, and a context with a dashboard URL."""

    def __init__(self, monkeypatch, fail=None):
        self.calls, self.fail = [], fail
        monkeypatch.setattr("ray.init", self.init)
        # connect() re-reads Ray's cached configuration after setting RAY_AUTH_MODE: not in this
        # process, which other tests share
        self.reconfigured = []
        monkeypatch.setattr("ray._raylet.Config", types.SimpleNamespace(initialize=self.reconfigured.append))

    def init(self, **kwargs):
        self.calls.append(kwargs)
        if self.fail:
            raise self.fail
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
    from hydra_plugins.lab_plugins.lab_plugins import LabRayLauncher, LabRayLauncherConf
    assert LabRayLauncherConf.dashboard is False and LabRayLauncher(dashboard=True).options["dashboard"] is True


def test_the_dashboard_flag_reaches_the_launcher(tmp_path):
    done = _sweep(tmp_path, "hydra.launcher.dashboard=true", "hydra.launcher.dry_run=true")
    assert done.returncode == 0, done.stderr  # accepted (a dry run starts no Ray)


def test_a_local_ray_gets_token_mode_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    _unset_auth_mode(monkeypatch)
    fake = FakeRay(monkeypatch)
    sweep.connect(num_cpus=1)
    assert sweep.os.environ["RAY_AUTH_MODE"] == "token"  # Ray's default, said: no warning
    assert fake.reconfigured == [""]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    sweep.connect(num_cpus=1)
    assert sweep.os.environ["RAY_AUTH_MODE"] == "disabled" and fake.reconfigured == ["", ""]


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
    assert sweep._token_hint(_free_address(), AuthenticationError("no token found")) == sweep.TOKEN_HINT
    # a client without token mode, refused by a cluster that listens: authentication
    assert sweep._token_hint(listening, refused) == sweep.TOKEN_HINT
    # nothing listens there (a wrong address, a stopped cluster), or another kind of error: no hint
    assert sweep._token_hint(_free_address(), refused) == ""
    assert sweep._token_hint("ray://somewhere", refused) == ""
    assert sweep._token_hint(listening, ValueError("bad argument")) == ""
    # token mode was on: the token was sent, so a refusal is not its absence
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert sweep._token_hint(listening, refused) == ""


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


def test_stored_reads_a_failed_row_anywhere_and_files_of_other_writers(tmp_path, one_run_from_old_code):
    """A run is failed if any row is; a file written without statistics (another writer) reads
    the same."""
    out = tmp_path / "results"
    expected = results.stored(out)
    for path in results.run_files(out):
        pq.write_table(pq.read_table(path), path, write_statistics=False)
    assert results.stored(out) == expected
    failed = results.run_files(out)[1]
    table = pq.read_table(failed)
    status = pa.array(["finished"] * (table.num_rows - 1) + ["failed"], pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("status"), "status", status), failed)
    assert results.stored(out)[failed.stem].status == "failed"
