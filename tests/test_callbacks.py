"""Hydra's callbacks (`hydra.callbacks.<name>._target_=...`) hear of every run of a lab sweep in
the driver, wherever it trained (this process, forks, Ray, a search): on_job_start and on_job_end
once per run, with the run's config and its final exact evaluation as the JobReturn's
return_value; on_multirun_start and on_multirun_end around the sweep; nothing for runs skipped as
finished already. And `hydra.launcher.track=mlflow|tensorboard` exports each run as it is saved,
so that a later lab-export adds nothing."""

import json
import os
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from lab import results
from lab.analysis import export
from lab.results import columns
from lab.sweep import callbacks
from lab.config.compose import compose
from lab.config.jobs import job
from lab.knobs import ConfigError
from lab.run import lost, run
from sweeping import REPO, TINY, clean_env, cli, sweep

GRID = ["--multirun", "seed=0,1,2", *TINY, "eval_every=1", "results_dir=results", "hydra.launcher.figures=false"]


class Recorder(Callback):
    """A user's callback: one JSON line per call it hears of, into `path`."""

    def __init__(self, path: str):
        self.path = path

    def _write(self, **event) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(event) + "\n")

    def on_multirun_start(self, config, **kwargs) -> None:
        self._write(event="multirun_start", pid=os.getpid())

    def on_multirun_end(self, config, **kwargs) -> None:
        self._write(event="multirun_end", pid=os.getpid())

    def on_job_start(self, config, **kwargs) -> None:  # hydra.job.num/id are unset in Hydra's run mode
        num = OmegaConf.select(HydraConfig.get(), "job.num", default=None)
        self._write(event="job_start", pid=os.getpid(), seed=config.seed, num=num)

    def on_job_end(self, config, job_return, **kwargs) -> None:
        run_id = OmegaConf.select(HydraConfig.get(), "job.id", default=None)
        self._write(event="job_end", pid=os.getpid(), run_id=run_id, seed=job_return.cfg.seed,
                    overrides=list(job_return.overrides), status=job_return.status.name,
                    value=job_return.return_value)


