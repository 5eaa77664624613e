"""Every figure of a results directory (lab.analysis.plots), as PNGs in RESULTS_DIR/_figures:

- <algorithm>_<game>_<player1|player2|self>[_l<L>_n<N>].png (game: ttt, mnk_4_4_4, ...): write-up
  000's figure, the player-1 win rate of the training games per iteration, one line per
  configuration, seeds as mean + 95% band;
- <algorithm>_exact_ttt_...png: exact evaluation of the greedy agent (win/loss vs random and
  OneStep with the ceilings dashed, optimal-move rate, share of lines lost); on a bigger board
  <algorithm>_<exact|games>_<game>_...png: win and loss rates against each opponent evaluated,
  the ceilings dashed where the lab solves the board (4x4), by games with 95% Wilson bands;
- comparison_exact_win.png: every algorithm's best configuration, exact win rate, log x (a
  bigger board's: comparison_<game>_win.png);
- <algorithm>_outcomes_<configuration>.png: write-up 001's figure, mean outcome, wins/draws/losses
  and epsilon per iteration of training games (runs whose epsilon decays);
- <algorithm>_knobs_<X|O>.png: the final exact win - loss of each configuration against each
  knob that varies; <algorithm>_parallel_<X|O>_<opponent>.png: parallel coordinates (a bigger
  board's: <algorithm>_<game>_knobs_..., <algorithm>_<game>_parallel_...; these two
  need scipy: pip install 'tictactoe-lab[report]').

Figures of more than 16 configurations (a line each, or a figure each) are left out unless
--all is given: the report (lab-report RESULTS_DIR) shows them.

    lab-plot RESULTS_DIR [--out DIR] [--smooth N] [--all]"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: works on machines without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from lab import results  # noqa: E402
from lab.analysis import knob_figures, summary  # noqa: E402
from lab.cli import (ArgumentParser, one_line, out_folder_argument, plural, positive_int,  # noqa: E402
                     results_dir_argument)
from lab.evaluation import evaluate  # noqa: E402
from lab.results import search_record  # noqa: E402

T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Student's t 0.975 quantiles for 1..10 degrees of freedom; beyond, 1.96 + 2.5/df is within 0.02."""
PER_CONFIGURATION = 16
"""Configurations a figure draws a line each of, or a results directory draws a figure each of."""


def left_out_note(count: int) -> str:
    return (f"{count} figures of more than {PER_CONFIGURATION} configurations left out: the report shows "
            "them (hydra.launcher.figures=all or lab-plot --all draws them)")


SMOOTH = 10
"""Default rolling window (iterations) for the training-game win rates: with 10 or 100 games per
iteration the raw rates are mostly sampling noise. 1 draws them raw, as write-up 000 did."""


def t975(df: np.ndarray) -> np.ndarray:
    df = np.asarray(df, dtype=float)
    table = np.array(T975)[np.clip(df, 1, 10).astype(int) - 1]
    return np.where(df <= 10, table, 1.96 + 2.5 / np.maximum(df, 1))


def mean_band(frame: pd.DataFrame, column: str, smooth: int = 1) -> pd.DataFrame:
    """Mean over runs (seeds) of `column` per episodes count, with a 95% band for that mean; each
    run's curve first averaged over a rolling window of `smooth` points."""
    curves = frame.pivot_table(index="episodes", columns="run_id", values=column)
    if smooth > 1:  # pandas rolls each run's column apart (~30 µs a run), for a window of 1 too
        curves = curves.rolling(smooth, min_periods=1).mean()
    mean, count = curves.mean(axis=1), curves.count(axis=1)
    half = t975(count - 1) * curves.std(axis=1, ddof=1) / np.sqrt(count)
    half = half.where(count > 1, 0.0)
    return pd.DataFrame({"mean": mean, "low": mean - half, "high": mean + half})


BAND_SEEDS = 3
"""Seeds from which a 95% band (mean +- t(0.975, seeds - 1) x standard error) is drawn; with 2 it
would be 12.7 standard errors wide: each seed's own curve is drawn thin beside the mean instead."""


