"""Adaptive search: `python -m lab.sweep --multirun hydra/sweeper=search ...` (README: Adaptive
search). Its modules, in the order a search goes through them:

- settings: `hydra.sweeper.*`, defined once (the Hydra plugins build their configs from it);
- space: the search space in Hydra's override grammar, resolved and validated;
- driver: a search from start to end (refuse another, resume the same, workers, Ctrl-C);
- study: Optuna's ask/tell loop (random or TPE, successive halving or Hyperband);
- pbt: population-based training in synchronous generations;
- trial and workers: what trains a trial (its seeds in turn) and where (forks, Ray, here);
- outcome and figures: the best configuration, best.yaml, the search's figures;
- saved: what a search in a results_dir searched, read back for the report and figures.

This package is light to import (the Hydra plugins import its settings on every command):
Optuna, Ray and matplotlib are imported where they are used.
"""
