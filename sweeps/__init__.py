"""Named sweeps (`+sweeps=NAME`), installed as the package `lab.sweeps` so that they travel with
the lab. Hydra sees them as the config group `sweeps` (registered by hydra_plugins/lab_plugins)."""
