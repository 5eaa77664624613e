"""The best configuration of each algorithm per evaluation opponent and seat (lab.summary):
final exact rates, episodes to reach 95% of the ceiling, losing lines, training seconds, seed
spread. Prints the table and writes RESULTS_DIR/_summary/summary.csv and summary.md.

    python analysis/summary.py RESULTS_DIR [--out DIR]
"""

import argparse

import pandas as pd

from lab.summary import format_table, write_summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--out", help="where to write summary.csv and summary.md (default: RESULTS_DIR/_summary)")
    args = parser.parse_args()
    best, paths = write_summary(args.results_dir, args.out)
    if best.empty:
        print("No exact evaluations (eval_p1_* / eval_p2_* columns) in these results.")
    else:
        with pd.option_context("display.width", 250, "display.max_columns", None,
                               "display.max_colwidth", 60):
            print(format_table(best).to_string(index=False))
    for path in paths:
        print(path)


if __name__ == "__main__":
    main()
