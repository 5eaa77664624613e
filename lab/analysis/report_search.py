"""The report's search view (lab.analysis.report), where results_dir holds a search (lab.search): its
objective per trial (the best so far as a line, stopped and failed trials marked) and the searched
knobs' importance: fANOVA's first-order term (Hutter et al. 2014), estimated directly from bins of
each knob (its choices, or QUANTILE_BINS quantile bins of an interval) rather than from a random
forest as fANOVA (and Optuna's FanovaImportanceEvaluator, which needs scikit-learn) does.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lab import results, stats
from lab.evaluation import evaluate
from lab.search import saved, schedulers

QUANTILE_BINS = 10
"""Bins of an interval knob for its importance (fewer with few configurations)"""
LEAST = stats.IMPORTANCE_LEAST
"""Finished configurations below which no importance is computed (it would be noise)"""


def configurations(results_dir) -> list:
    """The search's configurations (lab.search.outcome.Configuration), in trial order."""
    base, dims, settings = saved.searched(results_dir)
    if schedulers.SCHEDULERS[settings.scheduler].drives_population:
        from lab.search.pbt import Evolve

        return Evolve(base, dims, settings, None, None, None, Path(results_dir) / results.SEARCH).configurations()
    from lab.search import study

    return study.configurations(study.load(results_dir, settings.storage))


def trials_table(configurations: list, settings) -> pd.DataFrame:
    """One row per configuration: number, name, status, its searched knobs as text, the last
    iteration it trained, its final aggregated objective, and the best finished one so far."""
    rows = [{"number": int(c.name.split()[-1]), "name": c.name, "status": c.status,
             "knobs": " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in c.params.items()),
             "iteration": c.curve[-1][0] if c.curve else 0, "objective": c.objective(settings)}
            for c in configurations]
    table = pd.DataFrame(rows, columns=["number", "name", "status", "knobs", "iteration", "objective"])
    table = table.sort_values("number", ignore_index=True)
    finished = table["objective"].where(table["status"] == "finished")
    return table.assign(best=finished.astype(float).cummax().ffill())


def importance(configurations: list, dims: dict, settings) -> dict[str, tuple[float, float, float]]:
    """lab.stats.importance of each searched knob (module doc) over the finished configurations,
    largest first; {} with fewer than LEAST of them."""
    finished = [c for c in configurations if c.status == "finished" and c.curve]
    if len(finished) < LEAST:
        return {}
    y = np.array([c.objective(settings) for c in finished])
    bins = {}
    for key, dim in dims.items():
        values = pd.Series([c.params[key] for c in finished])
        if dim.kind == "choice":
            bins[key] = values.astype(str).to_numpy()
        else:
            scaled = np.log(values.astype(float)) if dim.log else values.astype(float)
            bins[key] = pd.qcut(scaled, min(QUANTILE_BINS, len(finished) // 4), labels=False, duplicates="drop").to_numpy()
    return stats.importance(bins, y)


def trials_view(table: pd.DataFrame, objective: str):
    """Plotly: the objective per trial, the best so far, stopped and failed trials marked."""
    from plotly import graph_objects as go

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
    from plotly import graph_objects as go

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
    found = saved.searched(results_dir)
    if found is None:
        return None
    base, dims, settings = found
    try:
        configs = configurations(results_dir)
    except ImportError:
        return {"note": "results_dir holds a search; its view needs the search extra (pip install "
                        "'tictactoe-lab[search]')"}
    table = trials_table(configs, settings)
    shares = importance(configs, dims, settings)
    counts = table["status"].value_counts()
    seeds = f"{settings.aggregate} of {settings.seeds} seeds" if settings.seeds > 1 else "one seed"
    title = (f"{schedulers.title(settings)}, {len(table)} trials "
             f"({', '.join(f'{n} {s}' for s, n in counts.items())}); objective: win - loss against "
             f"{settings.objective} ({seeds}), stopped trials at their last evaluation")
    return {"title": title, "trials": json.loads(trials_view(table, settings.objective).to_json()),
            "importance": json.loads(importance_view(shares).to_json()) if shares else None,
            "note": "" if shares else f"no importance: fewer than {LEAST} configurations finished"}
