"""The report's search view (lab.report_search) on hand-made configurations: the best so far,
and knob importance that finds the knob that moves the objective."""

import numpy as np
import pytest

from lab import report_search
from lab.search.outcome import Configuration
from lab.search.settings import Settings
from lab.search.space import Dimension

DIMS = {"alpha": Dimension("interval", 0.01, 1.0, log=True), "epsilon": Dimension("interval", 0.0, 1.0),
        "memory": Dimension("choice", values=("keep", "clear"))}


def _configurations(count: int, objective) -> list[Configuration]:
    rng = np.random.default_rng(0)
    out = []
    for number in range(count):
        params = {"alpha": float(np.exp(rng.uniform(np.log(0.01), 0))), "epsilon": float(rng.uniform()),
                  "memory": ("keep", "clear")[number % 2]}
        out.append(Configuration(f"trial {number}", params, "finished", [[10, [objective(params, rng)]]], []))
    return out


def test_importance_finds_the_knob_that_moves_the_objective():
    # the objective follows log(alpha), with a little noise; epsilon and memory do nothing
    configs = _configurations(200, lambda p, rng: np.log10(p["alpha"]) + 0.05 * rng.normal())
    shares = report_search.importance(configs, DIMS, Settings())
    assert list(shares) == ["alpha", "epsilon", "memory"]
    assert shares["alpha"] > 0.9 and shares["epsilon"] < 0.1 and shares["memory"] < 0.05
    # a choice that decides it, alone
    shares = report_search.importance(_configurations(60, lambda p, rng: float(p["memory"] == "keep")), DIMS, Settings())
    assert shares["memory"] == pytest.approx(1.0) and list(shares)[0] == "memory"
    assert report_search.importance(configs[:report_search.LEAST - 1], DIMS, Settings()) == {}


def test_trials_table_runs_the_best_finished_so_far_and_keeps_stopped_trials_apart():
    configs = [Configuration("trial 2", {"alpha": 0.1}, "finished", [[9, [0.5]]], []),
               Configuration("trial 0", {"alpha": 0.2}, "finished", [[9, [0.3]]], []),
               Configuration("trial 1", {"alpha": 0.3}, "stopped", [[3, [0.9]]], []),
               Configuration("trial 3", {"alpha": 0.4}, "failed", [], [])]
    table = report_search.trials_table(configs, Settings())
    assert table["number"].tolist() == [0, 1, 2, 3]
    assert table["status"].tolist() == ["finished", "stopped", "finished", "failed"]
    assert table["best"].tolist() == [0.3, 0.3, 0.5, 0.5]  # a stopped trial's 0.9 is no best
    assert table["iteration"].tolist() == [9, 3, 9, 0] and table["knobs"][0] == "alpha=0.2"
