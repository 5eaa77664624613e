"""The search's own figure, its objective per configuration, and the table of configurations
that lab.plots.knob_figure draws against each searched knob."""

from pathlib import Path

import numpy as np
import pandas as pd

from lab.search.settings import Settings

STYLE = {"finished": dict(color="tab:blue", alpha=0.8), "stopped": dict(color="tab:gray", alpha=0.6, linestyle="--"),
         "failed": dict(color="tab:red", alpha=0.6)}


def objective(configurations: list, base: dict, settings: Settings, path: Path) -> Path:
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
    spread = f"{settings.aggregate} of {settings.seeds} seeds, band: their range" if settings.seeds > 1 else "one seed"
    ax.set(xlabel="training episodes", ylabel=f"exact win - loss against {settings.objective}",
           title=f"search: {settings.search}, scheduler {settings.scheduler}, {len(configurations)} configurations "
                 f"({spread})")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def knob_points(configurations: list, dims: dict, settings: Settings) -> pd.DataFrame:
    """One row per configuration: its searched knobs, its last aggregated objective (`value`), its
    seeds' lowest and highest (`low`, `high`) and its status."""
    rows = []
    for configuration in configurations:
        if configuration.curve:
            seeds = configuration.curve[-1][1]
            rows.append({**{k: configuration.params[k] for k in dims}, "value": configuration.objective(settings),
                         "low": min(seeds), "high": max(seeds), "status": configuration.status})
    return pd.DataFrame(rows, columns=[*dims, "value", "low", "high", "status"])
