"""Print and write the best configurations of a results directory (see lab.summary):

    python analysis/summary.py RESULTS_DIR [--out DIR]    # same as lab-summary
"""

from lab.summary import main

if __name__ == "__main__":
    main()
