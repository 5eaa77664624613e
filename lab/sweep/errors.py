"""The sweep's one way to refuse: a one-line error, exit status 2, before anything runs."""

import sys
from typing import NoReturn


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)
