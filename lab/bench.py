"""Throughput benchmark: `python -m lab.bench [--quick]`.

Prints training episodes per second of every algorithm on a fixed configuration, the engine's own
limit (uniform-random games per second played in batches by the compiled kernel) measured in the
same process, and how much faster a 16-run sweep goes on 2 Ray workers than on 1. Compilation and
start-up are excluded: each measurement warms up first. Then the driver of big grids (`--driver`
alone): configurations planned per second, resuming a finished grid, reading a results directory
of thousands of runs, and the driver's memory as finished runs add up. And the parallel section
(`--parallel` alone): write-up 000's grid end to end from the shell on 1 core and on all (where
parallel=auto trains it, and on Ray), with the sweep's own utilisation and fixed cost, and the
speed-up they predict for 16 cores. And the search section (`--search` alone): the README's
q_table search through the lab's sweeper against the same search written with Optuna alone. And
the report section (`--report` alone): the end of a sweep over a finished 10,000-run grid of 2,500
configurations (figures, summary, report), timed, and the report's size. The cluster section (`--cluster` alone: root, SLURM and a
checkout of the lab) runs the parallel grid with the SLURM recipe on 2 nodes of 1 CPU against 1
node (namespaces on this machine, tests/cluster/cluster.sh).
"""

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lab import agents, config, game, opponents, results
from lab.compose import compose, grid

WRITEUP_000 = ["algorithm=mc_vfa", "epsilon=0", "epsilon_decay_per_update=1", "symmetry=false"]
"""mc_vfa as write-up 000's program runs it (greedy, no folding): the workload the benchmark's mc_vfa
figures have always measured, whatever the shipped defaults."""

# name -> (overrides, minimum seconds to measure); targets from issue 6.
# The learners at their seeds' knobs: the same workload whatever the shipped defaults.
CASES = {
    "mc_vfa": ([*WRITEUP_000, "opponent=onestep", "player=2", "layers=5", "neurons=16", "alpha=0.01",
                "episodes_per_update=100"], 50_000),
    "q_table": (["algorithm=q_table", "opponent=random", "player=1", "alpha=0.5",
                 "epsilon_decay_per_game=0.999", "episodes_per_update=10000"], 200_000),
    "td_value": (["algorithm=td_value", "opponent=random", "player=1", "alpha=0.1", "epsilon=0.1",
                  "draw_value=0", "episodes_per_update=10000"], 200_000),
    "negamax_q": (["algorithm=negamax_q", "opponent=random", "player=1", "episodes_per_update=10000"], 200_000),
    "q_net": (["algorithm=q_net", "opponent=random", "player=1", "episodes_per_update=100",
               "neurons=32", "alpha=0.3", "gamma=0.8", "epsilon_final=0.01", "epochs=10",
               "symmetry=false"], 20_000),
}


def engine_games_per_second(seconds: float) -> float:
    random = opponents.table("random")
    game.seed_kernels(0)
    game.play(1000, random, random)  # compile / warm up
    games, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        game.play(100_000, random, random)
        games += 100_000
    return games / (time.perf_counter() - start)


def training_episodes_per_second(overrides: list[str], seconds: float) -> float:
    run_cfg, knobs = config.parse(compose(*overrides))
    learner = agents.get(run_cfg.algorithm).Learner(knobs, run_cfg)
    learner.iterate()  # compile / warm up
    iterations, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        learner.iterate()
        iterations += 1
    return iterations * run_cfg.episodes_per_update / (time.perf_counter() - start)


def alphazero_seconds_to_never_losing(seed: int = 0) -> tuple[float, int]:
    """Training seconds (exact evaluations excluded) of alphazero's defaults in self-play until
    its agent first never loses as X or as O, and the iteration; (inf, -1) if it never does."""
    from lab import evaluate

    run_cfg, knobs = config.parse(compose("algorithm=alphazero", "opponent=self", f"seed={seed}"))
    learner = agents.get("alphazero").Learner(knobs, run_cfg)
    seconds = 0.0
    for iteration in range(1, run_cfg.iterations + 1):
        start = time.perf_counter()
        learner.iterate()
        seconds += time.perf_counter() - start
        moves = learner.agent().move_table()
        if all(evaluate.exact(moves, player)["never_loses"] for player in (1, 2)):
            return seconds, iteration
    return float("inf"), -1


