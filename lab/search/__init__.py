"""Adaptive search: `python -m lab.sweep --multirun hydra/sweeper=search ...` (README: Adaptive
search). In the order a search goes through them: settings (`hydra.sweeper.*`; its scheduler and
sampler are entries of the registries schedulers and samplers), space, driver, study (Optuna's
ask/tell loop) or pbt, trial (what a worker trains), outcome (and the record of the trials the
analysis reads). Light to import (the Hydra plugins import its settings on every command): Optuna,
Ray and matplotlib are imported where they are used.
"""
