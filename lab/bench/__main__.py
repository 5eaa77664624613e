"""`python -m lab.bench [--quick] [--driver] [--parallel] [--search] [--report] [--boards] [--exact] [--cluster]`."""

import argparse
import sys

import lab.bench
from lab import cli
from lab.bench.boards import boards_section
from lab.bench.cluster import cluster_section
from lab.bench.driver import driver_section
from lab.bench.exact import exact_section
from lab.bench.parallel import parallel_section
from lab.bench.report import report_section
from lab.bench.search import search_section
from lab.bench.throughput import (CASES, alphazero_seconds_to_never_losing, engine_games_per_second,
                                  evaluation_points, sweep_seconds, training_episodes_per_second)


def main() -> None:
    cli.stop_children_first()  # Ctrl-C or `timeout`: its sweeps stop their Ray, its temporary folders go
    try:
        _bench()
    except KeyboardInterrupt:
        print("\ninterrupted: the benchmark stopped, and what it started with it", file=sys.stderr)
        sys.exit(130)


def _bench() -> None:
    parser = cli.ArgumentParser(prog="python -m lab.bench", description=lab.bench.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, for CI smoke use")
    parser.add_argument("--driver", action="store_true", help="only the driver section")
    parser.add_argument("--parallel", action="store_true", help="only the parallel section")
    parser.add_argument("--search", action="store_true", help="only the search section")
    parser.add_argument("--report", action="store_true", help="only the report section")
    parser.add_argument("--boards", action="store_true",
                        help="only the boards section: random games on 3x3, 4x4, 5x5 against OpenSpiel's")
    parser.add_argument("--exact", action="store_true",
                        help="only the exact pass on 4x4 (3x3 with --quick): solving it, then exact() per player")
    parser.add_argument("--cluster", action="store_true",
                        help="only the cluster section: 2 SLURM nodes against 1 (root, SLURM, a checkout)")
    args = parser.parse_args()
    seconds = 0.5 if args.quick else 5.0
    only = [section for flag, section in ((args.driver, driver_section), (args.parallel, parallel_section),
                                          (args.search, search_section), (args.report, report_section),
                                          (args.boards, boards_section), (args.exact, exact_section),
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
    boards_section(args.quick)
    exact_section(args.quick)


if __name__ == "__main__":
    main()