def _draw(ax, curve: pd.DataFrame, column: str, smooth: int = 1, spread: bool = True, **style):
    """The seed mean of `column` as a line; with `spread`, its 95% band (3+ seeds) or thin seed curves."""
    band = mean_band(curve, column, smooth)
    line, = ax.plot(band.index, band["mean"], lw=1.3, **style)
    seeds = curve["run_id"].nunique()
    if spread and seeds >= BAND_SEEDS:
        ax.fill_between(band.index, band["low"], band["high"], color=line.get_color(), alpha=0.18, lw=0)
    elif spread and seeds > 1:
        for _, run in curve.groupby("run_id"):
            run = run.set_index("episodes")[column].rolling(smooth, min_periods=1).mean()
            ax.plot(run.index, run.values, lw=0.6, alpha=0.45, color=line.get_color())
    return line


def _legend_or_title(ax, group: pd.DataFrame) -> str:
    """A legend when the figure has several configurations; with one, its name for the title."""
    names = group["config"].unique()
    if len(names) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
        return ""
    return f"\n{names[0]}"


def _side(frame: pd.DataFrame) -> pd.Series:
    """'player1' / 'player2' for the agent's seat, 'self' for self-play runs."""
    seat = "player" + frame["player"].astype("Int64").astype(str)
    return seat.where(frame["opponent"] != "self", "self").where(frame["player"].notna() | (frame["opponent"] == "self"), "")


def _net(layers, neurons) -> tuple[str, str]:
    """(file-name part, title part) of a network shape; empty for algorithms without a net."""
    if pd.isna(layers):
        return "", ""
    return f"_l{layers:.0f}_n{neurons:.0f}", f", {layers:.0f} x {neurons:.0f} net"


def _who(side: str, opponents) -> str:
    if side == "self":
        return "self-play"
    return f"agent as player {side[-1]} ({evaluate.SEATS[int(side[-1])]}) vs {', '.join(sorted(opponents))}"


def _on(game: str) -> str:
    """A title's prefix naming a bigger board's game (none on 3x3: its titles as they were)."""
    return "" if game == "ttt" else f"{game}, "


def _outputs(data, out_dir):
    """The table and folder of a figure function (of a results directory or its loaded table)."""
    # Learning curves include the runs a search stopped early (their lines end where it stopped
    # them); the comparison figure picks from finished runs only (lab.analysis.summary.best_configurations).
    frame = summary.table(data, stopped=True)
    if out_dir is None:
        if isinstance(data, pd.DataFrame):
            raise ValueError("give out_dir when passing a table instead of a results directory")
        out_dir = Path(data) / results.FIGURES
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return frame, out_dir


def _seeds_note(group: pd.DataFrame) -> str:
    seeds = group.groupby("config")["seed"].nunique()
    stopped = group.loc[group["status"] == "stopped", "run_id"].nunique() if "status" in group else 0
    stopped = f"; {stopped} runs stopped early by a search (their lines end there)" if stopped else ""
    if seeds.max() == 1:
        return f"one seed per line{stopped}"
    count = f"{seeds.min()}-{seeds.max()}" if seeds.min() < seeds.max() else f"{seeds.max()}"
    spread = "95% band" if seeds.min() >= BAND_SEEDS else "each seed thin"
    return f"mean of {count} seeds per line, {spread}{stopped}"


def _better(side: str) -> str:
    """Which way of write-up 000's player-1 win rate is better for the agent."""
    return {"player1": "the agent is X: higher is better",
            "player2": "the agent is O: lower is better"}.get(side, "self-play: the agent is both players")


def _drawn(group: pd.DataFrame, every: bool, left_out: list | None, figures: int = 1) -> bool:
    """Whether to draw `group`'s figures (module doc); those left out are counted in `left_out`."""
    if every or group["config"].nunique() <= PER_CONFIGURATION:
        return True
    if left_out is not None:
        left_out.extend(["figure"] * figures)
    return False