def evaluation_point_ms(overrides: list[str], iterations: int = 5, repeats: int = 300) -> float:
    """Median milliseconds of one exact evaluation point of a run, move_table() + exact() (what
    lab.run does every eval_every iterations), for an agent trained `iterations` iterations."""
    from lab import evaluate

    job = config.job(compose(*overrides))
    learner = job.algorithm.Learner(job.knobs, job.run)
    for _ in range(iterations):
        learner.iterate()
    agent = learner.agent()
    times = []
    for _ in range(repeats + 10):  # the first 10 warm up (compilation, caches)
        start = time.perf_counter()
        evaluate.exact(agent.move_table(job.run.player), job.run.player)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[10:])


def evaluation_points() -> str:
    """The evaluation-point line of the benchmark; targets from issue 16."""
    mc_vfa_ms = evaluation_point_ms([*WRITEUP_000, "layers=5", "neurons=32"])
    q_table_ms = evaluation_point_ms(["algorithm=q_table", "episodes_per_update=1000"])
    return (f"evaluation point: mc_vfa 5x32 {mc_vfa_ms:.2f} ms (target 1.5), "
            f"q_table {q_table_ms:.2f} ms (target 0.5)")


def sweep_seconds(workers: int, iterations: int) -> float:
    """Wall time of a 16-run mc_vfa sweep on an embedded Ray with `workers` CPUs, after warm-up
    runs have started the worker processes (Ray's start-up is the same for any grid).

    A run of 1000 iterations (full mode, 100,000 games) takes about 1.5 s of training and exact
    evaluations, against some 15 ms of result writing by the driver and less for scheduling, so
    the speed-up measures the runs (the driver and Ray's own processes still share the 2 cores);
    the 20 iterations of --quick only check that the sweep works."""
    import ray

    from lab import sweep

    def jobs(seeds, results_dir):
        cfgs = [compose(*WRITEUP_000, f"seed={s}", f"iterations={iterations}", "episodes_per_update=100",
                               "layers=2", "neurons=8", f"results_dir={results_dir}") for s in seeds]
        return sweep.plan(cfgs)[0]

    sweep.connect(num_cpus=workers)
    try:
        # the sweep's progress lines would bury the table
        with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as out, \
                contextlib.redirect_stderr(io.StringIO()):
            sweep.execute(jobs(range(100, 100 + workers), warm), parallel=True)
            grid = jobs(range(16), out)  # composing 16 configs is the same serial work either way
            start = time.perf_counter()
            sweep.execute(grid, parallel=True)
            return time.perf_counter() - start
    finally:
        ray.shutdown()


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


# The report of a big grid (issue 24): 10,000 finished runs, written as one real run's rows each.
REPORT_GRID = ["algorithm=q_table", "opponent=random", "player=1", "episodes_per_update=10", "iterations=100",
               "eval_every=2", "alpha=" + ",".join(f"{0.04 * i:.2f}" for i in range(1, 26)),
               "epsilon=" + ",".join(f"{0.1 * i:.1f}" for i in range(1, 11)),
               "epsilon_decay_per_game=" + ",".join(f"{1 - 10 ** -(2 + i / 3):.6f}" for i in range(10))]
"""25 alphas x 10 epsilons x 10 decays = 2,500 configurations, 4 seeds each, 100 iterations with
50 exact evaluations: 1,000,000 rows."""


def write_finished_grid(seeds: int, results_dir) -> int:
    """REPORT_GRID's runs, all finished, in results_dir: one real run's rows under each run's id
    and knobs, its win rates scaled by a share drawn per run (peaking at alpha 0.5; seeded) so
    that configurations and seeds differ. Returns how many runs it wrote."""
    import numpy as np

    from lab import evaluate, sweep
    from lab.run import run

    composer, jobs = grid(*REPORT_GRID, f"seed=range(0,{seeds})", f"results_dir={results_dir}")
    planned = sweep.plan(composer(o) for o in jobs).train
    rows = run(planned[0]).rows
    rng = np.random.default_rng(0)
    for job in planned:
        knobs = {key: getattr(job.knobs, key) for key in ("alpha", "epsilon", "epsilon_decay_per_game")}
        share = rng.uniform(0.6, 1.0) * (1 - abs(knobs["alpha"] - 0.5))
        table = rows.assign(run_id=job.run_id, seed=job.run.seed, **knobs)
        for vs in evaluate.OPPONENTS:
            win, draw = evaluate.column(1, f"{vs}_win"), evaluate.column(1, f"{vs}_draw")
            table[draw] += table[win] * (1 - share)
            table[win] *= share
        table["p1_win_rate"] *= share
        pq.write_table(results.arrow_table(table), Path(results_dir) / f"{job.run_id}.parquet")
    results.load(results_dir)  # indexes the table, as the sweep that trained them leaves it
    return len(planned)


