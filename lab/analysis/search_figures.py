"""A search's figures and its view in the report, from what it recorded (lab.results.search_record).

Figures, in results_dir/_search: each configuration's objective against training episodes
(objective.png), its final objective against each searched knob (knobs.png, lab.analysis.knob_figures'
figure), and the exact-evaluation figures of the few best (lab.analysis.plots).

The report's search view (lab.analysis.report): the objective per trial (the best so far as a line,
stopped and failed trials marked) and the searched knobs' importance: fANOVA's first-order term
(Hutter et al. 2014), estimated directly from bins of each knob (its choices, or QUANTILE_BINS
quantile bins of an interval) rather than from a random forest as fANOVA (and Optuna's
FanovaImportanceEvaluator, which needs scikit-learn) does.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lab import results, stats
from lab.analysis import knob_figures, plots
from lab.evaluation import evaluate
from lab.results import search_record

STYLE = {"finished": dict(color="tab:blue", alpha=0.8), "stopped": dict(color="tab:gray", alpha=0.6, linestyle="--"),
         "failed": dict(color="tab:red", alpha=0.6)}
SHOWN = 5
"""The best configurations whose learning curves are drawn"""
QUANTILE_BINS = 10
"""Bins of an interval knob for its importance (fewer with few configurations)"""


def draw(results_dir: Path) -> list[Path]:
    """The search's figures (module doc), once it recorded its trials; a problem is one line on stderr."""
    searched, trials = search_record.record(results_dir), search_record.trials(results_dir)
    folder = results_dir / results.SEARCH
    try:
        configurations, settings = trials["configurations"], searched["settings"]
        ranked = sorted((c for c in configurations if c["rank"]), key=lambda c: c["rank"])
        scales = search_record.scales(results_dir)
        point = ("a configuration (one seed)" if settings["seeds"] == 1 else
                 f"a configuration: {settings['aggregate']} of {settings['seeds']} seeds, bar: their range")
        drawn = [objective(configurations, searched["base"], settings, trials["title"], folder / "objective.png"),
                 knob_figures.knob_figure(knob_table(configurations, searched["base"], scales, settings),
                                          pd.DataFrame(), folder / "knobs.png", scales, point)]
        best_runs = results.read_runs(results_dir, [r for c in ranked[:SHOWN] for r in c["runs"]])
        drawn += plots.exact_figures(best_runs, folder)
        print(f"search figures in {folder}: {', '.join(p.name for p in drawn)}")
        return drawn
    except Exception as exc:  # noqa: BLE001 - a plotting problem must not lose a search
        print(f"could not draw the search's figures ({type(exc).__name__}: {exc})", file=sys.stderr)
        return []


def objective(configurations: list[dict], base: dict, settings: dict, title: str, path: Path) -> Path:
    """Each configuration's aggregated objective against training episodes, its seeds' spread
    (lowest to highest) as a band; stopped configurations dashed and crossed where they stopped."""
    import matplotlib.pyplot as plt  # lab.analysis.plots chose the files-only backend

    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for configuration in configurations:
        if not configuration["curve"]:
            continue
        per_update = configuration["params"].get("episodes_per_update", base["episodes_per_update"])
        episodes = np.array([iteration for iteration, _ in configuration["curve"]]) * per_update
        values = np.array([seeds for _, seeds in configuration["curve"]])
        aggregated = configuration["aggregated"]
        line, = ax.plot(episodes, aggregated, linewidth=1, **STYLE[configuration["status"]])
        if settings["seeds"] > 1:
            ax.fill_between(episodes, values.min(axis=1), values.max(axis=1), color=line.get_color(), alpha=0.08, lw=0)
        if configuration["status"] == "stopped":
            ax.plot(episodes[-1], aggregated[-1], "x", color="tab:gray")
    ax.plot([], [], color="tab:blue", label="finished")
    ax.plot([], [], color="tab:gray", linestyle="--", marker="x", label="stopped by the scheduler")
    if any(c["status"] == "failed" and c["curve"] for c in configurations):
        ax.plot([], [], label="failed (a run's error, lab-summary says which)", **STYLE["failed"])
    seeds = settings["seeds"]
    spread = f"{settings['aggregate']} of {seeds} seeds, band: their range" if seeds > 1 else "one seed"
    ax.set(xlabel="training episodes", ylabel=f"exact win - loss against {settings['objective']}",
           title=f"{title}, {len(configurations)} configurations ({spread})")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    return knob_figures.save(fig, path, dpi=120)


def knob_table(configurations: list[dict], base: dict, scales: dict, settings: dict) -> pd.DataFrame:
    """The configurations as knob_figures.knob_figure reads them (compare.configurations' columns):
    searched knobs, last aggregated objective and its seeds' range as score_mean(_low, _high),
    status, and rank among the finished ones."""
    rows = []
    for configuration in configurations:
        if configuration["curve"]:
            seeds = configuration["curve"][-1][1]
            rows.append({**{k: configuration["params"][k] for k in scales}, "config": configuration["name"],
                         "score_mean": configuration["objective"], "score_mean_low": min(seeds),
                         "score_mean_high": max(seeds), "status": configuration["status"],
                         "rank": configuration["rank"] or np.nan})
    columns = [*scales, "config", "score_mean", "score_mean_low", "score_mean_high", "status", "rank"]
    return pd.DataFrame(rows, columns=columns).assign(algorithm=base["algorithm"], seat=base.get("player"),
                                                      evaluated_vs=settings["objective"], seeds=settings["seeds"])


def trials_table(configurations: list[dict]) -> pd.DataFrame:
    """One row per configuration: number, name, status, knobs as text, last iteration trained,
    final aggregated objective, and the best finished one so far."""
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
    largest first; {} with fewer than stats.IMPORTANCE_LEAST of them."""
    finished = [c for c in configurations if c["status"] == "finished" and c["curve"]]
    if len(finished) < stats.IMPORTANCE_LEAST:
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
            "note": "" if shares else
            f"no importance: fewer than {stats.IMPORTANCE_LEAST} configurations finished"}
