"""Throughput benchmark: `python -m lab.bench [--quick]`.

Prints training episodes per second of every algorithm on a fixed configuration, the engine's own
limit (uniform-random games per second played in batches by the compiled kernel) measured in the
same process, and how much faster a 16-run sweep goes on 2 Ray workers than on 1. Compilation and
start-up are excluded: each measurement warms up first. Then the driver of big grids (`--driver`
alone): configurations planned per second, resuming a finished grid, reading a results directory
of thousands of runs, and the driver's memory as finished runs add up. And the parallel section
(`--parallel` alone): write-up 000's grid end to end from the shell on 1 core and on all (where
parallel=auto trains it, and on Ray), with the sweep's own utilisation and fixed cost, and the
speed-up they predict for 16 cores. And the search section (`--search` alone): the docs' (docs/search.md)
q_table search through the lab's sweeper against the same search written with Optuna alone. And
the report section (`--report` alone): the end of a sweep over a finished 10,000-run grid of 2,500
configurations (figures, summary, report), timed, and the report's size. And the boards section
(`--boards` alone, issue 26): uniformly random games per second of the lab's m,n,k engine
(lab/game/bitboards.py) on 3x3, 4x4 and 5x5 beside OpenSpiel's `mnk` game (the boards extra), and
the ratio.
The exact section (`--exact` alone): 4x4 enumerated and solved (lab.game.solver), then a policy's
exact evaluation timed for each fixed player.
The cluster section (`--cluster` alone: root, SLURM and a checkout of the lab) runs the parallel
grid with the SLURM recipe on 2 nodes of 1 CPU against 1 node (namespaces on this machine,
tests/cluster/cluster.sh).
"""