def report_section(quick: bool) -> None:
    """The end of a sweep over a 10,000-run grid: its figures, summary and report, timed."""
    from lab import report

    if not report.has_extra():
        print(f"report: {report.EXTRA_NOTE}")
        return
    seeds = 1 if quick else 4
    with tempfile.TemporaryDirectory() as out:
        runs = write_finished_grid(seeds, out)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            report.analyse(out)
        seconds = time.perf_counter() - start
        size = (Path(out) / report.REPORT / "index.html").stat().st_size / 1e6
        print(f"report: the end of a {runs:,}-run sweep (2,500 configurations, 100 rows each): figures, "
              f"summary and report in {seconds:.1f} s (target 30 s); the report {size:.1f} MB (target 20 MB)")


# Every core busy (issue 16): write-up 000's grid (one memory mode: 64 runs over 4 seeds), end to end.
PARALLEL_GRID = ["+sweeps=writeup_mc_vfa", "memory=clear", "seed=range(0,4)"]


def _timed_sweep(args: list[str]) -> tuple[float, float, str]:
    """When the command started (epoch seconds), its wall time from the shell, and the sweep's
    `cores:` line."""
    epoch, start = time.time(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lab.sweep", "--multirun", *args,
                           "hydra.launcher.figures=false"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"the sweep failed:\n{done.stderr}")
    return epoch, seconds, done.stdout.rsplit("cores: ", 1)[-1].strip()


def longest_first_makespan(seconds: list[float], cores: int) -> float:
    """When the last of these runs ends if each goes, longest first, to the first free core."""
    free = [0.0] * cores
    for length in sorted(seconds, reverse=True):
        free[free.index(min(free))] += length
    return max(free)


def ray_ready_seconds(cores: int) -> float:
    """Seconds from starting a local Ray until a worker has imported the lab (lab.run) and can
    train: the least a sweep on a Ray it starts takes, whatever its forks train meanwhile."""
    script = ("import time\nfrom lab import run, sweep\nimport ray\nstart = time.perf_counter()\n"
              f"sweep.connect(num_cpus={cores})\n"
              "ray.get(ray.remote(run.run_batch).remote([], {}))\n"
              "print(time.perf_counter() - start)\nsweep.disconnect()")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def auto_mode(args: list[str], cores: int) -> str:
    """Where parallel=auto would train the grid on `cores` cores (lab.sweep.mode), from the
    sweep's dry run."""
    done = subprocess.run([sys.executable, "-m", "lab.sweep", "--multirun", *args, "hydra.launcher.dry_run=true",
                           f"hydra.launcher.num_cpus={cores}"], capture_output=True, text=True, check=True)
    return ("processes" if "forks of this process" in done.stdout else
            "driver" if "training them in this process" in done.stdout else "ray")


