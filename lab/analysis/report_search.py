"""The report's search view (lab.analysis.report), from what a search in results_dir recorded
(lab.results.search_record): its objective per trial (the best so far as a line, stopped and failed trials marked) and the searched
knobs' importance: fANOVA's first-order term (Hutter et al. 2014), estimated directly from bins of
each knob (its choices, or QUANTILE_BINS quantile bins of an interval) rather than from a random
forest as fANOVA (and Optuna's FanovaImportanceEvaluator, which needs scikit-learn) does.
"""

import json

import numpy as np
import pandas as pd

from lab import stats
from lab.evaluation import evaluate
from lab.results import search_record

QUANTILE_BINS = 10
"""Bins of an interval knob for its importance (fewer with few configurations)"""
LEAST = stats.IMPORTANCE_LEAST
"""Finished configurations below which no importance is computed (it would be noise)"""


def trials_table(configurations: list[dict]) -> pd.DataFrame:
    """One row per configuration (lab.results.search_record's records): number, name, status, its
    searched knobs as text, the last iteration it trained, its final aggregated objective, and the
    best finished one so far."""
    rows = [{"number": int(c["name"].split()[-1]), "name": c["name"], "status": c["status"],
             "knobs": " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in c["params"].items()),
             "iteration": c["curve"][-1][0] if c["curve"] else 0, "objective": c["objective"]}
            for c in configurations]
    table = pd.DataFrame(rows, columns=["number", "name", "status", "knobs", "iteration", "objective"])
    table = table.sort_values("number", ignore_index=True)
    finished = table["objective"].where(table["status"] == "finished")
    return table.assign(best=finished.astype(float).cummax().ffill())


def importance(configurations: list[dict], scales: dict[str, str]) -> dict[str, tuple[float, float, float]]:
    """lab.stats.importance of each searched knob (module doc) over the finished configurations,
    largest first; {} with fewer than LEAST of them."""
    finished = [c for c in configurations if c["status"] == "finished" and c["curve"]]
    if len(finished) < LEAST:
        return {}
    y = np.array([c["objective"] for c in finished])
    bins = {}
    for key, scale in scales.items():
        values = pd.Series([c["params"][key] for c in finished])
        if scale == "category":
            bins[key] = values.astype(str).to_numpy()
        else:
            scaled = np.log(values.astype(float)) if scale == "log" else values.astype(float)
            bins[key] = pd.qcut(scaled, min(QUANTILE_BINS, len(finished) // 4), labels=False, duplicates="drop").to_numpy()
    return stats.importance(bins, y)


def trials_view(table: pd.DataFrame, objective: str):
    """Plotly: the objective per trial, the best so far, stopped and failed trials marked."""
    from plotly import graph_objects as go  # plotly (the report extra): loaded to draw the report only

    fig = go.Figure()
    styles = {"finished": {"symbol": "circle", "color": "#1f77b4"}, "stopped": {"symbol": "x", "color": "#888"},
              "failed": {"symbol": "x", "color": "#d62728"}}
    for status, marker in styles.items():
        mine = table[table["status"] == status]
        if mine.empty:
            continue
        fig.add_trace(go.Scatter(
            x=mine["number"], y=mine["objective"].fillna(table["objective"].min()), mode="markers", name=status,
            marker={**marker, "size": 6, "opacity": 0.8}, customdata=np.column_stack([mine["knobs"], mine["iteration"]]),
            hovertemplate="trial %{x}: %{y:.4f} at iteration %{customdata[1]}<br>%{customdata[0]}<extra>"
                          f"{status}</extra>"))
    fig.add_trace(go.Scatter(x=table["number"], y=table["best"], mode="lines", name="best so far",
                             line={"shape": "hv", "color": "#d62728", "width": 1.5}, hoverinfo="skip"))
    fig.update_layout(height=360, margin={"t": 30, "b": 40, "l": 60, "r": 20},
                      xaxis_title="trial", yaxis_title=f"final win - loss vs {evaluate.OPPONENT_TITLES[objective]}",
                      legend={"orientation": "h", "y": 1.08})
    return fig


def importance_view(shares: dict[str, tuple[float, float, float]]):
    """Plotly: a bar per searched knob, its share of the objective's variance and its interval."""
    from plotly import graph_objects as go  # plotly (the report extra): loaded to draw the report only

    share, low, high = (np.array([v[i] for v in shares.values()][::-1]) for i in range(3))
    fig = go.Figure(go.Bar(x=share, y=list(shares)[::-1], orientation="h", marker_color="#1f77b4",
                           error_x={"type": "data", "symmetric": False, "array": high - share, "arrayminus": share - low},
                           customdata=np.column_stack([low, high]),
                           hovertemplate="%{y}: %{x:.1%} [%{customdata[0]:.1%}, %{customdata[1]:.1%}]<extra></extra>"))
    fig.update_layout(height=80 + 40 * len(shares), margin={"t": 20, "b": 40, "l": 160, "r": 20},
                      xaxis={"title": "share of the objective's variance it explains alone (95% interval)",
                             "tickformat": ".0%"})
    return fig


def view(results_dir) -> dict | None:
    """The search view's data for the page, or None where results_dir holds no search."""
    searched = search_record.record(results_dir)
    if searched is None:
        return None
    trials = search_record.trials(results_dir)
    if trials is None:
        return {"note": "results_dir holds a search that has not ended or stopped yet: its trials are "
                        "recorded when it does (a search ended by a lab before 2026-12 recorded none; "
                        "lab.search.study.load(RESULTS_DIR) opens its Optuna study)"}
    settings, configs = searched["settings"], trials["configurations"]
    table = trials_table(configs)
    shares = importance(configs, search_record.scales(results_dir))
    counts = table["status"].value_counts()
    seeds = f"{settings['aggregate']} of {settings['seeds']} seeds" if settings["seeds"] > 1 else "one seed"
    title = (f"{trials['title']}, {len(table)} trials "
             f"({', '.join(f'{n} {s}' for s, n in counts.items())}); objective: win - loss against "
             f"{settings['objective']} ({seeds}), stopped trials at their last evaluation")
    return {"title": title, "trials": json.loads(trials_view(table, settings["objective"]).to_json()),
            "importance": json.loads(importance_view(shares).to_json()) if shares else None,
            "note": "" if shares else f"no importance: fewer than {LEAST} configurations finished"}
