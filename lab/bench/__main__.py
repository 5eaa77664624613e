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
from lab.bench.throughput import throughput_section

SECTIONS = {
    "driver": (driver_section, "only the driver section"),
    "parallel": (parallel_section, "only the parallel section"),
    "search": (search_section, "only the search section"),
    "report": (report_section, "only the report section"),
    "boards": (boards_section, "only the boards section: random games on 3x3, 4x4, 5x5 against OpenSpiel's"),
    "exact": (exact_section,
              "only the exact pass on 4x4 (3x3 with --quick): solving it, then exact() per player"),
    "cluster": (cluster_section,
                "only the cluster section: 2 SLURM nodes against 1 (root, SLURM, a checkout)"),
}
"""flag -> (section, help); a plain run runs the throughput section, then every other but the cluster's"""


def main() -> None:
    cli.stop_children_first()  # Ctrl-C or `timeout`: its sweeps stop their Ray, its temporary folders go
    parser = cli.ArgumentParser(prog="python -m lab.bench", description=lab.bench.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, for CI smoke use")
    for flag, (_, text) in SECTIONS.items():
        parser.add_argument(f"--{flag}", action="store_true", help=text)
    args = parser.parse_args()
    only = [section for flag, (section, _) in SECTIONS.items() if getattr(args, flag)]
    every = [throughput_section, *(SECTIONS[flag][0] for flag in ("parallel", "driver", "search", "report",
                                                                  "boards", "exact"))]
    try:
        for section in only or every:
            section(args.quick)
    except KeyboardInterrupt:
        print("\ninterrupted: the benchmark stopped, and what it started with it", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
