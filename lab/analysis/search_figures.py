"""A search's figures, from what it recorded (lab.results.search_record): each configuration's
objective against training episodes (objective.png), its final objective against each searched
knob (knobs.png, lab.analysis.knob_figures' figure), and the exact-evaluation figures of the few
best (lab.analysis.plots), in results_dir/_search."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lab import results
from lab.analysis import knob_figures, plots
from lab.results import search_record

STYLE = {"finished": dict(color="tab:blue", alpha=0.8), "stopped": dict(color="tab:gray", alpha=0.6, linestyle="--"),
         "failed": dict(color="tab:red", alpha=0.6)}
SHOWN = 5
"""The best configurations whose learning curves are drawn"""


def draw(results_dir: Path) -> list[Path]:
    """The search's figures (module doc), once it recorded its trials; a problem here is one line
    on stderr."""
    searched, trials = search_record.record(results_dir), search_record.trials(results_dir)
    folder = results_dir / results.SEARCH
    try:
        configurations, settings = trials["configurations"], searched["settings"]
        ranked = sorted((c for c in configurations if c["rank"]), key=lambda c: c["rank"])
        scales = search_record.scales(results_dir)
        drawn = [objective(configurations, searched["base"], settings, trials["title"], folder / "objective.png"),
                 knob_figures.knob_figure(knob_table(configurations, searched["base"], scales, settings),
                                          pd.DataFrame(), folder / "knobs.png", scales, point(settings))]
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def knob_table(configurations: list[dict], base: dict, scales: dict, settings: dict) -> pd.DataFrame:
    """The configurations as lab.analysis.knob_figures.knob_figure reads them (lab.analysis.compare.configurations'
    columns): one row each with its searched knobs, its last aggregated objective (score_mean),
    its seeds' lowest and highest (score_mean_low, score_mean_high), its status, and its rank
    among the finished ones (none for the others)."""
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


def point(settings: dict) -> str:
    """What a point of the search's knob figure is, and its bar."""
    if settings["seeds"] == 1:
        return "a configuration (one seed)"
    return f"a configuration: {settings['aggregate']} of {settings['seeds']} seeds, bar: their range"
