"""The report's search view (lab.analysis.search_figures) on hand-made configurations, as the search
records them (lab.search.outcome.records): the best so far, and knob importance that finds the
knob that moves the objective."""

import json

import numpy as np
import pandas as pd
import pytest

from lab import stats
from lab.analysis import search_figures
from lab.search.outcome import Configuration, records
from lab.search.settings import SearchSettings
from lab.search.space import Dimension

DIMS = {"alpha": Dimension("interval", 0.01, 1.0, log=True), "epsilon": Dimension("interval", 0.0, 1.0),
        "memory": Dimension("choice", values=("keep", "clear"))}
SCALES = {"alpha": "log", "epsilon": "linear", "memory": "category"}


def _configurations(count: int, objective) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for number in range(count):
        params = {"alpha": float(np.exp(rng.uniform(np.log(0.01), 0))), "epsilon": float(rng.uniform()),
                  "memory": ("keep", "clear")[number % 2]}
        out.append(Configuration(f"trial {number}", params, "finished", [[10, [objective(params, rng)]]], []))
    return records(out, SearchSettings())


def test_importance_finds_the_knob_that_moves_the_objective():
    # the objective follows log(alpha), with a little noise; epsilon and memory do nothing
    configs = _configurations(200, lambda p, rng: np.log10(p["alpha"]) + 0.05 * rng.normal())
    shares = search_figures.importance(configs, SCALES)
    assert list(shares) == ["alpha", "epsilon", "memory"]
    assert shares["alpha"][0] > 0.9 and shares["epsilon"][0] < 0.1 and shares["memory"][0] < 0.05
    assert all(low <= share <= high for share, low, high in shares.values())  # each with its interval
    assert shares["alpha"][1] > shares["epsilon"][2]
    # a choice that decides it, alone
    by_memory = _configurations(60, lambda p, rng: float(p["memory"] == "keep"))
    shares = search_figures.importance(by_memory, SCALES)
    assert shares["memory"][0] == pytest.approx(1.0) and list(shares)[0] == "memory"
    assert search_figures.importance(configs[:stats.IMPORTANCE_LEAST - 1], SCALES) == {}


def test_trials_table_runs_the_best_finished_so_far_and_keeps_stopped_trials_apart():
    configs = [Configuration("trial 2", {"alpha": 0.1}, "finished", [[9, [0.5]]], []),
               Configuration("trial 0", {"alpha": 0.2}, "finished", [[9, [0.3]]], []),
               Configuration("trial 1", {"alpha": 0.3}, "stopped", [[3, [0.9]]], []),
               Configuration("trial 3", {"alpha": 0.4}, "failed", [], [])]
    table = search_figures.trials_table(records(configs, SearchSettings()))
    assert table["number"].tolist() == [0, 1, 2, 3]
    assert table["status"].tolist() == ["finished", "stopped", "finished", "failed"]
    assert table["best"].tolist() == [0.3, 0.3, 0.5, 0.5]  # a stopped trial's 0.9 is no best
    assert table["iteration"].tolist() == [9, 3, 9, 0] and table["knobs"][0] == "alpha=0.2"


def test_a_searched_knob_is_drawn_on_the_scale_it_was_searched_on(tmp_path):
    from lab import results
    from lab.analysis import knob_figures
    from lab.results import search_record
    from lab.search import driver

    (tmp_path / results.SEARCH).mkdir()
    identity = driver.identity({"algorithm": "q_table"}, DIMS, SearchSettings())
    (tmp_path / results.SEARCH / search_record.IDENTITY).write_text(json.dumps(identity))
    scales = search_record.scales(tmp_path)
    assert scales == {"alpha": "log", "epsilon": "linear", "memory": "category"}
    assert search_record.scales(tmp_path / "none") == {}
    # alpha found between 0.2 and 0.3 only: a guess from the values would draw it linear
    table = pd.DataFrame({"alpha": [0.2, 0.25, 0.3], "epsilon": [0.5, 0.6, 0.7]})
    assert knob_figures.positions(table, ["alpha"])[1] == "linear"
    assert knob_figures.positions(table, ["alpha"], scales)[1] == "log"
    assert knob_figures.positions(table, ["epsilon"], scales)[1] == "linear"


def test_the_view_reads_what_the_search_recorded_and_says_when_it_recorded_nothing_yet(tmp_path):
    from lab import results
    from lab.results import search_record
    from lab.search import driver, outcome

    (tmp_path / results.SEARCH).mkdir()
    identity = driver.identity({"algorithm": "q_table"}, DIMS, SearchSettings())
    (tmp_path / results.SEARCH / search_record.IDENTITY).write_text(json.dumps(identity))
    assert "has not ended or stopped yet" in search_figures.view(tmp_path)["note"]
    configs = [Configuration("trial 0", {"alpha": 0.1, "epsilon": 0.5, "memory": "keep"}, "finished",
                             [[5, [0.1]], [10, [0.4]]], ["a"]),
               Configuration("trial 1", {"alpha": 0.2, "epsilon": 0.5, "memory": "clear"}, "finished",
                             [[10, [0.6]]], ["b"]),
               Configuration("trial 2", {"alpha": 0.3, "epsilon": 0.5, "memory": "keep"}, "stopped", [[5, [0.9]]], ["c"])]
    outcome.record(configs, SearchSettings(), tmp_path)
    recorded = search_record.trials(tmp_path)
    assert [(c["name"], c["rank"], c["objective"]) for c in recorded["configurations"]] == [
        ("trial 0", 2, 0.4), ("trial 1", 1, 0.6), ("trial 2", None, 0.9)]
    assert recorded["configurations"][0]["aggregated"] == [0.1, 0.4]
    view = search_figures.view(tmp_path)
    assert view["title"].startswith(recorded["title"] + ", 3 trials (2 finished, 1 stopped)")
