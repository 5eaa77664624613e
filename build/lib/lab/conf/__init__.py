"""The lab's Hydra configs, installed as the package `lab.conf` so that they travel with the lab."""
