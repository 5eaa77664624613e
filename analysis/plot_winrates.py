"""Draw every figure of a results directory into RESULTS_DIR/_figures (see lab.analysis.plots):

    python analysis/plot_winrates.py RESULTS_DIR [--out DIR] [--smooth N]    # same as lab-plot
"""

from lab.analysis.plots import main

if __name__ == "__main__":
    main()
