"""The lab's checkpoint opponents as Hydra options; see checkpoint_opponent.py."""
