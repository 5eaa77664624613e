"""Draw every figure of a results directory into RESULTS_DIR/_figures (see lab.analysis.plots):

    python analysis/plot_winrates.py RESULTS_DIR [--out DIR] [--smooth N] [--all]    # same as lab-plot

--all also draws the figures of more than 16 configurations, left out by default (the report
shows them).
"""

from lab.analysis.plots import main

if __name__ == "__main__":
    main()
