"""The driver of big grids (`--driver`, issue 11): configurations planned per second, resuming a
finished grid, reading a results directory of thousands of runs, finished runs absorbed per second,
and the driver's memory as finished runs add up."""

import contextlib
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lab import results
from lab.bench.parallel import timed_sweep
from lab.results import columns
from lab.config.compose import grid
from lab.run import run

# A grid of one group choice over many seeds, of runs that take milliseconds.
DRIVER_GRID = ["algorithm=q_table", "opponent=random", "player=1", "episodes_per_update=10"]


def _driver_grid(seeds: int, results_dir, iterations: int = 2) -> list[str]:
    return [*DRIVER_GRID, f"iterations={iterations}", f"seed=range(0,{seeds})", f"results_dir={results_dir}"]


def planned(*overrides: str) -> list:
    """The jobs a sweep of this grid trains (planned against its results_dir)."""
    from lab import sweep  # the sweep's driver (~0.1 s of start-up): only the sections that drive one

    composer, jobs = grid(*overrides)
    return sweep.plan(composer(o) for o in jobs).train


def configurations_planned_per_second(seeds: int) -> float:
    """Configurations per second the driver composes, validates and checks against results_dir
    (an empty one), in this process; Hydra's expansion of the grid happens before the clock."""
    from lab import sweep  # the sweep's driver (~0.1 s of start-up): only the sections that drive one

    with tempfile.TemporaryDirectory() as out:
        composer, jobs = grid(*_driver_grid(seeds, out))
        start = time.perf_counter()
        sweep.plan(composer(o) for o in jobs)
        return seeds / (time.perf_counter() - start)


def _with_column(table: pa.Table, name: str, value) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array([value] * table.num_rows))


def write_finished_runs(seeds: int, results_dir) -> None:
    """The driver grid's runs, finished, in results_dir: one real run's rows under each run's id
    and seed (no checkpoints, which resuming does not read)."""
    jobs = planned(*_driver_grid(seeds, results_dir))
    rows = results.arrow_table(run(jobs[0]).rows)
    for job in jobs:
        table = _with_column(_with_column(rows, "run_id", job.run_id), "seed", job.run.seed)
        pq.write_table(table, Path(results_dir) / f"{job.run_id}.parquet")
    results.statuses(results_dir, write_index=True)  # as the sweep that trained them leaves it


def seconds_to_load(results_dir) -> float:
    start = time.perf_counter()
    results.load(results_dir)
    return time.perf_counter() - start


def driver_max_rss_mb(runs: int, out, parallel: str = "auto") -> float:
    """Peak RSS of the driver process (Ray's processes and forks apart) over a real sweep of `runs`
    200-iteration runs evaluated once (the driver sets the pace) into `out` on 2 CPUs; from VmHWM, as
    getrusage's ru_maxrss would count this process, which forked it."""
    prelude = ("import atexit, re\natexit.register(lambda: print('VmHWM', re.search(r'VmHWM:\\s*(\\d+)', "
               "open('/proc/self/status').read())[1]))")
    args = [*_driver_grid(runs, out, iterations=200), "eval_every=200", "hydra.launcher.num_cpus=2",
            f"hydra.launcher.parallel={parallel}"]
    output = timed_sweep(args, prelude)[2]
    return int(output.rsplit("VmHWM", 1)[1].split()[0]) / 1024


ABSORB_ROWS = 50
"""The absorption benchmark's runs: 50 rows each (a run evaluated 50 times, or of 50 updates)."""


def _packed_runs(runs: int, checkpoints: bool) -> tuple[list, list]:
    """`runs` jobs of the driver grid and a packed run for each, as workers hand them over: one real
    run's rows under each run's id, with its checkpoint or without."""
    with tempfile.TemporaryDirectory() as out:
        jobs = planned(*_driver_grid(runs, out, iterations=ABSORB_ROWS))
    model = results.pack([run(jobs[0])])[0]
    packs = []
    for job in jobs:
        table = _with_column(model.table, "run_id", job.run_id)
        packs.append(results.Packed(job.run_id, table, results.parquet_bytes(table),
                                    model.checkpoint if checkpoints else None))
    return jobs, packs


