"""What the search in a results_dir searched and what its trials did, as plain data: what the
analysis reads of a search (its figures, the report's search view) without the search's code.
results_dir/_search/search.json (IDENTITY), written when the search starts, holds its base
configuration, space and settings (lab.search.driver.identity); trials.json (TRIALS), written
whenever the search ends or stops, one record per configuration (lab.search.outcome.records): its
knobs, status, curve, objective and rank, as the search aggregated and ranked them."""

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