def parallel_section(quick: bool) -> None:
    import os

    iterations = ["iterations=50"] if quick else []
    most = os.cpu_count() or 1
    print(f"parallel: python -m lab.sweep --multirun {' '.join(PARALLEL_GRID + iterations)}, end to end")
    with tempfile.TemporaryDirectory() as out:  # a fresh install's first sweep compiles the kernels
        _timed_sweep([*PARALLEL_GRID, "iterations=1", f"results_dir={out}"])
    with tempfile.TemporaryDirectory() as out:
        _, seconds, line = _timed_sweep([*PARALLEL_GRID, "iterations=1", f"results_dir={out}"])
        print(f"  the same grid at iterations=1: {seconds:.1f} s (target 5 s); {line}")
    walls, run_walls, outside = {}, {}, {}
    on_ray = f"{most} cores, parallel=true"
    cases = {"1 core": (1, "auto"), f"{most} cores": (most, "auto"), on_ray: (most, "true")}
    for name, (cores, parallel) in cases.items():
        with tempfile.TemporaryDirectory() as out:
            epoch, walls[name], line = _timed_sweep([
                *PARALLEL_GRID, *iterations, f"results_dir={out}", f"hydra.launcher.num_cpus={cores}",
                f"hydra.launcher.parallel={parallel}"])
            runs = results.runs(results.load(out))
        run_walls[name] = list(runs["wall_seconds"])
        ended = runs["finished_utc"].map(lambda t: t.timestamp())
        # the command's time outside every run: before the first began, after the last ended
        outside[name] = (min(ended - runs["wall_seconds"]) - epoch) + (epoch + walls[name] - max(ended))
        where = {"driver": "in its own process", "processes": f"in {cores} forks", "ray": "on Ray"}[
            auto_mode([*PARALLEL_GRID, *iterations], cores) if parallel == "auto" else "ray"]
        print(f"  {name} ({where}): {walls[name]:.1f} s; {line}")
    if most > 1:
        print(f"  speed-up at {most} cores: {walls['1 core'] / walls[f'{most} cores']:.2f}x (target 1.8x at 2 "
              f"cores, utilisation 85%); on Ray: {walls['1 core'] / walls[on_ray]:.2f}x")
    # 16 cores, from the measured pieces. Amdahl: the time outside the runs plus the 1-core run
    # times spread over 16 cores, longest first (forks take the longest first, as Ray does). On a
    # Ray it starts, the sweep also cannot end before Ray is ready.
    spread = longest_first_makespan(run_walls["1 core"], 16)
    if auto_mode([*PARALLEL_GRID, *iterations], 16) == "ray":
        ready = ray_ready_seconds(most)
        predicted = outside[on_ray] + max(spread, ready)
        how = f"on Ray: {outside[on_ray]:.1f} s outside the runs plus the later of the runs " \
              f"spread longest first ({spread:.1f} s) and Ray's start ({ready:.1f} s)"
    else:
        predicted = outside[f"{most} cores"] + spread
        how = f"in 16 forks: {outside[f'{most} cores']:.1f} s outside the runs plus the runs spread longest " \
              f"first ({spread:.1f} s)"
    print(f"  predicted on 16 cores: {predicted:.1f} s, {walls['1 core'] / predicted:.1f}x the 1-core run "
          f"(goal 8x), {how}")


# The search (issue 22): the README's q_table search through the lab's sweeper, against the same
# search written with Optuna alone over lab.run, as a user would.
SEARCH_SPACE = ["algorithm=q_table", "opponent=onestep", "player=2", "alpha=tag(log,interval(0.01,1))",
                "epsilon_decay=interval(0.99,0.99999)"]
SEARCH_SETTINGS = ["hydra.sweeper.num_samples=64", "hydra.sweeper.search=tpe", "hydra.sweeper.scheduler=asha",
                   "hydra.sweeper.objective=onestep"]
"""Successive halving from 111 iterations (the default grace period, iterations / 9), reduction factor 3"""


def plain_optuna(seed: int, trials: int = 64, processes: int | None = None) -> tuple[float, int]:
    """The README's search with Optuna alone: TPE and successive halving (ASHA) over lab.run.run,
    `processes` worker processes (default: one per core) sharing a journal file; the best value,
    and the training episodes of all trials."""
    import multiprocessing
    import os

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    processes = processes or os.cpu_count() or 1
    base = compose("algorithm=q_table", "opponent=onestep", "player=2", "results_dir=unused")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "journal.log")
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
        study = optuna.create_study(study_name="plain", storage=storage, direction="maximize")
        workers = [multiprocessing.Process(target=_plain_optuna_worker,
                                           args=(path, base, 1000 * seed + i, trials // processes + (i < trials % processes)))
                   for i in range(processes)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return study.best_value, sum(t.last_step * base["episodes_per_update"] for t in study.trials if t.last_step)


def _plain_optuna_worker(path: str, base: dict, seed: int, trials: int) -> None:
    import optuna

    from lab.run import run

    def objective(trial):
        job = config.job({**base, "alpha": trial.suggest_float("alpha", 0.01, 1, log=True),
                          "epsilon_decay_per_game": trial.suggest_float("epsilon_decay_per_game", 0.99, 0.99999)})

        def report(iteration, rows, learner):
            trial.report(rows[-1]["eval_p2_onestep_win"] - rows[-1]["eval_p2_onestep_loss"], iteration)
            return trial.should_prune()

        result = run(job, report=report)
        if result.stopped:
            raise optuna.TrialPruned()
        last = result.rows.iloc[-1]
        return last["eval_p2_onestep_win"] - last["eval_p2_onestep_loss"]

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
    study = optuna.load_study(study_name="plain", storage=storage, sampler=optuna.samplers.TPESampler(seed=seed),
                              pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=111, reduction_factor=3))
    study.optimize(objective, n_trials=trials)


def _timed(args: list[str]) -> tuple[float, str]:
    """Wall time of a command from the shell, and its output."""
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args[:4])} failed:\n{done.stderr}")
    return time.perf_counter() - start, done.stdout