@knob_figures.closing
def winrate_figures(data, out_dir=None, smooth: int = SMOOTH, every: bool = False,
                    left_out: list | None = None) -> list[Path]:
    """Write-up 000's figures (module doc), a rolling mean over `smooth` iterations; `every`: _drawn."""
    frame, out_dir = _outputs(data, out_dir)
    frame = frame.assign(side=_side(frame), game=summary.games(frame))
    written = []
    keys = ["game", "algorithm", "side", "layers", "neurons"]
    for (game, algorithm, side, layers, neurons), group in frame.groupby(keys, dropna=False):
        if not _drawn(group, every, left_out):
            continue
        fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
        for name, curve in group.groupby("config"):
            _draw(ax, curve, "p1_win_rate", smooth, label=name)
        net_file, net_title = _net(layers, neurons)
        smoothing = f", rolling mean over {smooth} iterations" if smooth > 1 else ""
        ax.set(title=f"{_on(game)}{algorithm}: {_who(side, group['opponent'].unique())}{net_title}\n"
                     f"training games, {_seeds_note(group)}{smoothing}{_legend_or_title(ax, group)}",
               xlabel="training episodes", ylim=(0, 1),
               ylabel=f"player-1 (X) win rate per iteration\n({_better(side)})")
        ax.grid(alpha=0.3)
        written.append(knob_figures.save(fig, out_dir / f"{algorithm}_{game}_{side}{net_file}.png"))
    return written


PANELS = [("random_win", "win rate vs random"), ("random_loss", "loss rate vs random"),
          ("onestep_win", "win rate vs OneStep"), ("onestep_loss", "loss rate vs OneStep"),
          ("optimal_move_rate", "optimal-move rate"), ("losing_share", "losing lines / all lines")]
"""The panels of a 3x3 exact figure: (column of summary.exact_curves, axis label)."""


def _panels(group: pd.DataFrame, game: str) -> list[tuple[str, str]]:
    """3x3: PANELS. A bigger board: win and loss against each opponent its runs were evaluated
    against, of lab.evaluation.evaluate.BOARD_OPPONENTS, then where evaluated exactly PANELS' last two."""
    if game == "ttt":
        return PANELS
    exact = "optimal_move_rate" in group and group["optimal_move_rate"].notna().any()
    return [(f"{o}_{r}", f"{r} rate vs {evaluate.OPPONENT_TITLES.get(o, o)}") for o in evaluate.BOARD_OPPONENTS
            if f"{o}_win" in group and group[f"{o}_win"].notna().any() for r in ("win", "loss")] \
        + (PANELS[-2:] if exact else [])


def _draw_interval(ax, curve: pd.DataFrame, column: str, **style) -> None:
    """By games: the seed mean of each evaluation's 95% Wilson interval of `column`, as a band."""
    if f"{column}_low" not in curve or curve[f"{column}_low"].isna().all():
        return
    low, high = (summary.seed_mean(curve, f"{column}_{end}") for end in ("low", "high"))
    ax.fill_between(low.index, low, high, alpha=0.18, lw=0, **style)


