"""The sweep's one way to refuse: a one-line error, exit status 2, before anything runs
(lab.cli.fail, the rule of every command)."""

from lab.cli import fail

__all__ = ["fail"]
