"""Configuration: the lab's Hydra files composed into flat configurations (compose), each made a
validated Job (jobs)."""
