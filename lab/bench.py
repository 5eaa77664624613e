"""Throughput benchmark: `python -m lab.bench [--quick]`.

Prints training episodes per second of every algorithm on a fixed configuration, the engine's own
limit (uniform-random games per second played in batches by the compiled kernel) measured in the
same process, and how much faster a 16-run sweep goes on 2 Ray workers than on 1. Compilation and
start-up are excluded: each measurement warms up first.
"""

import argparse
import contextlib
import io
import statistics
import tempfile
import time

from lab import agents, config, game, opponents
from lab.compose import compose

# name -> (overrides, minimum seconds to measure); targets from issue 6.
CASES = {
    "mc_vfa": (["algorithm=mc_vfa", "opponent=onestep", "player=2", "layers=5", "neurons=16",
                "alpha=0.01", "episodes_per_update=100"], 50_000),
    **{name: ([f"algorithm={name}", "opponent=random", "player=1", "episodes_per_update=10000"],
              200_000) for name in ("q_table", "td_value", "negamax_q")},
    "q_net": (["algorithm=q_net", "opponent=random", "player=1", "episodes_per_update=100"], 20_000),
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

    run_cfg, knobs = config.parse(config.compose(*overrides))
    learner = agents.module(run_cfg.algorithm).Learner(knobs, run_cfg)
    for _ in range(iterations):
        learner.iterate()
    agent = learner.agent()
    times = []
    for _ in range(repeats + 10):  # the first 10 warm up (compilation, caches)
        start = time.perf_counter()
        evaluate.exact(agent.move_table(), run_cfg.player)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[10:])


def evaluation_points() -> str:
    """The evaluation-point line of the benchmark; targets from issue 16."""
    mc_vfa_ms = evaluation_point_ms(["algorithm=mc_vfa", "layers=5", "neurons=32"])
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
        cfgs = [compose(f"seed={s}", f"iterations={iterations}", "episodes_per_update=100",
                               "layers=2", "neurons=8", f"results_dir={results_dir}") for s in seeds]
        return sweep.plan(cfgs)[0]

    sweep.connect(num_cpus=workers)
    try:
        # the sweep's progress lines would bury the table
        with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as out, \
                contextlib.redirect_stderr(io.StringIO()):
            sweep.execute(jobs(range(100, 100 + workers), warm))
            grid = jobs(range(16), out)  # composing 16 configs is the same serial work either way
            start = time.perf_counter()
            sweep.execute(grid)
            return time.perf_counter() - start
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, for CI smoke use")
    args = parser.parse_args()
    seconds = 0.5 if args.quick else 5.0

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


if __name__ == "__main__":
    main()
