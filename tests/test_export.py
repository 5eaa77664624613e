"""`lab-export RESULTS_DIR --to mlflow|tensorboard`: a real sweep's runs as MLflow runs (read back
with MLflow's own API) and TensorBoard event files (read back with TensorBoard's own reader,
HParams included); a second export adds nothing; a run's status, knobs and final evaluation
survive the trip."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import results
from lab.analysis import export
from lab.config.jobs import job
from lab.config.compose import compose
from lab.run import lost
from sweeping import TINY, cli

mlflow = pytest.importorskip("mlflow", reason="the tracking extra: pip install -e '.[tracking]'")
ITERATIONS = 20


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The smoke sweep, short, plus one failed run saved beside it (trained by no sweep)."""
    cwd = tmp_path_factory.mktemp("export")
    done = cli(["+sweeps=smoke", f"iterations={ITERATIONS}", "eval_every=5", "results_dir=smoke",
                "hydra.launcher.parallel=false", "hydra.launcher.figures=false"], cwd)
    assert done.returncode == 0, done.stderr
    failed = job(compose(*TINY, f"results_dir={cwd / 'smoke'}"))
    results.commit(cwd / "smoke", results.pack([lost(failed, RuntimeError("a node died"))]))
    return cwd / "smoke", failed.run_id


def test_mlflow_holds_every_run_with_its_knobs_and_final_evaluation(swept):
    results_dir, failed = swept
    assert export.export(results_dir, "mlflow") == 5
    assert export.export(results_dir, "mlflow") == 0  # runs exported before are kept, not repeated
    mlflow.set_tracking_uri(f"sqlite:///{results_dir / export.MLFLOW / 'mlflow.db'}")
    found = mlflow.search_runs(experiment_names=[results_dir.name])
    lab_runs = found[found[f"tags.{export.RUN_ID_TAG}"].notna()].set_index(f"tags.{export.RUN_ID_TAG}")
    sweeps = found[found[f"tags.{export.RECORD_TAG}"].notna()]
    table = results.load(results_dir)
    assert set(lab_runs.index) == set(table.run_id) and len(sweeps) == 1
    assert lab_runs.loc[failed, "status"] == "FAILED" and "a node died" in lab_runs.loc[failed, "tags.error"]
    trained = lab_runs.drop(index=failed)
    assert (trained["status"] == "FINISHED").all()
    assert (trained["tags.mlflow.parentRunId"] == sweeps["run_id"].iloc[0]).all()  # under its sweep
    assert pd_isna(lab_runs.loc[failed, "tags.mlflow.parentRunId"])  # saved by no sweep
    runs = results.runs(table).set_index("run_id").drop(index=failed)
    for run_id, run in runs.iterrows():
        assert trained.loc[run_id, "params.layers"] == str(run.layers)
        assert trained.loc[run_id, "params.seed"] == str(run.seed)
        assert trained.loc[run_id, "metrics.eval_p2_onestep_win"] == pytest.approx(run.eval_p2_onestep_win)
    client = mlflow.tracking.MlflowClient()
    one = trained.index[0]
    history = client.get_metric_history(trained.loc[one, "run_id"], "p2_win_rate")
    curve = table[table.run_id == one].sort_values("iteration")
    assert [m.step for m in history] == curve.episodes.tolist()
    assert [m.value for m in history] == pytest.approx(curve.p2_win_rate.tolist())
    artifacts = [a.path for a in client.list_artifacts(trained.loc[one, "run_id"])]
    assert artifacts == [f"{one}.npz"]


@pytest.mark.integration
def test_thousands_of_runs_go_out_from_several_processes(swept, tmp_path, monkeypatch):
    results_dir, _ = swept
    monkeypatch.setattr(export, "PER_WORKER", 2)  # 5 runs: 2 worker processes
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert export.export(results_dir, "mlflow", uri=uri, experiment="parallel") == 5
    mlflow.set_tracking_uri(uri)
    found = mlflow.search_runs(experiment_names=["parallel"])
    assert found[f"tags.{export.RUN_ID_TAG}"].dropna().sort_values().tolist() == \
        sorted(results.load(results_dir).run_id.unique())


@pytest.mark.integration
def test_a_run_trained_again_is_exported_again(swept, tmp_path):
    """A run trained again (force=true; a search's stopped run trained in full) replaces its export
    in either tracker, once; the others are kept (it kept the first version: "0 runs exported")."""
    results_dir, logdir = tmp_path / "smoke", tmp_path / "tensorboard"
    shutil.copytree(swept[0], results_dir, ignore=shutil.ignore_patterns(export.MLFLOW, export.TENSORBOARD))
    assert export.export(results_dir, "mlflow") == 5 and export.export(results_dir, "tensorboard", str(logdir)) == 5
    done = cli(["+sweeps=smoke", f"iterations={ITERATIONS}", "eval_every=5", f"results_dir={results_dir}", "+net=l2_n8",
                "seed=0", "force=true", "hydra.launcher.parallel=false", "hydra.launcher.figures=false"], tmp_path)
    assert done.returncode == 0 and "1 run finished" in done.stdout, done.stdout + done.stderr
    for to, uri in (("mlflow", None), ("tensorboard", str(logdir))):
        assert export.export(results_dir, to, uri) == 1
        assert export.export(results_dir, to, uri) == 0
    mlflow.set_tracking_uri(f"sqlite:///{results_dir / export.MLFLOW / 'mlflow.db'}")
    exported = mlflow.search_runs(experiment_names=[results_dir.name])[f"tags.{export.RUN_ID_TAG}"].dropna()
    assert sorted(exported) == sorted(results.load(results_dir).run_id.unique())  # the first version deleted
    assert len(list(logdir.iterdir())) == 5


