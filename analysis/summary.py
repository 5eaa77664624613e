"""Print and write the best configurations of a results directory (see lab.analysis.summary):

    python analysis/summary.py RESULTS_DIR [--out DIR]    # same as lab-summary
"""

from lab.analysis.summary import main

if __name__ == "__main__":
    main()
