"""The lab: tic-tac-toe reinforcement-learning agents, swept in parallel."""

import os
import time

IMPORT_STARTED = time.perf_counter()
"""When this process began importing the lab (lab.run reports how long its imports took)."""

# The lab's matrices are small: BLAS threads only contend with each other and with the parallel
# runs (a 16 x 16 net runs ~15x slower with 2 OpenBLAS threads on a busy 2-core machine). This
# must happen before numpy loads its BLAS; Ray workers get the same from Ray itself.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