@knob_figures.closing
def exact_figures(data, out_dir=None, every: bool = False, left_out: list | None = None) -> list[Path]:
    """Evaluation figures (see module doc), one per (game, algorithm, side, seat, layers, neurons):
    self-play runs get one per seat; none when the table has no evaluation columns."""
    frame, out_dir = _outputs(data, out_dir)
    curves = summary.exact_curves(frame, stopped=True)
    if curves.empty:
        return []
    curves = curves.assign(side=_side(curves), game=summary.games(curves),
                           losing_share=curves["losing_lines"] / curves["total_lines"])
    written = []
    keys = ["game", "algorithm", "side", "seat", "layers", "neurons"]
    for (game, algorithm, side, seat, layers, neurons), group in curves.groupby(keys, dropna=False):
        if not _drawn(group, every, left_out):
            continue
        panels = _panels(group, game)
        rows = -(-len(panels) // 2)
        fig, axes = plt.subplots(rows, 2, figsize=(12, 10 * rows / 3),
                                 sharex=True, squeeze=False, layout="constrained")
        for ax, (column, ylabel) in zip(axes.flat, panels):
            for name, curve in group.groupby("config"):
                line = _draw(ax, curve, column, label=name)
                _draw_interval(ax, curve, column, color=line.get_color())
            opponent, _, outcome = column.partition("_")
            _ceiling(ax, game, opponent, seat, outcome)
            ax.set(ylabel=ylabel, ylim=(-0.02, 1.02))
            ax.grid(alpha=0.3)
        for ax in axes[-1]:
            ax.set_xlabel("training episodes")
        net_file, net_title = _net(layers, neurons)
        who = (f"self-play, evaluated as player {seat} ({evaluate.SEATS[seat]})" if side == "self"
               else _who(side, group["opponent"].unique()))
        configs = group["config"].unique()
        named = f"\n{configs[0]}" if len(configs) == 1 else ""
        kinds = group["evaluation"].dropna().unique() if "evaluation" in group else []  # exact or games
        kind = kinds[0] if game != "ttt" and len(kinds) == 1 else "exact"
        evaluated = ("the greedy agent evaluated by games (bands: 95% Wilson intervals, seed means)"
                     if kind == evaluate.GAMES else "exact evaluation of the greedy agent")
        fig.suptitle(f"{_on(game)}{algorithm}: {who}{net_title}\n{evaluated}, {_seeds_note(group)}{named}")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        if len(configs) == 1:  # the name is in the title; the legend explains a dashed line
            dashed = summary.ceiling(game, panels[0][0].partition("_")[0], seat) is not None
            handles, labels = (handles[1:], labels[1:]) if dashed else ([], [])
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
        seat_file = f"_seat{seat}" if side == "self" else ""
        name = f"{algorithm}_{kind}_{game}_{side}{seat_file}{net_file}.png"
        written.append(knob_figures.save(fig, out_dir / name))
    return written


def _ceiling(ax, game: str, opponent: str, seat: int, outcome: str) -> None:
    """The ceiling's `outcome` rate as a dashed line, where the lab knows it."""
    ceiling = summary.ceiling(game, opponent, seat)
    if ceiling is not None:
        ax.axhline(ceiling[outcome], color="k", ls="--", lw=1, label="ceiling: perfect expectimax player")


def comparison_figure(data, out_dir=None) -> list[Path]:
    """All algorithms on one figure per game (see module doc): the files written, or none."""
    frame, out_dir = _outputs(data, out_dir)
    curves = summary.exact_curves(frame)
    if curves.empty:
        return []
    best = summary.best_configurations(frame)
    curves = curves.assign(game=summary.games(curves))
    best = best if "game" in best else best.assign(game="ttt")
    return [_comparison(curves[curves["game"] == game], best[best["game"] == game], game, out_dir)
            for game in sorted(curves["game"].unique())]


@knob_figures.closing
def _comparison(curves: pd.DataFrame, best: pd.DataFrame, game: str, out_dir: Path) -> Path:
    """comparison_figure of one game (module doc)."""
    algorithms = sorted(curves["algorithm"].unique())
    colors = {a: plt.get_cmap("tab10")(i % 10) for i, a in enumerate(algorithms)}
    seats = sorted(curves["seat"].unique())  # a row per seat some run was evaluated in
    fig, axes = plt.subplots(len(seats), 2, figsize=(13, 1 + 5 * len(seats)), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    for row, seat in enumerate(seats):
        for col, opponent in enumerate(evaluate.OPPONENTS):
            ax = axes[row, col]
            chosen = best[(best["seat"] == evaluate.SEATS[seat]) & (best["evaluated_vs"] == opponent)]
            for pick in chosen.itertuples():
                curve = curves[(curves["algorithm"] == pick.algorithm) & (curves["seat"] == seat)
                               & (curves["config"] == pick.config)]
                # Seed means only: four algorithms' bands on one panel would hide the lines.
                _draw(ax, curve, f"{opponent}_win", spread=False, color=colors[pick.algorithm],
                      label=f"{pick.algorithm}: {pick.config} ({plural(pick.seeds, 'seed')})")
            _ceiling(ax, game, opponent, seat, "win")
            ax.set(xscale="log", ylim=(0, 1.02), xlabel="training episodes (log scale)",
                   title=f"{_on(game)}agent as player {seat} ({evaluate.SEATS[seat]}), evaluated vs {evaluate.OPPONENT_TITLES[opponent]}")
            ax.tick_params(labelbottom=True)  # every panel keeps its axis: legends sit below it
            ax.grid(alpha=0.3, which="both")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=7.5, frameon=False)
    for ax in axes[:, 0]:
        ax.set_ylabel("exact win rate of the greedy agent" if game == "ttt" else "win rate of the greedy agent")
    fig.suptitle(f"{_on(game)}Every algorithm's best configuration in each panel: the highest final "
                 "exact win - loss against that opponent\n(lines: seed means; seed spread in the summary table)")
    name = "comparison_exact_win.png" if game == "ttt" else f"comparison_{game}_win.png"
    return knob_figures.save(fig, out_dir / name)


@knob_figures.closing
def outcome_figures(data, out_dir=None, every: bool = False, left_out: list | None = None) -> list[Path]:
    """Write-up 001's three-panel figure (module doc) of each configuration whose train_epsilon changes
    in training (the third panel says something), as the seeds' mean of raw bins as the notebook did."""
    frame, out_dir = _outputs(data, out_dir)
    if "train_epsilon" not in frame:
        return []
    frame = frame[frame.groupby("config")["train_epsilon"].transform("nunique") > 1]
    if not _drawn(frame, every, left_out, figures=frame["config"].nunique()):
        return []
    frame = frame.assign(side=_side(frame), games=frame["p1_wins"] + frame["p2_wins"] + frame["draws"])
    seat = frame["player"].fillna(1)  # self-play: counted from X's side, as the notebook did
    mine, theirs = np.where(seat == 1, frame["p1_wins"], frame["p2_wins"]), np.where(seat == 1, frame["p2_wins"], frame["p1_wins"])
    frame = frame.assign(mean_outcome=(frame["p1_wins"] - frame["p2_wins"]) / frame["games"],
                         agent_wins=mine, agent_losses=theirs)
    written = []
    for (algorithm, side, config), group in frame.groupby(["algorithm", "side", "config"]):
        fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True, layout="constrained")
        _draw(axes[0], group, "mean_outcome", spread=False, color="C0")
        axes[0].set(ylim=(-1.1, 1.1), ylabel="mean of outcomes\n(1 X wins, 0 draw, -1 O wins)")
        for column, label, color in (("agent_losses", "losses", "r"), ("draws", "draws", "b"),
                                     ("agent_wins", "wins", "g")):
            _draw(axes[1], group, column, spread=False, color=color, label=label)
        axes[1].set(ylabel=f"games of the agent{' (X)' if side == 'self' else ''}\nper bin of "
                           f"{int(group['games'].iloc[0])}")
        axes[1].legend(loc="center right")
        _draw(axes[2], group, "train_epsilon", spread=False, color="k")
        axes[2].set(ylabel="epsilon", ylim=(-0.02, 1.02), xlabel="training games")
        for ax in axes:
            ax.grid(alpha=0.3)
        fig.suptitle(f"{algorithm}: {_who(side, group['opponent'].unique())}\n{config}, training "
                     f"games in bins of one iteration, mean of {plural(group['seed'].nunique(), 'seed')}")
        name = f"{algorithm}_outcomes_{config.replace(' ', '_')}.png"
        written.append(knob_figures.save(fig, out_dir / name))
    return written


