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

SECTIONS = {section.__name__.removesuffix("_section"): section for section in (
    parallel_section, driver_section, search_section, report_section, boards_section, exact_section,
    cluster_section)}
"""flag -> section (its module's first paragraph: the flag's help), in the order a plain run runs them"""


def main() -> None:
    cli.stop_children_first()  # Ctrl-C or `timeout`: its sweeps stop their Ray, its temporary folders go
    parser = cli.ArgumentParser(prog="python -m lab.bench", description=lab.bench.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, for CI smoke use")
    for flag, section in SECTIONS.items():
        doc = sys.modules[section.__module__].__doc__
        parser.add_argument(f"--{flag}", action="store_true", help=" ".join(doc.split("\n\n")[0].split()))
    args = parser.parse_args()
    only = [section for flag, section in SECTIONS.items() if getattr(args, flag)]
    every = [throughput_section, *(section for flag, section in SECTIONS.items() if flag != "cluster")]
    try:
        for section in only or every:
            section(args.quick)
    except KeyboardInterrupt:
        print("\ninterrupted: the benchmark stopped, and what it started with it", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
