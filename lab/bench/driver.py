"""The driver of big grids (`--driver`): configurations planned per second, resuming a finished
grid, reading a results directory of thousands of runs, and the driver's memory as finished runs
add up."""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lab import results
from lab.compose import grid

# The driver (issue 11): a grid of one group choice over many seeds, of runs that take milliseconds.
DRIVER_GRID = ["algorithm=q_table", "opponent=random", "player=1", "episodes_per_update=10"]


def _driver_grid(seeds: int, results_dir, iterations: int = 2) -> list[str]:
    return [*DRIVER_GRID, f"iterations={iterations}", f"seed=range(0,{seeds})", f"results_dir={results_dir}"]


def configurations_planned_per_second(seeds: int) -> float:
    """Configurations per second the driver composes, validates and checks against results_dir
    (an empty one), in this process; Hydra's expansion of the grid happens before the clock."""
    from lab import sweep

    with tempfile.TemporaryDirectory() as out:
        composer, jobs = grid(*_driver_grid(seeds, out))
        start = time.perf_counter()
        sweep.plan(composer(o) for o in jobs)
        return seeds / (time.perf_counter() - start)


def write_finished_runs(seeds: int, results_dir) -> None:
    """The driver grid's runs, all finished, written straight into results_dir: the rows of one
    real run under each run's id and seed (no checkpoints, which resuming does not read)."""
    from lab import sweep
    from lab.run import run

    composer, jobs = grid(*_driver_grid(seeds, results_dir))
    planned = sweep.plan(composer(o) for o in jobs).train
    rows = results.arrow_table(run(planned[0]).rows)
    for job in planned:
        table = rows.set_column(rows.schema.get_field_index("run_id"), "run_id",
                                pa.array([job.run_id] * rows.num_rows))
        table = table.set_column(table.schema.get_field_index("seed"), "seed",
                                 pa.array([job.run.seed] * rows.num_rows))
        pq.write_table(table, Path(results_dir) / f"{job.run_id}.parquet")
    results.statuses(results_dir, write_index=True)  # as the sweep that trained them leaves it


def _sweep_command(args: list[str], prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}\nimport runpy\nrunpy.run_module('lab.sweep', run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code, "--multirun", *args, "hydra.launcher.figures=false"],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the sweep failed:\n{done.stderr}")
    return done


def seconds_to_resume(seeds: int, results_dir) -> float:
    """Wall time of the real command over a results_dir that holds every run finished: start-up,
    Hydra, composition, validation, reading results_dir, nothing to train."""
    start = time.perf_counter()
    done = _sweep_command(_driver_grid(seeds, results_dir))
    assert f"{seeds} runs already finished" in done.stdout, done.stdout
    return time.perf_counter() - start


def seconds_to_load(results_dir) -> float:
    start = time.perf_counter()
    results.load(results_dir)
    return time.perf_counter() - start


def driver_max_rss_mb(runs: int, out, num_cpus: int = 2, parallel: str = "auto") -> float:
    """Peak RSS of the driver process (Ray's processes and forks apart) over a real sweep of
    `runs` 200-iteration runs into `out` (evaluated once, so that the driver, not the runs, sets
    the pace). Read from VmHWM: getrusage's ru_maxrss would count the memory of this process,
    which forked it."""
    prelude = ("import atexit, re\natexit.register(lambda: print('VmHWM', re.search(r'VmHWM:\\s*(\\d+)', "
               "open('/proc/self/status').read())[1]))")
    args = [*_driver_grid(runs, out, iterations=200), "eval_every=200", f"hydra.launcher.num_cpus={num_cpus}",
            f"hydra.launcher.parallel={parallel}"]
    done = _sweep_command(args, prelude)
    return int(done.stdout.rsplit("VmHWM", 1)[1].split()[0]) / 1024


def driver_section(quick: bool) -> None:
    seeds, loaded, runs = (1_000, 300, 300) if quick else (10_000, 3_000, 3_000)
    print(f"driver: {', '.join(DRIVER_GRID)}, seed=range(0,N)")
    rate = configurations_planned_per_second(seeds)
    print(f"  plan, validate, check results_dir: {rate:,.0f} configurations/s "
          f"({seeds:,} in {seeds / rate:.1f} s; target 10,000 in 5 s)")
    with tempfile.TemporaryDirectory() as out:
        write_finished_runs(seeds, out)
        print(f"  resume a finished {seeds:,}-run grid (the whole command): "
              f"{seconds_to_resume(seeds, out):.1f} s (target 5 s)")
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
        _sweep_command([*_driver_grid(loaded, out), "hydra.launcher.parallel=true"])
        print(f"  lab.results.load of a {loaded:,}-run sweep of the grid above (indexed as it saved "
              f"them): {seconds_to_load(out):.2f} s (target 3,000 in 2 s)")
