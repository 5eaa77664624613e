"""Player-1 win-rate curves per configuration, one PNG per (algorithm, player, layers, neurons).

    python analysis/plot_winrates.py RESULTS_DIR [--out DIR] [--smooth N]
"""

import argparse

from lab.plots import winrate_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--out", help="where to write the PNGs (default: RESULTS_DIR/_figures)")
    parser.add_argument("--smooth", type=int, default=1, help="rolling mean over N iterations per run")
    args = parser.parse_args()
    for path in winrate_figures(args.results_dir, args.out, args.smooth):
        print(path)


if __name__ == "__main__":
    main()
