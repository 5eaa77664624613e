"""How each knob moves the outcome, as PNGs (from lab.analysis.compare's tables, or a search's).

- knob_figure, one per (algorithm, seat; a search's too): the final win - loss against each evaluation
  opponent (a row of panels) against each knob that varies (a panel; knobs that move together share
  one), each configuration a point at its seed mean with its 95% interval, the best a red star; for a
  knob of a few values, a black diamond per value: the IQM over every run with it and its interval.
  A searched knob is drawn on the scale it was searched on, another numeric knob spanning LOG_SPAN
  or more on a log axis, words or tied knobs as categories.
- parallel_figure, one per (algorithm, seat, evaluation opponent): every configuration a line
  through an axis per varying knob and a last axis of its win - loss, coloured by it.

With bigger boards both are drawn per game: <algorithm>_<game>_knobs_..., ..._parallel_...
"""

import functools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from lab.analysis import compare, summary  # noqa: E402
from lab.evaluation import evaluate

LOG_SPAN = 10
"""A positive numeric knob whose largest value is this many times its smallest gets a log axis."""
BARS_UP_TO = 500
"""Configurations whose intervals a panel draws; past that the bars are a solid smear that takes
seconds to draw: points only (the report has the intervals)."""


def closing(draw):
    """Close every figure `draw` left open, when it returns or fails midway (pyplot keeps them all)."""
    @functools.wraps(draw)
    def closed(*args, **kwargs):
        before = set(plt.get_fignums())
        try:
            return draw(*args, **kwargs)
        finally:
            for number in set(plt.get_fignums()) - before:
                plt.close(number)
    return closed


def axis_of(values: pd.Series) -> str:
    """'log', 'linear' or 'category': how to draw a factor's values."""
    numbers = pd.to_numeric(values, errors="coerce")
    if values.dtype == bool or numbers.isna().any():
        return "category"
    if numbers.min() > 0 and numbers.max() >= LOG_SPAN * numbers.min():
        return "log"
    return "linear"


def positions(configs: pd.DataFrame, factor: list[str], scales: dict | None = None) -> tuple[np.ndarray, str, list[str]]:
    """Where each configuration sits on a factor's axis: (x, axis kind, category labels); a
    searched knob's kind is its scale in `scales` (lab.results.search_record.scales)."""
    values = configs[factor[0]] if len(factor) == 1 else compare.factor_values(configs, factor)
    kind = "category" if len(factor) > 1 else (scales or {}).get(factor[0]) or axis_of(values)
    if kind != "category":
        return pd.to_numeric(values).to_numpy(float), kind, []
    text = values.map(compare.value_text) if len(factor) == 1 else values
    order = configs[factor].drop_duplicates().sort_values(factor).index  # numeric order of tied knobs
    labels = list(dict.fromkeys(text[order]))
    return text.map({label: i for i, label in enumerate(labels)}).to_numpy(float), kind, labels


def _jitter(x: np.ndarray, kind: str, count: int) -> np.ndarray:
    """Spread the points sharing a value a little sideways, the same way every time."""
    offsets = (np.random.default_rng(0).random(count) - 0.5)
    if kind == "category":
        return x + 0.3 * offsets
    if kind == "log":
        return x * 10 ** (0.04 * offsets * np.log10(np.nanmax(x) / np.nanmin(x)))
    span = np.nanmax(x) - np.nanmin(x)
    return x + 0.02 * offsets * (span if span else 1)


STATUS = {"stopped": dict(color="tab:gray", fmt="x", label="stopped early (its last evaluation)"),
          "failed": dict(color="tab:red", fmt="x", label="failed (its last evaluation)")}
"""How a search's configurations that did not finish are drawn (a `status` column)."""


def _points(ax, x: np.ndarray, configs: pd.DataFrame, point: str) -> None:
    """The configurations at their score_mean and interval, those a search stopped or lost apart."""
    status = configs["status"] if "status" in configs else pd.Series("finished", configs.index)
    for name in ["finished", *STATUS]:
        mine = (status == name).to_numpy()
        style = STATUS.get(name, dict(color="C0", fmt="o", label=point))
        y = configs["score_mean"].to_numpy(float)[mine]
        if not mine.any():
            continue
        if len(configs) <= BARS_UP_TO:
            spread = np.abs(np.vstack([y - configs["score_mean_low"][mine], configs["score_mean_high"][mine] - y]))
            ax.errorbar(x[mine], y, yerr=spread, ms=3, lw=0.8, alpha=0.55, **style)
        else:
            ax.plot(x[mine], y, style["fmt"], ms=2, alpha=0.4, color=style["color"], label=style["label"].split(",")[0])


