"""The throughput section, in process (lab.bench), with the time of an exact evaluation point and
alphazero's time to never losing."""

import contextlib
import io
import statistics
import tempfile
import time

from lab import agents, game
from lab.config import jobs
from lab.evaluation import evaluate
from lab.game import opponents
from lab.config.compose import compose

WRITEUP_000 = ["algorithm=mc_vfa", "epsilon=0", "epsilon_decay_per_update=1", "symmetry=false"]
"""mc_vfa as write-up 000's program runs it (greedy, no folding): the workload the benchmark's mc_vfa
figures have always measured, whatever the shipped defaults."""

# name -> (overrides, target episodes per second, from issue 6); the learners at their seeds' knobs:
# the same workload whatever the shipped defaults.
CASES = {
    "mc_vfa": ([*WRITEUP_000, "opponent=onestep", "player=2", "layers=5", "neurons=16", "alpha=0.01",
                "episodes_per_update=100"], 50_000),
    "q_table": (["algorithm=q_table", "opponent=random", "player=1", "alpha=0.5",
                 "epsilon_decay_per_game=0.999", "episodes_per_update=10000"], 200_000),
    "td_value": (["algorithm=td_value", "opponent=random", "player=1", "alpha=0.1", "epsilon=0.1",
                  "draw_value=0", "episodes_per_update=10000"], 200_000),
    "negamax_q": (["algorithm=negamax_q", "opponent=random", "player=1", "episodes_per_update=10000"], 200_000),
    "q_net": (["algorithm=q_net", "opponent=random", "player=1", "episodes_per_update=100",
               "neurons=32", "alpha=0.3", "gamma=0.8", "loss_reward=-1", "epsilon_final=0.01", "epochs=10",
               "symmetry=false"], 20_000),
}


def per_second(step, seconds: float) -> float:
    """Calls of step() per second over `seconds`, after a first call (compilation, warm-up)."""
    step()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        calls += 1
    return calls / (time.perf_counter() - start)


def engine_games_per_second(seconds: float) -> float:
    random = opponents.table("random")
    game.seed_kernels(0)
    return 100_000 * per_second(lambda: game.play(100_000, random, random), seconds)


def training_episodes_per_second(overrides: list[str], seconds: float) -> float:
    run_cfg, knobs = jobs.parse(compose(*overrides))
    learner = agents.get(run_cfg.algorithm).Learner(knobs, run_cfg)
    return run_cfg.episodes_per_update * per_second(learner.iterate, seconds)


def alphazero_seconds_to_never_losing() -> tuple[float, int]:
    """Training seconds (exact evaluations excluded) of alphazero's defaults in self-play until its
    agent first never loses as X or as O, and the iteration; (inf, -1) if it never does."""
    run_cfg, knobs = jobs.parse(compose("algorithm=alphazero", "opponent=self"))
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
    job = jobs.job(compose(*overrides))
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


def sweep_seconds(workers: int, iterations: int) -> float:
    """Wall time of a 16-run mc_vfa sweep on an embedded Ray with `workers` CPUs, after warm-up runs
    started the worker processes. A run of 1000 iterations takes about 1.5 s, against some 15 ms of
    writing by the driver, so the speed-up measures the runs; --quick's 20 only check the sweep."""
    # Ray and the sweep's driver: only this measurement needs them (~0.4 s of start-up)
    import ray
    from lab import sweep

    def mc_vfa_jobs(seeds, results_dir):
        cfgs = [compose(*WRITEUP_000, f"seed={s}", f"iterations={iterations}", "episodes_per_update=100",
                               "layers=2", "neurons=8", f"results_dir={results_dir}") for s in seeds]
        return sweep.plan(cfgs)[0]

    sweep.connect(num_cpus=workers)
    try:
        # the sweep's progress lines would bury the table
        with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as out, \
                contextlib.redirect_stderr(io.StringIO()):
            sweep.execute(mc_vfa_jobs(range(100, 100 + workers), warm), parallel=True)
            grid = mc_vfa_jobs(range(16), out)  # composing 16 configs is the same serial work either way
            start = time.perf_counter()
            sweep.execute(grid, parallel=True)
            return time.perf_counter() - start
    finally:
        ray.shutdown()


def throughput_section(quick: bool) -> None:
    seconds = 0.5 if quick else 5.0
    print(f"{'what':<34}{'per second':>14}{'target':>12}")
    rate = engine_games_per_second(seconds)
    print(f"{'engine: random games, batched':<34}{rate:>14,.0f}{1_000_000:>12,}")
    for name, (overrides, target) in CASES.items():
        rate = training_episodes_per_second(overrides, seconds)
        print(f"{name + ': training episodes':<34}{rate:>14,.0f}{target:>12,}")

    mc_vfa_ms = evaluation_point_ms([*WRITEUP_000, "layers=5", "neurons=32"])
    q_table_ms = evaluation_point_ms(["algorithm=q_table", "episodes_per_update=1000"])
    print(f"evaluation point: mc_vfa 5x32 {mc_vfa_ms:.2f} ms (target 1.5), "
          f"q_table {q_table_ms:.2f} ms (target 0.5)")  # targets from issue 16

    if not quick:
        seconds, iteration = alphazero_seconds_to_never_losing()
        print(f"alphazero: from scratch to never losing as X and O: {seconds:.1f} s of training "
              f"(iteration {iteration}; target 180 s)")

    iterations = 20 if quick else 1000
    serial, parallel = sweep_seconds(1, iterations), sweep_seconds(2, iterations)
    print(f"16-run sweep ({iterations} iterations each): 1 worker {serial:.1f} s, "
          f"2 workers {parallel:.1f} s, speed-up {serial / parallel:.2f} (target 1.8)")
