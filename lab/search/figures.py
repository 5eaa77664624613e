"""The search's own figure, its objective per configuration, and the table of configurations
that lab.analysis.knob_figures.knob_figure draws against each searched knob."""

from pathlib import Path

import numpy as np
import pandas as pd

from lab.search import schedulers
from lab.search.settings import SearchSettings

STYLE = {"finished": dict(color="tab:blue", alpha=0.8), "stopped": dict(color="tab:gray", alpha=0.6, linestyle="--"),
         "failed": dict(color="tab:red", alpha=0.6)}


def objective(configurations: list, base: dict, settings: SearchSettings, path: Path) -> Path:
    """Each configuration's aggregated objective against training episodes, its seeds' spread
    (lowest to highest) as a band; stopped configurations dashed and crossed where they stopped."""
    import matplotlib

    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for configuration in configurations:
        if not configuration.curve:
            continue
        per_update = configuration.params.get("episodes_per_update", base["episodes_per_update"])
        episodes = np.array([iteration for iteration, _ in configuration.curve]) * per_update
        values = np.array([seeds for _, seeds in configuration.curve])
        aggregated = [settings.aggregated(seeds) for seeds in values]
        style = STYLE[configuration.status]
        line, = ax.plot(episodes, aggregated, linewidth=1, **style)
        if settings.seeds > 1:
            ax.fill_between(episodes, values.min(axis=1), values.max(axis=1), color=line.get_color(), alpha=0.08, lw=0)
        if configuration.status == "stopped":
            ax.plot(episodes[-1], aggregated[-1], "x", color="tab:gray")
    ax.plot([], [], color="tab:blue", label="finished")
    ax.plot([], [], color="tab:gray", linestyle="--", marker="x", label="stopped by the scheduler")
    if any(c.status == "failed" and c.curve for c in configurations):
        ax.plot([], [], label="failed (a run's error, lab-summary says which)", **STYLE["failed"])
    spread = f"{settings.aggregate} of {settings.seeds} seeds, band: their range" if settings.seeds > 1 else "one seed"
    ax.set(xlabel="training episodes", ylabel=f"exact win - loss against {settings.objective}",
           title=f"{schedulers.title(settings)}, {len(configurations)} configurations ({spread})")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def knob_table(configurations: list, ranked: list, base: dict, dims: dict,
               settings: SearchSettings) -> pd.DataFrame:
    """The configurations as lab.analysis.knob_figures.knob_figure reads them (lab.analysis.compare.configurations'
    columns): one row each with its searched knobs, its last aggregated objective (score_mean),
    its seeds' lowest and highest (score_mean_low, score_mean_high), its status, and its rank
    among the finished ones (`ranked`: lab.search.outcome.rank's; none for the others)."""
    ranks = {c.name: rank for rank, c in enumerate(ranked, 1)}
    rows = []
    for configuration in configurations:
        if configuration.curve:
            seeds = configuration.curve[-1][1]
            rows.append({**{k: configuration.params[k] for k in dims}, "config": configuration.name,
                         "score_mean": configuration.objective(settings), "score_mean_low": min(seeds),
                         "score_mean_high": max(seeds), "status": configuration.status,
                         "rank": ranks.get(configuration.name, np.nan)})
    columns = [*dims, "config", "score_mean", "score_mean_low", "score_mean_high", "status", "rank"]
    return pd.DataFrame(rows, columns=columns).assign(algorithm=base["algorithm"], seat=base.get("player"),
                                                      evaluated_vs=settings.objective, seeds=settings.seeds)


def point(settings: SearchSettings) -> str:
    """What a point of the search's knob figure is, and its bar."""
    if settings.seeds == 1:
        return "a configuration (one seed)"
    return f"a configuration: {settings.aggregate} of {settings.seeds} seeds, bar: their range"
