"""The lab's Hydra plugins; see lab_plugins.py."""
