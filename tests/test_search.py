"""hydra/sweeper=search for real, from the shell (lab.search): a small ASHA search whose stopped
trials are run tables with status `stopped`, an interrupted search resumed by the same command to
the same trials and rows as one never interrupted, population-based training whose tables show
the exploited and mutated knobs per iteration, and the cores a search of longer trials keeps
busy. Each search is q_table at a tiny size."""

import json
import os
import re
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from lab import results
from lab.results import columns
from lab.search import outcome, study
from lab.search.trial import PBT_TRIAL
from sweeping import clean_env, command, rows, sweep

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ITERATIONS = 60
TINY_SEARCH = ["--multirun", "hydra/sweeper=search", "hydra.sweeper.objective=onestep", "algorithm=q_table",
               "opponent=onestep", "player=2", f"iterations={ITERATIONS}", "episodes_per_update=50",
               "eval_every=6", "alpha=tag(log,interval(0.01,1))", "epsilon_decay=interval(0.99,0.9999)",
               "hydra.launcher.num_cpus=2"]
ASHA = [*TINY_SEARCH, "hydra.sweeper.num_samples=6", "hydra.sweeper.scheduler=asha",
        "hydra.sweeper.grace_period=6", "hydra.sweeper.max_concurrent=1"]
"""One trial at a time: ASHA's decisions then depend on the trials' results only, not on timing"""