def lab_search(seed: int, extra=()) -> tuple[float, float, int, str]:
    """The README's search through the lab's sweeper (figures off, as plain Optuna draws none):
    wall time from the shell, best objective, training episodes, the `cores:` line."""
    with tempfile.TemporaryDirectory() as out:
        seconds, output = _timed([sys.executable, "-m", "lab.sweep", "--multirun", "hydra/sweeper=search",
                                  *SEARCH_SETTINGS, *SEARCH_SPACE, f"hydra.sweeper.seed={seed}", *extra,
                                  "hydra.launcher.figures=false", f"results_dir={out}"])
    best = float(output.split("best: objective ", 1)[1].split()[0])
    episodes = int(output.split(" training episodes in all")[0].rsplit(" ", 1)[1].replace(",", ""))
    return seconds, best, episodes, output.rsplit("cores: ", 1)[1].splitlines()[0]


def search_section(quick: bool) -> None:
    import os

    cores = os.cpu_count() or 1
    seeds = [0] if quick else [0, 1, 2]
    print(f"search: the README's q_table search, {' '.join(SEARCH_SPACE[:3])}, 64 configurations, TPE, "
          f"successive halving from 111 iterations (factor 3), objective against onestep; {cores} cores")
    with tempfile.TemporaryDirectory() as out:  # untimed: compiles the kernels a fresh install has not
        subprocess.run([sys.executable, "-m", "lab.sweep", *SEARCH_SPACE[:3], "iterations=1", f"results_dir={out}"],
                       capture_output=True, check=True)
    print(f"  {'search seed':<12}{'lab':>9}{'plain Optuna':>14}{'ratio':>8}   best objective: lab / plain Optuna; "
          "training episodes: lab / plain Optuna")
    lab, plain = [], []
    for seed in seeds:  # alternated, in the same conditions
        seconds, best, episodes, _ = lab_search(seed)
        plain_seconds, plain_output = _timed([sys.executable, "-c",
                                              f"from lab import bench; print(*bench.plain_optuna({seed}))"])
        plain_best, plain_episodes = plain_output.split()[-2:]
        lab.append(seconds)
        plain.append(plain_seconds)
        print(f"  {seed:<12}{seconds:>7.1f} s{plain_seconds:>12.1f} s{seconds / plain_seconds:>7.2f}x   "
              f"{best:.4f} / {float(plain_best):.4f}; {episodes:,} / {int(plain_episodes):,}")
    lab_median, plain_median = statistics.median(lab), statistics.median(plain)
    print(f"  median: lab {lab_median:.1f} s, plain Optuna {plain_median:.1f} s: {lab_median / plain_median:.2f}x "
          "(target at most 1.5x)")
    seconds, best, _, line = lab_search(0, ["hydra.sweeper.seeds=3"])
    print(f"  the same search with seeds=3 (each configuration on seeds 0-2, objective their mean): {seconds:.1f} s, "
          f"best {best:.4f}; {line}")


# Two nodes against one (issue 25): the parallel section's grid sbatch'ed with the SLURM recipe on
# a cluster of namespace nodes of 1 CPU each on this machine (tests/cluster/cluster.sh).
CLUSTER_SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "cluster" / "cluster.sh"


def cluster_unavailable() -> str | None:
    """Why the cluster section cannot run here, or None."""
    import os
    import shutil

    if not CLUSTER_SCRIPT.exists():
        return f"it needs the repository's {CLUSTER_SCRIPT.relative_to(CLUSTER_SCRIPT.parents[2])} (a checkout of the lab)"
    if os.geteuid() != 0:
        return "it needs root (network namespaces and SLURM's daemons)"
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        return "it needs SLURM and munge: apt-get install slurm-wlm munge"
    return None


def cores_line(log: str) -> tuple[float, str]:
    """The sweep's own wall time and its `cores:` line, from a sweep's output."""
    line = log.rsplit("cores: ", 1)[1].splitlines()[0]
    return float(line.split(" busy over ", 1)[1].split(" s;", 1)[0]), line