def runs_absorbed_per_second(jobs: list, packs: list, together: int, written: bool) -> float:
    """Finished runs per second the driver's Store (lab.sweep.store) takes in, `together` arriving
    at once (a worker's batch, or every batch a cluster finished meanwhile). `written`: the workers
    stored them (a shared results_dir), the driver only records them; else it commits them."""
    # the sweep's driver (~0.1 s of start-up): only the sections that drive one
    from lab.sweep import Progress
    from lab.sweep.store import Store

    runs = len(jobs)
    with tempfile.TemporaryDirectory() as out:
        jobs = [dataclasses.replace(job, results_dir=Path(out)) for job in jobs]
        if written:
            packs = [packed for i in range(0, runs, together)
                     for packed in results.commit(out, packs[i:i + together])]
        arrivals = [list(zip(jobs[i:i + together], packs[i:i + together])) for i in range(0, runs, together)]
        with open(os.devnull, "w") as quiet, contextlib.redirect_stderr(quiet):
            start = time.perf_counter()
            with Store(jobs, Progress(runs)) as store:
                for arrived in arrivals:
                    store.receive(arrived, running=0)
            seconds = time.perf_counter() - start
        assert len(store.done) == runs and len(results.run_files(out)) == runs
        return runs / seconds


def driver_section(quick: bool) -> None:
    seeds, loaded, runs = (1_000, 300, 300) if quick else (10_000, 3_000, 3_000)
    print(f"driver: {', '.join(DRIVER_GRID)}, seed=range(0,N)")
    print(f"  absorbing finished runs ({runs:,} of {ABSORB_ROWS} rows x {len(columns.schema())} columns; "
          "target 1,000 runs/s without checkpoints, 300 with):")
    for checkpoints in (False, True):
        jobs, packs = _packed_runs(runs, checkpoints)
        for together, what in ((13, "a batch at a time (2 cores)"), (1_300, "100 nodes' batches at once")):
            sent = runs_absorbed_per_second(jobs, packs, together, written=False)
            shared = runs_absorbed_per_second(jobs, packs, together, written=True)
            print(f"    {'with' if checkpoints else 'without'} checkpoints, {what}: {sent:,.0f} runs/s "
                  f"written by the driver, {shared:,.0f} runs/s stored by workers on a shared file system")
    rate = configurations_planned_per_second(seeds)
    print(f"  plan, validate, check results_dir: {rate:,.0f} configurations/s "
          f"({seeds:,} in {seeds / rate:.1f} s; target 10,000 in 5 s)")
    with tempfile.TemporaryDirectory() as out:
        write_finished_runs(seeds, out)
        # start-up, Hydra, composition, validation, reading results_dir, nothing to train
        _, seconds, output = timed_sweep(_driver_grid(seeds, out))
        assert f"{seeds} runs already finished" in output, output
        print(f"  resume a finished {seeds:,}-run grid (the whole command): {seconds:.1f} s (target 5 s)")
    with tempfile.TemporaryDirectory() as out:
        write_finished_runs(loaded, out)
        cold = seconds_to_load(out)
        print(f"  lab.results.load of {loaded:,} run files written without a sweep: {cold:.2f} s "
              f"the first time (every file read), {seconds_to_load(out):.2f} s again (from the index)")
    with tempfile.TemporaryDirectory() as small_out, tempfile.TemporaryDirectory() as out:
        small, big = driver_max_rss_mb(50, small_out), driver_max_rss_mb(runs, out)
        print(f"  driver peak RSS: 50 runs {small:.0f} MB, {runs:,} runs {big:.0f} MB: "
              f"{(big - small) / (runs - 50) * 1000:+.0f} MB per 1,000 finished runs (target: 3,000 "
              "runs within 150 MB of 50)")
        print(f"  lab.results.load of that sweep's {runs:,} runs of 200 rows (indexed as it saved "
              f"them): {seconds_to_load(out):.2f} s")
    with tempfile.TemporaryDirectory() as small_out, tempfile.TemporaryDirectory() as out:
        small, big = (driver_max_rss_mb(n, o, parallel="true") for n, o in ((50, small_out), (runs, out)))
        print(f"  the same on Ray (parallel=true): 50 runs {small:.0f} MB, {runs:,} runs {big:.0f} MB: "
              f"{(big - small) / (runs - 50) * 1000:+.0f} MB per 1,000 finished runs")
    with tempfile.TemporaryDirectory() as out:
        timed_sweep([*_driver_grid(loaded, out), "hydra.launcher.parallel=true"])
        print(f"  lab.results.load of a {loaded:,}-run sweep of the grid above (indexed as it saved "
              f"them): {seconds_to_load(out):.2f} s (target 3,000 in 2 s)")