def recording(path: Path) -> list[str]:
    return [f"+hydra.callbacks.recorder._target_={__name__}.Recorder", f"+hydra.callbacks.recorder.path={path}"]


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_heard_every_run_once(heard: list[dict], results_dir: Path, driver_pid: int | None = None) -> None:
    """multirun_start first, multirun_end last, and between them a job_start then at once its
    job_end for each run stored, in the driver, with the run's final evaluation."""
    assert heard[0]["event"] == "multirun_start" and heard[-1]["event"] == "multirun_end"
    jobs = heard[1:-1]
    assert [e["event"] for e in jobs] == ["job_start", "job_end"] * (len(jobs) // 2)
    ends = [e for e in jobs if e["event"] == "job_end"]
    assert [s["seed"] for s in jobs[::2]] == [e["seed"] for e in ends]
    assert len({e["pid"] for e in heard}) == 1 and (driver_pid is None or heard[0]["pid"] == driver_pid)
    final = results.runs(results.load(results_dir)).set_index("run_id")
    assert sorted(e["run_id"] for e in ends) == sorted(final.index)  # once per run
    for end in ends:
        assert end["status"] == "COMPLETED" and f"seed={end['seed']}" in end["overrides"]
        evaluated = {c: v for c, v in end["value"].items() if not c.endswith("_win_minus_loss")}
        assert evaluated and set(evaluated) <= {c for c, _ in columns.EVALUATION}
        for column, value in evaluated.items():
            assert value == pytest.approx(float(final.loc[end["run_id"], column]))
        for column, value in end["value"].items():  # the objective beside them (lab.analysis.export.final)
            if column.endswith("_win_minus_loss"):
                stem = column[:-len("win_minus_loss")]
                assert value == pytest.approx(evaluated[stem + "win"] - evaluated[stem + "loss"])


def test_callbacks_hear_every_run_trained_in_this_process_and_none_skipped(tmp_path):
    heard = tmp_path / "heard.jsonl"
    done = cli([*GRID, "hydra.launcher.parallel=false", *recording(heard)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert_heard_every_run_once(events(heard), tmp_path / "results", os.getpid())
    assert sorted(e["num"] for e in events(heard) if e["event"] == "job_start") == [0, 1, 2]  # hydra.job.num
    heard.unlink()
    again = cli([*GRID, "hydra.launcher.parallel=false", *recording(heard)], tmp_path)  # all finished: skipped
    assert again.returncode == 0 and "3 runs already finished" in again.stdout
    assert [e["event"] for e in events(heard)] == ["multirun_start", "multirun_end"]


def subprocess_env() -> dict:
    """The environment of a sweep in a subprocess that imports this module's Recorder."""
    paths = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", str(REPO))]
    return clean_env(PYTHONPATH=os.pathsep.join(paths))


@pytest.mark.integration
@pytest.mark.parametrize("parallel", ["processes", "true"])
def test_callbacks_hear_every_run_trained_in_forks_and_on_ray_in_the_driver(tmp_path, parallel):
    heard = tmp_path / "heard.jsonl"
    done = sweep([*GRID, f"hydra.launcher.parallel={parallel}", "hydra.launcher.num_cpus=2", *recording(heard)],
                 tmp_path, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    assert_heard_every_run_once(events(heard), tmp_path / "results")  # in one process: Hydra's driver


@pytest.mark.integration
def test_callbacks_hear_every_run_of_a_search(tmp_path):
    heard = tmp_path / "heard.jsonl"
    search = ["--multirun", "hydra/sweeper=search", "hydra.sweeper.num_samples=3", "hydra.sweeper.seeds=2",
              "hydra.sweeper.objective=onestep", "algorithm=q_table", "iterations=6", "episodes_per_update=20",
              "eval_every=3", "alpha=interval(0.01,1)", "hydra.launcher.num_cpus=2", "results_dir=results",
              "hydra.launcher.figures=false"]
    done = sweep([*search, *recording(heard)], tmp_path, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    heard_events = events(heard)
    assert_heard_every_run_once(heard_events, tmp_path / "results")
    assert sum(e["event"] == "job_end" for e in heard_events) == 6  # 3 trials x 2 seeds
    assert all(any(o.startswith("alpha=") for o in e["overrides"]) for e in heard_events if e["event"] == "job_end")


def test_hydra_run_mode_hands_the_run_final_evaluation_to_on_job_end_and_tracks_it(tmp_path):
    pytest.importorskip("tensorboardX", reason="the tracking extra")
    heard = tmp_path / "heard.jsonl"
    done = cli([*GRID[2:], "seed=4", "hydra.launcher.track=tensorboard", *recording(heard)], tmp_path)
    assert done.returncode == 0, done.stderr
    (end,) = [e for e in events(heard) if e["event"] == "job_end"]  # Hydra's own call, main's return value
    final = results.runs(results.load(tmp_path / "results")).iloc[0]
    assert end["value"]["eval_p2_onestep_win"] == pytest.approx(final.eval_p2_onestep_win)
    assert [p.name for p in (tmp_path / "results" / export.TENSORBOARD).iterdir()] == [f"mc_vfa-{final.run_id}"]


def test_a_failed_run_ends_as_hydra_ends_a_failed_job(tmp_path):
    failed = lost(job(compose(*TINY, f"results_dir={tmp_path}")), RuntimeError("a node died"))
    config = compose(*TINY)

    ret = callbacks.job_return(OmegaConf.create(config), OmegaConf.create({"hydra": {}}), ["seed=0"], failed)
    assert ret.status is JobStatus.FAILED and ret.cfg.seed == 0 and "hydra" not in ret.cfg
    with pytest.raises(RuntimeError, match="a node died"):
        ret.return_value  # noqa: B018 - Hydra's JobReturn raises a failed job's error


def test_a_finished_run_returns_its_last_exact_evaluation(tmp_path):
    result = run(job(compose(*TINY, "eval_every=2", f"results_dir={tmp_path}")))
    ret = callbacks.job_return(OmegaConf.create({"seed": 0}), OmegaConf.create({"hydra": {}}), [], result)
    last = result.rows.dropna(subset=["eval_p2_onestep_win"]).iloc[-1]
    assert ret.status is JobStatus.COMPLETED and ret.return_value["eval_p2_onestep_win"] == last.eval_p2_onestep_win
    assert all(key.startswith("eval_") for key in ret.return_value)


# ---- hydra.launcher.track -----------------------------------------------------------------------


def test_a_tracker_not_offered_is_refused_in_one_line_before_anything_runs(tmp_path):
    done = cli([*GRID, "hydra.launcher.track=wandb"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: hydra.launcher.track='wandb' is not allowed: mlflow, tensorboard "
                                   "or null (none)")
    assert not (tmp_path / "results").exists()
    with pytest.raises(ConfigError, match="hydra.launcher.track"):
        callbacks.Hooks(None, None, "MLflow")


@pytest.mark.integration  # MLflow runs `uname` when it creates a run
def test_tracked_runs_are_in_mlflow_as_lab_export_writes_them(tmp_path):
    mlflow = pytest.importorskip("mlflow", reason="the tracking extra")
    done = cli([*GRID, "hydra.launcher.parallel=false", "hydra.launcher.track=mlflow"], tmp_path)
    assert done.returncode == 0, done.stderr
    results_dir = tmp_path / "results"
    assert export.export(results_dir, "mlflow") == 0  # every run is there already
    mlflow.set_tracking_uri(f"sqlite:///{results_dir / export.MLFLOW / 'mlflow.db'}")
    found = mlflow.search_runs(experiment_names=["results"])
    runs = found[found[f"tags.{export.RUN_ID_TAG}"].notna()].set_index(f"tags.{export.RUN_ID_TAG}")
    final = results.runs(results.load(results_dir)).set_index("run_id")
    assert sorted(runs.index) == sorted(final.index)
    sweeps = found[found[f"tags.{export.RECORD_TAG}"].notna()]
    assert len(sweeps) == 1 and (runs["tags.mlflow.parentRunId"] == sweeps["run_id"].iloc[0]).all()
    for run_id, row in final.iterrows():
        assert runs.loc[run_id, "metrics.eval_p2_onestep_win"] == pytest.approx(row.eval_p2_onestep_win)
        assert runs.loc[run_id, "params.seed"] == str(row.seed)


def test_tracked_runs_are_in_tensorboard_as_lab_export_writes_them(tmp_path):
    pytest.importorskip("tensorboardX", reason="the tracking extra")
    done = cli([*GRID, "hydra.launcher.parallel=false", "hydra.launcher.track=tensorboard"], tmp_path)
    assert done.returncode == 0, done.stderr
    results_dir = tmp_path / "results"
    folders = sorted(p.name for p in (results_dir / export.TENSORBOARD).iterdir())
    assert folders == sorted(f"mc_vfa-{r}" for r in results.load(results_dir).run_id.unique())
    assert export.export(results_dir, "tensorboard") == 0