def slurm_sweep_seconds(cluster: Path, nodes: int, args: list[str], log: Path) -> tuple[float, float, str]:
    """`sbatch --nodes=N sweeps/cluster/slurm.sbatch ARGS` from the login node of the namespace
    cluster in `cluster`: the job's wall time from submission until it left the queue (Ray's
    start and stop included; squeue asked every 0.2 s, as sbatch --wait asks ever more rarely),
    the sweep's own and its `cores:` line."""
    import os

    def on_ctl(*command) -> str:
        return subprocess.run(["bash", CLUSTER_SCRIPT, "on", cluster, "ctl", *command], cwd=CLUSTER_SCRIPT.parents[2],
                              env={**os.environ, "LAB_VENV": sys.prefix}, capture_output=True, text=True,
                              check=True).stdout.strip()

    start = time.perf_counter()
    job = on_ctl("sbatch", "--parsable", f"--nodes={nodes}", f"--output={log}", "sweeps/cluster/slurm.sbatch",
                 *args, "hydra.launcher.figures=false").split(";")[0]
    while on_ctl("squeue", "-h", "-j", job):
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    output = log.read_text()
    if "cores: " not in output:
        raise RuntimeError(f"the job failed:\n{output[-3000:]}")
    return (seconds, *cores_line(output))


def cluster_section(quick: bool) -> None:
    reason = cluster_unavailable()
    if reason:
        print(f"cluster: not measured: {reason}")
        return
    grid = [*PARALLEL_GRID, *(["iterations=50"] if quick else [])]
    print(f"cluster: sbatch --nodes=N sweeps/cluster/slurm.sbatch {' '.join(grid)}, on SLURM nodes of "
          "1 CPU each (tests/cluster/cluster.sh: namespaces sharing this machine's cores)")
    with tempfile.TemporaryDirectory() as out:  # a fresh install's first sweep compiles the kernels
        _timed_sweep([*PARALLEL_GRID, "iterations=1", f"results_dir={out}"])
    with tempfile.TemporaryDirectory(prefix="labbench", dir="/tmp") as out:  # short: Ray's socket paths
        cluster = Path(out) / "c"
        Path(out).chmod(0o755)  # munged wants every folder above its socket open to all
        subprocess.run(["bash", CLUSTER_SCRIPT, "up", cluster, "2"], check=True)
        walls = {}
        try:
            for nodes in (1, 2):
                job, walls[nodes], line = slurm_sweep_seconds(
                    cluster, nodes, [*grid, f"results_dir={out}/results{nodes}"], Path(out) / f"job{nodes}.log")
                print(f"  {nodes} node{'s' * (nodes > 1)}: the sweep {walls[nodes]:.1f} s, the job {job:.1f} s "
                      f"(with Ray's start); {line}")
        finally:
            subprocess.run(["bash", CLUSTER_SCRIPT, "down", cluster], check=True)
    print(f"  speed-up with 2 nodes: {walls[1] / walls[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, for CI smoke use")
    parser.add_argument("--driver", action="store_true", help="only the driver section")
    parser.add_argument("--parallel", action="store_true", help="only the parallel section")
    parser.add_argument("--search", action="store_true", help="only the search section")
    parser.add_argument("--report", action="store_true", help="only the report section")
    parser.add_argument("--cluster", action="store_true",
                        help="only the cluster section: 2 SLURM nodes against 1 (root, SLURM, a checkout)")
    args = parser.parse_args()
    seconds = 0.5 if args.quick else 5.0
    only = [section for flag, section in ((args.driver, driver_section), (args.parallel, parallel_section),
                                          (args.search, search_section), (args.report, report_section),
                                          (args.cluster, cluster_section)) if flag]
    if only:
        for section in only:
            section(args.quick)
        return

    print(f"{'what':<34}{'per second':>14}{'target':>12}")
    rate = engine_games_per_second(seconds)
    print(f"{'engine: random games, batched':<34}{rate:>14,.0f}{1_000_000:>12,}")
    for name, (overrides, target) in CASES.items():
        rate = training_episodes_per_second(overrides, seconds)
        print(f"{name + ': training episodes':<34}{rate:>14,.0f}{target:>12,}")

    print(evaluation_points())

    if not args.quick:
        seconds, iteration = alphazero_seconds_to_never_losing()
        print(f"alphazero: from scratch to never losing as X and O: {seconds:.1f} s of training "
              f"(iteration {iteration}; target 180 s)")

    iterations = 20 if args.quick else 1000
    serial, parallel = sweep_seconds(1, iterations), sweep_seconds(2, iterations)
    print(f"16-run sweep ({iterations} iterations each): 1 worker {serial:.1f} s, "
          f"2 workers {parallel:.1f} s, speed-up {serial / parallel:.2f} (target 1.8)")
    parallel_section(args.quick)
    driver_section(args.quick)
    search_section(args.quick)
    report_section(args.quick)


if __name__ == "__main__":
    main()