def _panel(ax, configs: pd.DataFrame, effects: pd.DataFrame, factor: list[str], scales: dict | None,
           point: str) -> None:
    x, kind, labels = positions(configs, factor, scales)
    jittered = _jitter(x, kind, len(x))
    y = configs["score_mean"].to_numpy(float)
    _points(ax, jittered, configs, point)
    ranks = configs["rank"].to_numpy(float)
    if not np.isnan(ranks).all():  # a search's configurations that did not finish have no rank
        best = int(np.nanargmin(ranks))
        ax.plot(jittered[best], y[best], "*", color="red", ms=12, label="the best configuration", zorder=5)
    name = " x ".join(factor)
    mine = compare.rows_of(effects, {"knob": name})
    if len(mine):
        at = ([labels.index(v) + 0.4 for v in mine["value"]] if kind == "category"
              else pd.to_numeric(mine["value"]).to_numpy(float))
        spread = np.abs(np.vstack([mine["iqm"] - mine["iqm_low"], mine["iqm_high"] - mine["iqm"]]))
        ax.errorbar(at, mine["iqm"], yerr=spread, fmt="D", color="k", ms=5, lw=1.2,
                    label="IQM of every run with the value")
    if kind == "category":
        ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 4 else 0)
        ax.set_xlim(-0.6, len(labels) - 0.2)
    else:
        ax.set_xscale(kind)
    ax.set_xlabel(name + (" (log scale)" if kind == "log" else ""))
    ax.grid(alpha=0.3)


GRID_POINT = "a configuration: seed mean, 95% interval"


def knob_figures(configs: pd.DataFrame, effects: pd.DataFrame, out_dir: Path, scales: dict | None = None) -> list[Path]:
    """knob_figure of each algorithm and seat of compare's tables, as <algorithm>_knobs_<X|O>.png
    (<algorithm>_<game>_knobs_... with bigger boards)."""
    written, keys = [], [*summary.by_game(configs), "algorithm", "seat"]
    for key, mine in configs.groupby(keys):
        (algorithm, seat), game = key[-2:], f"_{key[0]}" if len(key) > 2 else ""
        chosen = compare.rows_of(effects, dict(zip(keys, key)))
        path = knob_figure(mine, chosen, out_dir / f"{algorithm}{game}_knobs_{evaluate.SEATS[seat]}.png", scales)
        written += [path] if path else []
    return written


def _on(configs: pd.DataFrame) -> str:
    """A title's prefix naming a bigger board's game (none on 3x3)."""
    return f"{configs['game'].iloc[0]}, " if "game" in configs else ""


