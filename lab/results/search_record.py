"""What the search in a results_dir searched (IDENTITY, written as it starts: its base configuration,
space and settings, lab.search.driver.identity) and what its trials did (TRIALS, written whenever it
ends or stops: each configuration's knobs, status, curve, objective and rank, lab.search.outcome.records),
as plain data: what the analysis (its figures, the report's search view) reads without the search's code."""

import json
from pathlib import Path

from lab import results

IDENTITY = "search.json"
"""What the search searched, in results_dir/_search"""
TRIALS = "trials.json"
"""What its trials did, in results_dir/_search"""


def record(results_dir) -> dict | None:
    """{base, space, settings} of the search in results_dir, or None if it holds none."""
    path = Path(results_dir) / results.SEARCH / IDENTITY
    return json.loads(path.read_text()) if path.exists() else None


def scales(results_dir) -> dict[str, str]:
    """How a figure draws each searched knob (lab.analysis.knob_figures), as it was searched: log,
    linear or category; {} when results_dir holds no search."""
    found = record(results_dir)
    return {key: "category" if dim["kind"] == "choice" else "log" if dim["log"] else "linear"
            for key, dim in found["space"].items()} if found else {}


def trials(results_dir) -> dict | None:
    """{title, configurations} of its search as last recorded, or None before it first ended or stopped."""
    path = Path(results_dir) / results.SEARCH / TRIALS
    return json.loads(path.read_text()) if path.exists() else None
