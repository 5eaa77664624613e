"""Scheduling (lab.sweep.dispatch) and the timing a run and a sweep report about themselves."""

import pytest

from lab import results, sweep
from lab.sweep import dispatch
from lab.execution import workers
from lab.results import columns
from lab.execution.batch import Trainer
from lab.config.compose import compose, grid
from lab.config.jobs import job
from lab.run import run
from sweeping import TINY, TINY_RUNS


def _job(*overrides):
    return job(compose(*overrides))


def _jobs(*overrides):
    """The jobs of a grid (composed once for all, as the sweep does)."""
    composer, jobs = grid(*overrides)
    return [job(composer(o)) for o in jobs]


def test_a_run_reports_where_its_time_went():
    rows = run(_job(*TINY, "iterations=6", "eval_every=2")).rows
    evaluated = rows[evaluate_column := "eval_p2_random_win"].notna()
    assert list(evaluated) == [False, True] * 3
    assert rows["train_seconds"].is_monotonic_increasing and rows["train_seconds"].iloc[0] > 0
    # evaluation time grows only at the evaluated iterations
    grew = rows["eval_seconds"].diff().fillna(rows["eval_seconds"].iloc[0]) > 0
    assert list(grew) == list(rows[evaluate_column].notna())
    for column in ("startup_seconds", "wall_seconds"):  # one value per run
        assert rows[column].nunique() == 1
    last = rows.iloc[-1]
    assert last["wall_seconds"] >= last["train_seconds"] + last["eval_seconds"] + last["startup_seconds"]
    assert set(columns.CIRCUMSTANCES) >= {"train_seconds", "eval_seconds", "startup_seconds", "wall_seconds"}


def test_costs_order_runs_by_their_work():
    table, small_net, big_net = (_job("algorithm=q_table"), _job("algorithm=mc_vfa", "+net=l2_n8"),
                                 _job("algorithm=mc_vfa", "+net=l5_n32"))
    assert dispatch.cost(table) < dispatch.cost(small_net) < dispatch.cost(big_net)
    assert dispatch.cost(_job("algorithm=q_table", "iterations=2000")) > 1.5 * dispatch.cost(table)
    search = _job("algorithm=alphazero")
    assert dispatch.cost(search) > dispatch.cost(_job("algorithm=alphazero", "simulations=10"))
    grid = [table, big_net, search, small_net]
    assert [j for b in dispatch.batches(grid, cores=1) for j in b] == [search, big_net, small_net, table]


def test_every_algorithm_has_a_positive_cost():
    for algorithm, knobs in TINY_RUNS.items():
        assert dispatch.cost(_job(f"algorithm={algorithm}", *knobs)) > 0


def test_short_runs_travel_together_and_long_ones_alone():
    short = _jobs(*TINY, "seed=range(0,40)")
    long = _jobs("algorithm=mc_vfa", "+net=l5_n32", "seed=range(0,3)")
    batches = list(dispatch.batches(short + long, cores=2))
    assert [job for batch in batches for job in batch] == sorted(short + long, key=dispatch.cost,
                                                                  reverse=True)
    assert batches[:3] == [[j] for j in long]  # each long run is a task of its own, first
    rest = batches[3:]
    assert 1 < len(rest) < len(short)  # the short runs are batched ...
    assert all(sum(map(dispatch.cost, b[:-1])) < dispatch.TASK_SECONDS for b in rest)  # ... to about a task's worth


def test_a_small_grid_keeps_every_core_busy():
    # a grid whose whole work is less than TASKS_PER_CORE tasks' worth still gives each core several
    short = _jobs(*TINY, "seed=range(0,16)")
    assert len(list(dispatch.batches(short, cores=2))) >= 2 * dispatch.TASKS_PER_CORE


def test_batches_give_the_rows_of_one_task_per_run():
    jobs = [_job(*TINY, f"seed={s}") for s in range(3)]
    together = Trainer({}).train(jobs)
    for job_, packed in zip(jobs, together):
        alone = results.table_of(run(job_, code={}).records).drop_columns(list(columns.CIRCUMSTANCES))
        assert packed.table.drop_columns(list(columns.CIRCUMSTANCES)).equals(alone)


