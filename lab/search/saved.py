"""What the search in a results_dir searched (lab.results.search_record), read back as the search's
own types: its base configuration, dimensions and settings. Light: no Optuna, no figures."""

from lab.results import search_record
from lab.search.settings import SearchSettings
from lab.search.space import Dimension


def searched(results_dir) -> tuple[dict, dict[str, Dimension], SearchSettings] | None:
    """(base, dimensions, settings) of the search in results_dir, or None if it holds none."""
    saved = search_record.record(results_dir)
    if saved is None:
        return None
    dims = {key: Dimension(**{**dim, "values": tuple(dim["values"])}) for key, dim in saved["space"].items()}
    return saved["base"], dims, SearchSettings(**saved["settings"])
