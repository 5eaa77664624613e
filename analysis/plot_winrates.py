"""Every figure of a results directory (lab.plots), as PNGs in RESULTS_DIR/_figures:

- <algorithm>_ttt_<player1|player2|self>[_l<L>_n<N>].png: seed 000's figure, the player-1 win
  rate of the training games per iteration, one line per configuration, seeds as mean + 95% band;
- <algorithm>_exact_ttt_...png: exact evaluation of the greedy agent (win/loss vs random and
  OneStep with the ceilings dashed, optimal-move rate, share of lines lost);
- comparison_exact_win.png: every algorithm's best configuration, exact win rate, log x.

    python analysis/plot_winrates.py RESULTS_DIR [--out DIR] [--smooth N]
"""

import argparse

from lab.plots import SMOOTH, all_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--out", help="where to write the PNGs (default: RESULTS_DIR/_figures)")
    parser.add_argument("--smooth", type=int, default=SMOOTH,
                        help=f"rolling mean over N iterations of the training-game win rates "
                             f"(default {SMOOTH}; 1 = raw, as seed 000)")
    args = parser.parse_args()
    for path in all_figures(args.results_dir, args.out, args.smooth):
        print(path)


if __name__ == "__main__":
    main()