def test_auto_trains_by_the_predicted_work_per_core(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    tiny = [_job(*TINY, f"seed={s}") for s in range(4)]
    mid = [_job(f"seed={s}") for s in range(4)]  # mc_vfa's defaults: about 2.6 s each
    big = [_job(f"seed={s}") for s in range(40)]
    assert sum(map(dispatch.cost, tiny)) < sweep.FORK_SECONDS
    assert 2 * sweep.RAY_START_SECONDS < sum(map(dispatch.cost, mid)) < sweep.RAY_WORTH_SECONDS
    assert sum(map(dispatch.cost, big)) > 2 * sweep.RAY_WORTH_SECONDS
    assert sweep.mode(tiny, "auto", num_cpus=8) == "driver"  # too little to spread
    assert sweep.mode(big, "auto", num_cpus=1) == "driver"  # one core
    assert sweep.mode(mid, "auto", num_cpus=2) == "processes"  # done sooner than Ray would pay
    assert sweep.mode(big, "auto", num_cpus=2) == "ray"  # Ray's start: under a tenth of the work
    assert sweep.mode(big, "auto", num_cpus=16) == "processes"
    assert sweep.mode(tiny, "auto", address="10.0.0.1:6379") == "ray"  # a cluster was asked for
    assert sweep.mode(tiny, True) == "ray" and sweep.mode(big, False) == "driver"
    assert sweep.mode(tiny, "processes") == "processes"


def test_the_sweep_reports_core_utilisation_and_fixed_cost():
    # two cores, 10 s of sweep; runs of 6 s and 8 s that ran from t=1 to t=9
    outcomes = [sweep.Outcome("a", False, None, 6.0, 1007.0), sweep.Outcome("b", False, None, 8.0, 1009.0)]
    line = sweep.Execution(outcomes, cores=2, seconds=10.0).efficiency()
    assert line == ("70% of 2 cores busy over 10.0 s; fixed cost 2.0 s (planning, starting workers, saving); "
                    "88% busy while runs trained")
    # the forks warmed up for 1 s each before their first run: busy, but not while runs trained
    line = sweep.Execution(outcomes, cores=2, seconds=10.0, warm_up=2.0).efficiency()
    assert line.startswith("80% of 2 cores busy over 10.0 s; fixed cost 2.0 s") and line.endswith("88% busy while runs trained")


def test_the_summary_says_how_many_runs_were_retried_after_a_lost_node(capsys):
    outcomes = [sweep.Outcome(run_id, False, None, 1.0, 1001.0) for run_id in "abc"]
    sweep.report([], sweep.Execution(outcomes, cores=2, seconds=2.0, retried=2))
    assert "3 runs finished, 0 failed, 2 retried after their worker or node was lost\n" in capsys.readouterr().out
    sweep.report([], sweep.Execution(outcomes[:1], cores=2, seconds=2.0))
    assert "1 run finished, 0 failed\n" in capsys.readouterr().out  # no jobs: no folder to name


def test_only_calls_lost_with_their_actor_worker_or_node_are_retried():
    from ray import exceptions

    lost = [exceptions.ActorDiedError(), exceptions.WorkerCrashedError(), exceptions.NodeDiedError("node gone"),
            exceptions.ObjectLostError("0" * 56, "owner", "call site"), exceptions.OutOfMemoryError("killed")]
    assert all(map(workers.lost_with_its_node, lost))
    not_lost = [exceptions.TaskCancelledError(), exceptions.RuntimeEnvSetupError("no pip"), ValueError("a bug")]
    assert not any(map(workers.lost_with_its_node, not_lost))


def test_serial_execution_runs_longest_first(tmp_path):
    jobs = [_job(*TINY, f"iterations={i}", f"results_dir={tmp_path}") for i in (2, 9, 5)]
    done = sweep.execute(jobs, parallel=False).done
    assert [o.run_id for o in done] == [jobs[1].run_id, jobs[2].run_id, jobs[0].run_id]


@pytest.mark.parametrize("value", ["sometimes", 2])
def test_parallel_takes_true_processes_false_or_auto(value, capsys):
    with pytest.raises(SystemExit) as stop:
        sweep.launch(None, None, [], parallel=value)
    assert stop.value.code == 2
    assert (f"hydra.launcher.parallel={value!r} is not allowed: true (Ray), processes (forks of this "
            "process, no Ray), false (this process) or auto") in capsys.readouterr().err
