"""Figures from a results table (lab.results.load): learning curves per configuration."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: works on machines without a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from lab import results  # noqa: E402

CURVE_KEYS = ["alpha", "episodes_per_update", "iterations"]
"""Within one figure, one line per combination of these (seeds averaged)."""


def label(player, layers, neurons, alpha, episodes_per_update, iterations) -> str:
    """Seed 000's legend name, e.g. ttt_player2_l5_n32_a0.01_e100_i1000."""
    return f"ttt_player{player}_l{layers}_n{neurons}_a{alpha:g}_e{episodes_per_update}_i{iterations}"


def mean_band(frame: pd.DataFrame, column: str, smooth: int = 1) -> pd.DataFrame:
    """Mean over runs (seeds) of `column` per episodes count, with a 95% normal band.

    `smooth` averages each run's curve over a rolling window of that many iterations first.
    """
    curves = frame.pivot_table(index="episodes", columns="run_id", values=column)
    curves = curves.rolling(smooth, min_periods=1).mean()
    mean = curves.mean(axis=1)
    half = 1.96 * curves.std(axis=1, ddof=1) / curves.count(axis=1) ** 0.5
    return pd.DataFrame({"mean": mean, "low": mean - half.fillna(0), "high": mean + half.fillna(0)})


def winrate_figures(results_dir, out_dir=None, smooth: int = 1) -> list[Path]:
    """One PNG per (algorithm, player, layers, neurons): player-1 win rate per iteration against
    training episodes, one line per (alpha, episodes_per_update, iterations), seeds averaged with
    a 95% band. Returns the files written (in results_dir/_figures unless out_dir is given)."""
    frame = results.load(results_dir)
    frame = frame[frame["status"] == "finished"]
    out_dir = Path(out_dir or Path(results_dir) / results.FIGURES)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    figure_keys = ["algorithm", "player", "layers", "neurons"]
    for (algorithm, player, layers, neurons), group in frame.groupby(figure_keys, dropna=False):
        fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
        for (alpha, per_update, iterations), curve in group.groupby(CURVE_KEYS, dropna=False):
            band = mean_band(curve, "p1_win_rate", smooth)
            seeds = curve["seed"].nunique()
            name = label(player, layers, neurons, alpha, per_update, iterations)
            line, = ax.plot(band.index, band["mean"], lw=1.2, label=f"{name} ({seeds} seeds)")
            if seeds > 1:
                ax.fill_between(band.index, band["low"], band["high"], color=line.get_color(), alpha=0.2)
        stem = f"{algorithm}_ttt_player{player}_l{layers}_n{neurons}"
        opponent = ", ".join(sorted(group["opponent"].unique()))
        ax.set(title=f"{algorithm}: agent as player {player} vs {opponent}, {layers} x {neurons} net",
               xlabel="training episodes", ylabel="player-1 (X) win rate per iteration", ylim=(0, 1))
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
        path = out_dir / f"{stem}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
