"""What the search in a results_dir searched, as it wrote it when it started
(results_dir/_search/search.json: its base configuration, space and settings), as plain data:
what the analysis reads of a search (its knobs' scales) without the search's code. lab.search.saved
builds the search's typed settings and dimensions from the same record."""

import json
from pathlib import Path

from lab import results

IDENTITY = "search.json"
"""The record's file in results_dir/_search"""


def record(results_dir) -> dict | None:
    """{base, space, settings} of the search in results_dir, or None if it holds none."""
    path = Path(results_dir) / results.SEARCH / IDENTITY
    return json.loads(path.read_text()) if path.exists() else None


def scale(kind: str, log: bool) -> str:
    """How a figure draws a searched knob (lab.analysis.knob_figures): log, linear or category."""
    return "category" if kind == "choice" else "log" if log else "linear"


def scales(results_dir) -> dict[str, str]:
    """How each searched knob is drawn, as it was searched; {} when results_dir holds no search."""
    found = record(results_dir)
    return {key: scale(dim["kind"], dim["log"]) for key, dim in found["space"].items()} if found else {}