def all_figures(results_dir, out_dir=None, smooth: int = SMOOTH, every: bool = False, frame=None,
                compared=None, left_out: list | None = None) -> list[Path]:
    """Every figure of a results directory, from one read of its table (`frame`, `compared`: it and
    lab.analysis.summary.comparisons of it, if at hand). `every` and `left_out`: see _drawn."""
    frame = results.load(results_dir) if frame is None else frame
    out_dir = Path(out_dir or Path(results_dir) / results.FIGURES)
    written = (winrate_figures(frame, out_dir, smooth, every, left_out) + exact_figures(frame, out_dir, every, left_out)
               + comparison_figure(frame, out_dir) + outcome_figures(frame, out_dir, every, left_out))
    compared = summary.comparisons(frame) if compared is None else compared
    if compared is not None and not compared[0].empty:
        scales = search_record.scales(results_dir)  # a search's knobs on the scale they were searched on
        written += (knob_figures.knob_figures(*compared, out_dir, scales)
                    + knob_figures.parallel_figure(compared[0], out_dir, scales))
    return written


@one_line(results.ResultsError)
def main() -> None:
    """The command line: `lab-plot RESULTS_DIR ...`."""
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--out", metavar="DIR", help="the folder to write the PNGs into (default: RESULTS_DIR/_figures)")
    parser.add_argument("--smooth", type=positive_int, default=SMOOTH,
                        help=f"rolling mean over N iterations of the training-game win rates "
                             f"(default {SMOOTH}; 1 = raw, as write-up 000)")
    parser.add_argument("--all", action="store_true",
                        help=f"also the figures of more than {PER_CONFIGURATION} configurations")
    args = parser.parse_args()
    results_dir_argument(args.results_dir)
    out_folder_argument(args.out)
    for path in all_figures(args.results_dir, args.out, args.smooth, every=args.all):
        print(path)

