"""The lab: tic-tac-toe reinforcement-learning agents, swept in parallel."""

import time

IMPORT_STARTED = time.perf_counter()
"""When this process began importing the lab (lab.run reports how long its imports took)."""