@closing
def knob_figure(configs: pd.DataFrame, effects: pd.DataFrame, path: Path, scales: dict | None = None,
                point: str = GRID_POINT) -> Path | None:
    """The knob figure (module doc) of one algorithm and seat from compare.configurations' and
    knob_effects' rows (`status` where some did not finish); `scales` a search's knobs, the knobs
    drawn; `point` what a point and its bar are. None when no knob varies."""
    algorithm, seat = configs["algorithm"].iloc[0], configs["seat"].iloc[0]
    opponents = sorted(configs["evaluated_vs"].unique())
    first = configs[configs["evaluated_vs"] == opponents[0]]
    factor_list = ([[k] for k in scales if k in first] if scales
                   else compare.factors(first, summary.compared_knobs(first)))
    if not factor_list:
        return None
    fig, axes = plt.subplots(len(opponents), len(factor_list), squeeze=False, sharey="row", layout="constrained",
                             figsize=(max(9, 2 + 3.6 * len(factor_list)), 1 + 3.6 * len(opponents)))
    for row, vs in enumerate(opponents):
        group = configs[configs["evaluated_vs"] == vs].reset_index(drop=True)
        chosen = compare.rows_of(effects, {"evaluated_vs": vs})
        for col, factor in enumerate(factor_list):
            _panel(axes[row, col], group, chosen, factor, scales, point)
        axes[row, 0].set_ylabel(f"final win - loss, {compare.measured(group)}\nvs {evaluate.OPPONENT_TITLES[vs]}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    seeds = configs["seeds"]
    fig.suptitle(f"{_on(configs)}{algorithm}, agent as {evaluate.SEATS.get(seat, seat)}: the final objective against each knob "
                 f"({configs['config'].nunique()} configurations, {seeds.min()}-{seeds.max()} seeds each)"
                 .replace(f"{seeds.min()}-{seeds.min()} ", f"{seeds.min()} "))
    return save(fig, path)


@closing
def parallel_figure(configs: pd.DataFrame, out_dir: Path, scales: dict | None = None) -> list[Path]:
    """The parallel-coordinates figures (see module doc); `scales` as knob_figure's."""
    written, knobs = [], summary.compared_knobs(configs)
    for key, group in configs.groupby([*summary.by_game(configs), *compare.GROUP]):
        (algorithm, seat, vs), game = key[-3:], f"_{key[0]}" if len(key) > len(compare.GROUP) else ""
        group = group.sort_values("score_mean").reset_index(drop=True)  # the best drawn last
        factor_list = compare.factors(group, knobs)
        if not factor_list:
            continue
        columns, ticks = [], []
        for factor in factor_list:
            x, kind, labels = positions(group, factor, scales)
            x = np.log10(x) if kind == "log" else x
            low, high = np.nanmin(x), np.nanmax(x)
            columns.append((x - low) / (high - low) if high > low else np.full_like(x, 0.5))
            ticks.append((" x ".join(factor), _axis_ticks(x, kind, labels)))
        score = group["score_mean"].to_numpy(float)
        columns.append((score - score.min()) / (np.ptp(score) or 1))
        ticks.append((f"win - loss vs {evaluate.OPPONENT_TITLES[vs]}", [(0, f"{score.min():.3f}"), (1, f"{score.max():.3f}")]))
        fig, ax = plt.subplots(figsize=(max(9, 2 + 2.2 * len(columns)), 5), layout="constrained")
        lines = np.stack([np.tile(np.arange(len(columns)), (len(group), 1)), np.column_stack(columns)], axis=-1)
        colours = plt.get_cmap("viridis")(columns[-1])
        ax.add_collection(LineCollection(lines, colors=colours, linewidths=1.2, alpha=0.8))
        for i, (name, labels) in enumerate(ticks):
            ax.axvline(i, color="k", lw=0.8)
            for spot, label in labels:
                ax.text(i + 0.03, spot, label, fontsize=8, va="center")
        ax.set(xlim=(-0.2, len(columns) - 0.6), ylim=(-0.05, 1.05), yticks=[])
        ax.set_xticks(range(len(columns)), [name for name, _ in ticks])
        sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(score.min(), score.max()))
        fig.colorbar(sm, ax=ax, label=f"final win - loss, {compare.measured(group)} (seed mean)")
        ax.set_title(f"{_on(group)}{algorithm}, agent as {evaluate.SEATS[seat]}, evaluated against "
                     f"{evaluate.OPPONENT_TITLES[vs]}: {len(group)} configurations, one line each")
        written.append(save(fig, out_dir / f"{algorithm}{game}_parallel_{evaluate.SEATS[seat]}_{vs}.png"))
    return written


def _axis_ticks(x: np.ndarray, kind: str, labels: list[str]) -> list[tuple[float, str]]:
    """(height 0..1, text) of a parallel axis's labels: each value up to compare.MAX_VALUES, else the ends."""
    if kind == "category":
        return list(zip(np.linspace(0, 1, len(labels)) if len(labels) > 1 else [0.5], labels))
    low, high = np.nanmin(x), np.nanmax(x)
    values = np.unique(x[~np.isnan(x)])
    values = values if len(values) <= compare.MAX_VALUES else np.array([low, high])
    spots = (values - low) / (high - low) if high > low else np.full_like(values, 0.5)
    shown = 10 ** values if kind == "log" else values
    return [(float(spot), compare.value_text(float(f"{v:.4g}"))) for spot, v in zip(spots, shown)]


def save(fig, path: Path, dpi: int = 110) -> Path:
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