def test_tensorboard_reads_the_curves_and_the_hparams(swept, tmp_path):
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    results_dir, failed = swept
    assert export.export(results_dir, "tensorboard", uri=str(tmp_path)) == 5
    assert export.export(results_dir, "tensorboard", uri=str(tmp_path)) == 0
    table = results.load(results_dir)
    run = table[table.run_id != failed].sort_values("iteration")
    run = run[run.run_id == run.run_id.iloc[0]]
    folder = tmp_path / f"mc_vfa-{run.run_id.iloc[0]}"
    events = event_accumulator.EventAccumulator(str(folder), size_guidance={event_accumulator.SCALARS: 0})
    events.Reload()
    curve = events.Scalars("train/p2_win_rate")
    assert [e.step for e in curve] == run.episodes.tolist()
    assert [e.value for e in curve] == pytest.approx(run.p2_win_rate.tolist(), abs=1e-6)
    assert [e.step for e in events.Scalars("eval/eval_p2_onestep_win")] == run.episodes[run.iteration % 5 == 0].tolist()
    plugin = {tag: plugin_data_pb2.HParamsPluginData.FromString(content)
              for tag, content in events.PluginTagToContent("hparams").items()}
    session = plugin["_hparams_/session_start_info"].session_start_info.hparams
    assert session["layers"].number_value == run.layers.iloc[0] and session["memory"].string_value == "clear"
    experiment = plugin["_hparams_/experiment"].experiment
    assert "final/eval_p2_onestep_win" in {m.name.tag for m in experiment.metric_infos}
    final = events.Scalars("final/eval_p2_onestep_win")[-1].value
    assert final == pytest.approx(run.eval_p2_onestep_win.dropna().iloc[-1], abs=1e-6)
    # the summary's objective, win - loss, is a metric to sort the HParams table by
    assert "final/eval_p2_onestep_win_minus_loss" in {m.name.tag for m in experiment.metric_infos}
    score = events.Scalars("final/eval_p2_onestep_win_minus_loss")[-1].value
    assert score == pytest.approx(run.eval_p2_onestep_win.dropna().iloc[-1] - run.eval_p2_onestep_loss.dropna().iloc[-1], abs=1e-6)


@pytest.mark.integration
def test_mlflow_ui_shows_the_exported_runs_in_headless_chromium(swept, tmp_path):
    """`mlflow server` on an export, its runs page in Chromium: the sweep's run, and under it each
    lab run by name once the sweep's row is expanded; the count of runs."""
    import browser as chromium

    if chromium.CHROMIUM is None:
        pytest.fail("the browser test needs Debian's chromium (apt-get install chromium)")
    results_dir, failed = swept
    uri = f"sqlite:///{tmp_path / 'ui.db'}"
    assert export.export(results_dir, "mlflow", uri=uri, experiment="ui") == 5
    mlflow.set_tracking_uri(uri)
    experiment = mlflow.get_experiment_by_name("ui").experiment_id
    names = [f"mc_vfa-{run_id}" for run_id in results.load(results_dir).run_id.unique()]
    with mlflow_server(uri, tmp_path / "server.log") as port, chromium.Browser(loopback=f"127.0.0.1:{port}") as b:
        b.open(f"http://127.0.0.1:{port}/#/experiments/{experiment}/runs")
        deadline = time.monotonic() + 90
        while not all(name in (text := b.run("document.body.innerText")) for name in names):
            assert time.monotonic() < deadline, f"the runs page never listed every run: {text[-1500:]}"
            if "sweep " in text:  # the lab's runs are nested under their sweep's: expand it
                b.run("document.querySelector('[role=gridcell] button')?.click()")
            time.sleep(1)
        assert f"{len(names) + 1} matching runs" in text  # and the sweep's own


@contextlib.contextmanager
def mlflow_server(uri: str, log: Path):
    """`mlflow server` on the store at `uri`, on a free loopback port (yielded) once it listens;
    stopped with its workers after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host",
                                   "127.0.0.1", "--port", str(port), "--workers", "1"],
                                  stdout=out, stderr=out, start_new_session=True)
    try:
        deadline = time.monotonic() + 180  # some 25 s on a loaded 2-core machine
        while True:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # its session: the server and its uvicorn
        server.wait(timeout=30)


def test_an_export_prints_its_line_not_mlflows_log_of_a_new_store(swept, tmp_path, monkeypatch, capsys):
    """MLflow logs at INFO as it creates a store ("Creating initial MLflow database tables..."): left out."""
    copy = shutil.copytree(swept[0], tmp_path / "smoke", ignore=shutil.ignore_patterns(export.MLFLOW))
    monkeypatch.setattr(sys, "argv", ["lab-export", str(copy), "--to", "mlflow"])
    export.main()
    out, err = capsys.readouterr()
    assert out.startswith("5 runs exported to mlflow") and err == ""


def test_a_missing_extra_or_target_is_one_line(swept, monkeypatch, capsys):
    results_dir, _ = swept
    with pytest.raises(ValueError, match="--to 'wandb' is not allowed: mlflow or tensorboard"):
        export.export(results_dir, "wandb")
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)  # as if mlflow were not installed
    monkeypatch.setattr(sys, "argv", ["lab-export", str(results_dir), "--to", "mlflow"])
    with pytest.raises(SystemExit) as stop:
        export.main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1
    assert "needs the tracking extra" in err and "pip install -e '.[tracking]'" in err


def pd_isna(value) -> bool:
    import pandas as pd

    return pd.isna(value)
