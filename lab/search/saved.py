"""What the search in a results_dir searched (_search/search.json, written when it starts), read
back for what is drawn after it: the report, the figures of a results_dir that holds a search
(its knobs on the scale they were searched on). Light: no Optuna, no figures."""

import json
from pathlib import Path

from lab import results
from lab.search.settings import SearchSettings
from lab.search.space import Dimension

IDENTITY = "search.json"
"""What a search searched, in results_dir/_search: its base configuration, space and settings"""


def searched(results_dir) -> tuple[dict, dict[str, Dimension], SearchSettings] | None:
    """(base, dimensions, settings) of the search in results_dir, or None if it holds none."""
    path = Path(results_dir) / results.SEARCH / IDENTITY
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    dims = {key: Dimension(**{**dim, "values": tuple(dim["values"])}) for key, dim in saved["space"].items()}
    return saved["base"], dims, SearchSettings(**saved["settings"])


def scales(results_dir) -> dict[str, str]:
    """How each searched knob is drawn (log, linear or category, as it was searched); {} when
    results_dir holds no search."""
    found = searched(results_dir)
    return {key: dim.scale for key, dim in found[1].items()} if found else {}