@pytest.fixture(scope="module")
def asha(tmp_path_factory):
    """The ASHA search, never interrupted: (its results_dir, the completed process)."""
    cwd = tmp_path_factory.mktemp("asha")
    done = sweep([*ASHA, "results_dir=results"], cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return cwd / "results", done


def test_asha_writes_every_trial_as_a_run_and_stopped_ones_keep_their_rows(asha):
    results_dir, done = asha
    table = results.load(results_dir)
    assert list(pd.read_parquet(results_dir).columns) == columns.schema().names  # the one schema
    trials = study.load(results_dir).get_trials()
    assert len(trials) == 6 and {t.user_attrs["runs"][0] for t in trials} == set(table["run_id"])
    status = table.groupby("run_id")["status"].agg(lambda s: set(s))
    assert all(len(s) == 1 for s in status)  # one status per run
    status = status.map(lambda s: s.pop())
    last = table.groupby("run_id")["iteration"].max()
    assert (status == "stopped").sum() >= 2, status  # 6 trials, reduction factor 3
    assert (last[status == "finished"] == ITERATIONS).all()
    assert (last[status == "stopped"] < ITERATIONS).all()
    for run_id in status.index:  # every iteration it trained, from the first
        assert list(table[table.run_id == run_id]["iteration"]) == list(range(1, last[run_id] + 1))
    stopped = status[status == "stopped"].index
    assert not any((results_dir / results.CHECKPOINTS / f"{r}.npz").exists() for r in stopped)
    assert f"6 trials: {(status == 'finished').sum()} finished, {len(stopped)} stopped early, 0 failed" in done.stdout

    # the best configuration: printed, and a config file that composes into the best run again
    best = yaml.safe_load((results_dir / results.SEARCH / outcome.BEST).read_text())
    finals = table[table.iteration == ITERATIONS].set_index("run_id")
    score = finals["eval_p2_onestep_win"] - finals["eval_p2_onestep_loss"]
    top = finals.loc[score.idxmax()]
    assert best["alpha"] == pytest.approx(top["alpha"]) and best["player"] == 2 and "seed" not in best
    assert best["defaults"] == [{"override /algorithm": "q_table"}, {"override /opponent": "onestep"}]
    assert f"best: objective {score.max():.4f}" in done.stdout
    drawn = re.search(r"search figures in \S+: (.*)", done.stdout)[1].split(", ")
    assert drawn == ["objective.png", "knobs.png", "q_table_exact_ttt_player2.png"]
    assert all((results_dir / results.SEARCH / name).stat().st_size > 0 for name in drawn)
    assert not (results_dir / results.FIGURES).exists()  # a search draws the search, not every run


def test_an_interrupted_search_resumes_to_the_same_trials(asha, tmp_path):
    reference, _ = asha
    args = [*ASHA, "results_dir=results", "hydra.launcher.figures=false"]
    log = open(tmp_path / "first.log", "w+")
    proc = subprocess.Popen(command(args), cwd=tmp_path, env=clean_env(), stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(results.run_files(tmp_path / "results")) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "no two trials ended"
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log.seek(0)
    output = log.read()
    log.close()
    assert "interrupted:" in output and "the same command resumes the search" in output, output
    assert output.count("\n", output.index("interrupted:")) == 1  # one line
    ended = [t for t in study.load(tmp_path / "results").get_trials() if t.state.is_finished()]
    assert 2 <= len(ended) < 6

    again = sweep(args, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming the interrupted search" in again.stdout
    assert not {f"trial {t.number} " for t in ended} & set(re.findall(r"trial \d+ ", again.stderr))  # none retrained
    # The same seed gives the same trials, ASHA the same decisions (its rung records are in
    # Optuna's storage), and the trial in progress, trained again, the rows it would have had.
    key = ["run_id", "iteration"]
    pd.testing.assert_frame_equal(rows(tmp_path / "results").sort_values(key).reset_index(drop=True),
                                  rows(reference).sort_values(key).reset_index(drop=True))

    other = sweep([*args, "hydra.sweeper.seed=1"], cwd=tmp_path)
    assert other.returncode == 2 and "holds another search: hydra.sweeper.seed=1 (it had 0)" in other.stderr


def test_pbt_tables_show_the_exploited_and_mutated_knobs_per_iteration(tmp_path):
    done = sweep([*TINY_SEARCH, "iterations=36", "hydra.sweeper.num_samples=4", "hydra.sweeper.scheduler=pbt",
                  "hydra.sweeper.perturbation_interval=12", "results_dir=results",
                  "hydra.launcher.figures=false"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    table = results.load(tmp_path / "results")
    assert table["run_id"].nunique() == 4 and (table["status"] == "finished").all()
    assert table.groupby("run_id")["iteration"].apply(list).map(lambda i: i == list(range(1, 37))).all()
    assert set(table[PBT_TRIAL]) <= {"0", "1", "2", "3"}
    exploits = 0
    for run_id, run in table.groupby("run_id"):
        changed = run[PBT_TRIAL].ne(run[PBT_TRIAL].shift()) & (run["iteration"] > 1)
        for _, row in run[changed].iterrows():
            exploits += 1
            before = run[run.iteration == row.iteration - 1].iloc[0]
            assert (row.iteration - 1) % 12 == 0  # at a perturbation step
            # the exploiting member trains on with mutated knobs
            assert (row["alpha"], row["epsilon_decay_per_game"]) != (before["alpha"], before["epsilon_decay_per_game"])
    assert exploits >= 2  # at 12 and 24 the worst of 4 exploits one of the best (36 is the end)
    assert table["epsilon_decay_per_game"].between(0.99, 0.9999).all()  # explored within the space
    saved = json.loads((tmp_path / "results" / results.SEARCH / "search.json").read_text())
    assert saved["settings"]["scheduler"] == "pbt"


def test_an_interrupted_pbt_search_resumes_from_its_last_generation(tmp_path):
    args = [*TINY_SEARCH, "iterations=36", "hydra.sweeper.num_samples=4", "hydra.sweeper.scheduler=pbt",
            "hydra.sweeper.perturbation_interval=12", "hydra.sweeper.seeds=2", "hydra.launcher.figures=false"]
    whole = sweep([*args, "results_dir=whole"], cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    # stop after the first generation: its state is written, then its trainers are killed
    prelude = ("import os, signal\nfrom lab.search import pbt\nstore = pbt.Evolve._store\n"
               "def stop(self, *a):\n    store(self, *a)\n    os.kill(os.getpid(), signal.SIGINT)\n"
               "pbt.Evolve._store = stop")
    first = sweep([*args, "results_dir=parts"], cwd=tmp_path, prelude=prelude)
    assert first.returncode == 130 and "interrupted:" in first.stderr
    assert not results.run_files(tmp_path / "parts")
    again = sweep([*args, "results_dir=parts"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    key = ["run_id", "iteration"]
    pd.testing.assert_frame_equal(rows(tmp_path / "parts").sort_values(key).reset_index(drop=True),
                                  rows(tmp_path / "whole").sort_values(key).reset_index(drop=True))


def test_trials_of_ten_seconds_keep_the_cores_busy(tmp_path):
    """4 trials of about 10 s each (q_table, 30,000,000 episodes, evaluated 50 times) on 2 cores."""
    done = sweep(["--multirun", "hydra/sweeper=search", "hydra.sweeper.num_samples=4", "algorithm=q_table",
                  "iterations=300", "episodes_per_update=100000", "alpha=interval(0.1,0.5)",
                  "hydra.launcher.num_cpus=2", "hydra.launcher.figures=false", "results_dir=results"],
                 cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    busy = int(re.search(r"cores: (\d+)% of 2 cores busy", done.stdout)[1])
    assert busy >= 90, done.stdout


def test_a_fork_that_dies_fails_its_trial_and_the_others_train_on(tmp_path):
    prelude = ("import os\nfrom lab.search import trial\nstart = trial.Trainer.start\n"
               "def dying(self, task):\n    if task.number == 1:\n        os._exit(3)\n    return start(self, task)\n"
               "trial.Trainer.start = dying")
    done = sweep([*TINY_SEARCH, "hydra.sweeper.num_samples=4", "results_dir=results", "hydra.launcher.figures=false"],
                 cwd=tmp_path, prelude=prelude)
    assert done.returncode == 1, done.stderr  # a configuration failed
    trials = {t.number: t for t in study.load(tmp_path / "results").get_trials()}
    assert [trials[n].state.name for n in range(4)] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert trials[1].user_attrs["error"] == "the fork training it died (exit code 3)"
    assert results.statuses(tmp_path / "results")[trials[1].user_attrs["runs"][0]] == "failed"  # a grid re-trains it
    assert "4 trials: 3 finished, 0 stopped early, 1 failed" in done.stdout


def test_when_every_fork_died_the_driver_trains_the_other_trials(tmp_path):
    """As a grid does (lab.execution.workers.Forks' fallback): the trials the dead forks held fail, lost
    (the search exits 1, the machine's fault), and the rest train in the driver."""
    prelude = ("import os\nfrom lab.search import trial\nstart, DRIVER = trial.Trainer.start, os.getpid()\n"
               "def dying(self, task):\n    if os.getpid() != DRIVER:\n        os._exit(3)\n"
               "    return start(self, task)\ntrial.Trainer.start = dying")
    done = sweep([*TINY_SEARCH, "hydra.sweeper.num_samples=4", "results_dir=results", "hydra.launcher.figures=false"],
                 cwd=tmp_path, prelude=prelude)
    assert done.returncode == 1, done.stderr
    trials = {t.number: t for t in study.load(tmp_path / "results").get_trials()}
    assert [trials[n].state.name for n in range(4)] == ["FAIL", "FAIL", "COMPLETE", "COMPLETE"]
    assert {trials[n].user_attrs["error"] for n in (0, 1)} == {"the fork training it died (exit code 3)"}
    assert "4 trials: 2 finished, 0 stopped early, 2 failed" in done.stdout


def test_a_pbt_member_whose_fork_died_fails_and_the_population_trains_on(tmp_path):
    prelude = ("import os\nfrom lab.search import trial\nstart = trial.Trainer.start\n"
               "def dying(self, task):\n    if task.member == '1':\n        os._exit(3)\n"
               "    return start(self, task)\ntrial.Trainer.start = dying")
    done = sweep([*TINY_SEARCH, "iterations=36", "hydra.sweeper.num_samples=4", "hydra.sweeper.scheduler=pbt",
                  "hydra.sweeper.perturbation_interval=12", "results_dir=results", "hydra.launcher.figures=false"],
                 cwd=tmp_path, prelude=prelude)
    assert done.returncode == 1, done.stderr  # a worker died: the machine's fault
    assert "4 trials: 3 finished, 0 stopped early, 1 failed" in done.stdout
    assert "the fork training it died (exit code 3)" in done.stdout
    table = results.load(tmp_path / "results")
    assert table.groupby("run_id")["status"].first().value_counts().to_dict() == {"finished": 3, "failed": 1}


def test_the_search_draws_and_reports_in_another_process_than_its_driver(tmp_path):
    # what is drawn at the end (matplotlib, plotly, the runs read back) would stay in the
    # driver's memory to its end: issue 22's 1,000-trial search within 300 MB needs it elsewhere
    prelude = ("import atexit, sys\natexit.register(lambda: print('DRIVER IMPORTED', sorted(m for m in "
               "('matplotlib', 'plotly') if m in sys.modules)))")
    done = sweep([*TINY_SEARCH, "hydra.sweeper.num_samples=3", "results_dir=results"], cwd=tmp_path, prelude=prelude)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DRIVER IMPORTED []" in done.stdout
    assert "search figures in" in done.stdout and (tmp_path / "results" / results.SEARCH / "knobs.png").exists()
    assert f"report in {tmp_path / 'results' / '_report' / 'index.html'}" in done.stdout


def test_a_search_runs_on_a_bigger_board(tmp_path):
    """Issue 26: the search works on every game: its trials are 4x4 runs, evaluated exactly."""
    done = sweep(["--multirun", "hydra/sweeper=search", "hydra.sweeper.num_samples=2",
                  "hydra.sweeper.objective=random", "game=mnk_4_4_4", "algorithm=q_net", "opponent=random",
                  "player=1", "iterations=20", "eval_every=10", "alpha=interval(0.05,0.2)",
                  "hydra.launcher.parallel=false", "results_dir=results"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    trained = rows(tmp_path / "results")
    assert trained["run_id"].nunique() == 2 and (trained[["m", "n", "k"]] == 4).all().all()
    assert set(trained["evaluation"].dropna()) == {"exact"}
    best = yaml.safe_load((tmp_path / "results" / "_search" / "best.yaml").read_text())
    assert best["m"] == 4 and {"override /algorithm": "q_net"} in best["defaults"]
