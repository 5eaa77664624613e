"""Tables from a results table (lab.results.load): configuration names, exact-evaluation curves
per seat, and the best configuration of each algorithm against each opponent in each seat.

A *configuration* is a run's knobs without its seed: its seeds are repeats of one experiment.
Its name follows write-up 000's legend (`ttt_player2_l5_n32_a0.01_e100_i1000`; `ttt_self_...` for
self-play, knobs the algorithm does not use left out; `mnk_4_4_4_player2_...` on a bigger board),
then every other knob that varies among its algorithm's runs (` opponent=random`), so a name is
unique within its algorithm.

"Best" for (algorithm, evaluation opponent, seat): the configuration with the highest final
exact (win - loss) against that opponent, averaged over its seeds; ties go to more wins, then to
fewer training episodes. This is the objective the ceilings (lab.evaluation.evaluate.ceiling) maximise.
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from lab import agents, results, stats
from lab.analysis import compare
from lab.evaluation import evaluate, exact_ceiling
from lab.cli import ArgumentParser, one_line, out_folder_argument, results_dir_argument
from lab.knobs import RUN_KEYS

SUMMARY = "_summary"
"""Subfolder of a results directory for the summary files (skipped by pandas.read_parquet)."""
NAME_PARTS = (("layers", "l"), ("neurons", "n"), ("alpha", "a"), ("episodes_per_update", "e"),
              ("iterations", "i"))
"""Knobs spelled in write-up 000's legend name, with their letter."""


def table(data, stopped: bool = False) -> pd.DataFrame:
    """The finished runs of a results directory or loaded table (`stopped`: also those a search stopped
    early, drawn but never compared), named over all its runs so that every view names them alike."""
    frame = data if isinstance(data, pd.DataFrame) else results.load(data)
    frame = frame if "config" in frame else name_configurations(frame)
    return frame[frame["status"].isin(("finished", "stopped") if stopped else ("finished",))]


def knob_columns(frame: pd.DataFrame | pd.Series) -> list[str]:
    """The columns (of a table, or a row's) that say what a run computes: run and algorithm knobs."""
    return [n for n in dict.fromkeys(RUN_KEYS + agents.knob_names()) if n in frame]


def ceiling(game_name: str, opponent: str, seat: int) -> dict | None:
    """The ceiling {win, draw, loss} of `seat` against `opponent` in `game_name` (lab.evaluation.evaluate's on
    3x3, lab.evaluation.exact_ceiling's on a board the lab solves); None for any other opponent or board."""
    if game_name == "ttt":
        return evaluate.ceiling(opponent, seat) if opponent in evaluate.OPPONENTS else None
    return exact_ceiling.ceiling(tuple(int(v) for v in game_name.split("_")[1:]), opponent, seat)


def games(frame: pd.DataFrame) -> pd.Series:
    """Each row's game as the `game` group names it: ttt (m, n, k null or absent) or mnk_<m>_<n>_<k>."""
    if "m" not in frame:
        return pd.Series("ttt", index=frame.index, dtype=object)
    sizes = frame[["m", "n", "k"]].astype("Float64").astype("Int64").astype(str)
    spelled = "mnk_" + sizes["m"].str.cat([sizes["n"], sizes["k"]], sep="_")
    return spelled.astype(object).where(frame["m"].notna(), "ttt")


def by_game(frame: pd.DataFrame) -> list[str]:
    """["game"] when the table has that column, else []: the grouping key that keeps games apart."""
    return ["game"] if "game" in frame else []


def _name(row: pd.Series, extras: list[str], game: str) -> str:
    text = compare.value_text
    side = "self" if row["opponent"] == "self" else f"player{text(row['player'])}"
    name = f"{game}_{side}" + "".join(f"_{letter}{text(row[key])}" for key, letter in NAME_PARTS
                                   if pd.notna(row.get(key)))
    shown = [k for k in extras if not (k == "opponent" and side == "self")]
    return " ".join([name] + [f"{key}={text(row[key]) if pd.notna(row[key]) else row[key]}" for key in shown])


def name_configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with a `config` column: the name of each row's configuration (see module doc)."""
    spelled = {"algorithm", "player", "seed", "m", "n", "k", *(key for key, _ in NAME_PARTS)}
    names = pd.Series(index=frame.index, dtype=object)
    for (_, game), runs in frame.groupby(["algorithm", games(frame)]):  # a board's extras its own
        knobs = [k for k in knob_columns(runs) if k != "seed"]
        extras = [k for k in knobs if k not in spelled and runs[k].nunique(dropna=False) > 1]
        # each distinct configuration named once (a big sweep has a million rows, a few thousand names)
        ids = runs.groupby(knobs, dropna=False, sort=False).ngroup().to_numpy()
        _, first = np.unique(ids, return_index=True)
        spelled_out = np.array([_name(row, extras, game) for _, row in runs.iloc[first].iterrows()],
                               dtype=object)
        names[runs.index] = spelled_out[ids]
    return frame.assign(config=names)


def exact_curves(data, stopped: bool = False) -> pd.DataFrame:
    """lab.results.evaluations of `table`'s runs (empty without evaluation columns), with a `game`
    column unless all are 3x3 (whose views keep their columns and names)."""
    curves = results.evaluations(table(data, stopped))
    return curves if curves.empty or (games(curves) == "ttt").all() else curves.assign(game=games(curves))


def final_evaluations(data) -> pd.DataFrame:
    """lab.analysis.compare's input: the last evaluation of every finished run, one row per (run, seat,
    `evaluated_vs`) with its knobs, `config`, `win`, `draw`, `loss`, `score` and `games` (NaN if exact)."""
    curves = exact_curves(data)
    if curves.empty:
        return pd.DataFrame()
    last = _last(curves)
    final = pd.concat([last.assign(evaluated_vs=vs, win=last[f"{vs}_win"], loss=last[f"{vs}_loss"],
                                   score=last[f"{vs}_win"] - last[f"{vs}_loss"], draw=last[f"{vs}_draw"],
                                   games=last[f"{vs}_games"] if f"{vs}_games" in last else np.nan)
                       for vs in evaluate.OPPONENTS], ignore_index=True)
    # by games, a board run plays random and its own opponent only: no onestep rates to compare
    return final[final["win"].notna()].reset_index(drop=True)


def seed_mean(curves: pd.DataFrame, column: str) -> pd.Series:
    """Mean over a configuration's runs (seeds) of `column` at each episodes count."""
    return curves.pivot_table(index="episodes", columns="run_id", values=column).mean(axis=1)


def episodes_to_reach(curves: pd.DataFrame, column: str, level: float) -> float:
    """The first evaluated episodes count at which the seed mean of `column` reaches `level`."""
    mean = seed_mean(curves, column)
    reached = mean.index[mean >= level]
    return float(reached[0]) if len(reached) else np.nan


def best_configurations(data) -> pd.DataFrame:
    """The best configuration (module doc) per (game, algorithm, evaluation opponent, seat): COLUMN_NOTES."""
    curves = exact_curves(data)
    if curves.empty:
        return pd.DataFrame()
    final = _last(curves)
    keys = [*by_game(final), "algorithm", "seat"]
    best = pd.DataFrame([_best(curves, runs, vs) for _, runs in final.groupby(keys)
                         for vs in evaluate.OPPONENTS if runs[f"{vs}_win"].notna().any()])
    if by_game(final):  # the game first, the intervals beside the rates
        order = ["game", *best.columns[:best.columns.get_loc("loss") + 1], "evaluation", "games", "win_low", "win_high"]
        best = best[order + [c for c in best.columns if c not in order]]
    return best


def _last(curves: pd.DataFrame) -> pd.DataFrame:
    """Each run's last evaluation point in each seat."""
    return curves[curves["episodes"] == curves.groupby(["run_id", "seat"])["episodes"].transform("max")]


def _best(curves: pd.DataFrame, runs: pd.DataFrame, vs: str) -> dict:
    """best_configurations' row of one (game, algorithm, seat) and evaluation opponent."""
    algorithm, seat = runs["algorithm"].iloc[0], runs["seat"].iloc[0]
    win, draw, loss = f"{vs}_win", f"{vs}_draw", f"{vs}_loss"
    runs = runs[runs[win].notna()].assign(score=runs[win] - runs[loss])
    per_config = runs.groupby("config").agg(
        score=("score", "mean"), win=(win, "mean"), draw=(draw, "mean"), loss=(loss, "mean"),
        win_sd=(win, "std"), seeds=("run_id", "nunique"), episodes=("episodes", "max"),
        losing_lines=("losing_lines", "mean"), total_lines=("total_lines", "mean"),
        optimal_move_rate=("optimal_move_rate", "mean"), train_seconds=("train_seconds", "mean"))
    best = per_config.sort_values(["score", "win", "episodes"], ascending=[False, False, True]).iloc[0]
    name = best.name
    seeds = runs[runs["config"] == name]
    top_run = seeds.sort_values("score").iloc[-1]
    reached = ceiling(top_run.get("game", "ttt"), vs, seat) or {"win": np.nan, "loss": np.nan}
    row = {
        "algorithm": algorithm, "seat": evaluate.SEATS[seat], "evaluated_vs": vs, "config": name,
        "trained_vs": top_run["opponent"], "seeds": int(best["seeds"]), "episodes": int(best["episodes"]),
        "win": best["win"], "draw": best["draw"], "loss": best["loss"],
        "ceiling_win": reached["win"], "ceiling_loss": reached["loss"],
        "episodes_to_95": episodes_to_reach(
            curves[(curves["config"] == name) & (curves["seat"] == seat)
                   & (curves["algorithm"] == algorithm)], win, 0.95 * reached["win"]),
        **{k: best[k] for k in ("win_sd", "losing_lines", "total_lines", "optimal_move_rate",
                                "train_seconds")},
        "best_run": top_run["run_id"],
    }
    if "game" not in runs:
        return row
    evaluated = top_run.get("evaluation")
    evaluated = evaluated if pd.notna(evaluated) else evaluate.EXACT
    return row | {"game": top_run["game"], "evaluation": evaluated} | _pooled_interval(seeds, vs)


def _pooled_interval(seeds: pd.DataFrame, vs: str) -> dict:
    """The 95% Wilson interval of the win rate over the games of every seed (by games only)."""
    games = seeds.get(f"{vs}_games", pd.Series(dtype=float)).dropna()
    if games.empty:
        return {"win_low": np.nan, "win_high": np.nan, "games": np.nan}
    wins = int(round((seeds.loc[games.index, f"{vs}_win"] * games).sum()))
    _, low, high = stats.wilson(wins, int(games.sum()))
    return {"win_low": low, "win_high": high, "games": int(games.min())}


COLUMN_NOTES = {
    "game": "the game (ttt: 3x3; mnk_<m>_<n>_<k>: the `game` group's board, a ceiling where the lab solves it, 4x4); each game ranked apart",
    "seat": "the agent's seat: X moves first",
    "evaluated_vs": "the opponent of the evaluation (exact, or by games on a board too big to enumerate)",
    "config": "the best configuration (highest final win - loss against `evaluated_vs`, seed mean)",
    "trained_vs": "the opponent it trained against",
    "win, draw, loss": "final rates (exact, or shares of games on a board too big to enumerate), mean over seeds",
    "win_loss": "final win - loss, mean over seeds [95% bootstrap interval; by games, resampling each seed's games too] (the ranking below)",
    "evaluation": "exact (every position) or games (lab.evaluation.evaluate); win, draw, loss by games are shares of games",
    "games": "by games: the games each run played against `evaluated_vs` (the fewest, if runs differ)",
    "win_low, win_high": "by games: 95% Wilson interval of the win rate over the games of every seed",
    "ceiling_win, ceiling_loss": "what a perfect expectimax player reaches",
    "episodes_to_95": "training episodes until the seed-mean win rate first reached 95% of ceiling_win (empty without a ceiling)",
    "win_sd": "seed spread: standard deviation of the final win rate over seeds",
    "losing_lines": "lines of play (every opponent reply) the agent loses, of total_lines; mean over seeds",
    "train_seconds": "training time of one run, mean over seeds",
    "best_run": "run id of its best seed: RESULTS_DIR/_checkpoints/<best_run>.npz",
}


def format_table(best: pd.DataFrame) -> pd.DataFrame:
    """The summary with rounded numbers as strings, ready to print."""
    shown = best.copy()
    if "games" in shown:  # by games: the label says by how many, as lab.analysis.compare.measured does
        shown["evaluation"] = [f"by {g:,.0f} games" if pd.notna(g) else e
                               for e, g in zip(shown["evaluation"], best["games"])]
    spelled = {**dict.fromkeys(("win", "draw", "loss", "win_low", "win_high", "ceiling_win", "ceiling_loss",
                                "win_sd", "optimal_move_rate"), "{:.3f}"),
               **dict.fromkeys(("games", "losing_lines", "total_lines"), "{:.0f}")}
    for column in [c for c in spelled if c in shown]:
        shown[column] = _text(shown[column], spelled[column])
    # without a ceiling (a board evaluated by games) there is no 95% of it to reach: empty, not "not reached"
    shown["episodes_to_95"] = _text(best["episodes_to_95"], "{:.0f}", "not reached").where(
        best["ceiling_win"].notna(), "")
    shown["train_seconds"] = shown["train_seconds"].map(seconds_text)
    if "win_loss" in shown:  # the one spelling of an interval, "(1 seed)" where there is none
        shown["win_loss"] = [compare.interval_text(v, low, high) for v, low, high
                             in zip(best["win_loss"], best["win_loss_low"], best["win_loss_high"])]
        shown = shown.drop(columns=["win_loss_low", "win_loss_high"])
    return shown.astype(str)


def _text(values: pd.Series, spelled: str, missing: str = "") -> pd.Series:
    return values.map(lambda v: missing if pd.isna(v) else spelled.format(v))


def seconds_text(value) -> str:
    """Seconds to 2 decimals, or 2 significant digits below 1 s: a run of 4 ms is 0.004, not 0.00."""
    if pd.isna(value):
        return ""
    return f"{value:.2f}" if value >= 1 or value == 0 else f"{value:.2g}"


def write_csv(table: pd.DataFrame, path: Path) -> None:
    """A table of the summary as CSV: seats as X and O, no column empty in every row (another
    algorithm's knobs)."""
    if "seat" in table and table["seat"].isin(evaluate.SEATS).all():
        table = table.assign(seat=table["seat"].map(evaluate.SEATS))
    table.dropna(axis=1, how="all").to_csv(path, index=False)


OPTIONAL_COLUMNS = ("game", "evaluation", "games", "win_low", "win_loss")
"""Columns COLUMN_NOTES explains only where the table has them."""


def markdown(shown: pd.DataFrame) -> str:
    lines = compare.markdown_table(list(shown.columns), list(shown.itertuples(index=False)))
    notes = [f"- `{key}`: {note}" for key, note in COLUMN_NOTES.items()
             if key.split(",")[0] not in OPTIONAL_COLUMNS or key.split(",")[0] in shown]
    return "\n".join(lines + [""] + notes) + "\n"


def stopped_note(data) -> str:
    """What the summary says of the runs a search scheduler stopped early (status `stopped`), if any."""
    frame = data if isinstance(data, pd.DataFrame) else results.load(data)
    count = frame.loc[frame["status"] == "stopped", "run_id"].nunique()
    return (f"{count} runs stopped early by a search scheduler are left out: their last evaluation "
            "is not after their full training (their curves are in the figures).\n" if count else "")


EXTRA_NOTE = ("Intervals, rankings and knob effects need the report extra (scipy): "
              "pip install 'tictactoe-lab[report]'.\n")


def comparisons(data) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """compare.configurations and knob_effects of the finished runs (each game apart); None without scipy."""
    if not stats.available():
        return None
    final = final_evaluations(data)
    if final.empty:
        return pd.DataFrame(), pd.DataFrame()
    if not by_game(final):
        knobs = compared_knobs(final)
        return compare.configurations(final, knobs), compare.knob_effects(final, knobs)
    # each game compared apart, its tables with a `game` column (a board's rates are not 3x3's)
    tables = [(compare.configurations(mine, compared_knobs(mine)).assign(game=name),
               compare.knob_effects(mine, compared_knobs(mine)).assign(game=name))
              for name, mine in final.groupby("game")]
    return tuple(pd.concat(parts, ignore_index=True) for parts in zip(*tables))


FOLDER = "folder"
"""The column naming each run's folder in a table of several results_dirs (lab.analysis.report's),
compared as a knob."""


def compared_knobs(frame: pd.DataFrame) -> list[str]:
    """The knobs configurations of one algorithm and seat can differ in: not the seed, the group's
    algorithm, nor `player` (it follows from the opponent); the folder where the table has several."""
    return [*([FOLDER] if FOLDER in frame else []),
            *(k for k in knob_columns(frame) if k not in ("seed", "algorithm", "player", "game"))]


def _with_interval(best: pd.DataFrame, configs: pd.DataFrame) -> pd.DataFrame:
    """The best configurations with their mean win - loss's interval."""
    if best.empty:
        return best
    intervals = configs.assign(seat=configs["seat"].map(evaluate.SEATS)).rename(columns={
        "score_mean": "win_loss", "score_mean_low": "win_loss_low", "score_mean_high": "win_loss_high"})
    keys = ["algorithm", "seat", "evaluated_vs", "config"]
    best = best.merge(intervals[keys + ["win_loss", "win_loss_low", "win_loss_high"]], on=keys, how="left")
    order = list(best.columns[:best.columns.get_loc("loss") + 1]) + ["win_loss", "win_loss_low", "win_loss_high"]
    return best[order + [c for c in best.columns if c not in order]]


def write_summary(results_dir, out_dir=None, frame=None, compared=None) -> tuple[pd.DataFrame, list[Path]]:
    """Write summary.csv and summary.md (in RESULTS_DIR/_summary unless out_dir is given), with scipy
    also configurations.csv and knobs.csv; the table and the files. `frame` and `compared`
    (comparisons() of it) spare computing them again."""
    frame = results.load(results_dir) if frame is None else frame
    compared = comparisons(frame) if compared is None else compared
    best = best_configurations(frame)
    out_dir = Path(out_dir or Path(results_dir) / SUMMARY)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, md = out_dir / "summary.csv", out_dir / "summary.md"
    written, sections = [csv, md], EXTRA_NOTE
    if compared is not None and not compared[0].empty:
        configs, effects = compared
        best = _with_interval(best, configs)
        write_csv(configs, out_dir / "configurations.csv")
        write_csv(effects, out_dir / "knobs.csv")
        written += [out_dir / "configurations.csv", out_dir / "knobs.csv"]
        sections = compare.markdown(configs, effects)
    write_csv(best, csv)
    note = stopped_note(frame)
    head = markdown(format_table(best)) if not best.empty else "No evaluations in these results.\n"
    md.write_text(head + ("\n" + note if note else "") + ("\n" + sections if not best.empty else ""))
    return best, written


_CLI_DOC = """The best configuration of each algorithm per evaluation opponent and seat (lab.analysis.summary):
final exact rates, episodes to reach 95% of the ceiling, losing lines, training seconds, seed
spread. Prints the table and writes into RESULTS_DIR/_summary (or --out DIR): summary.csv and
summary.md, and with the report extra (scipy) configurations.csv (every configuration, ranked, with
intervals) and knobs.csv (each swept knob's effect).

    lab-summary RESULTS_DIR [--out DIR]"""


@one_line(results.ResultsError)
def main() -> None:
    """The command line: `lab-summary RESULTS_DIR ...`."""
    parser = ArgumentParser(description=_CLI_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--out", metavar="DIR", help="the folder to write summary.csv, summary.md, configurations.csv "
                                                     "and knobs.csv into (default: RESULTS_DIR/_summary)")
    args = parser.parse_args()
    results_dir_argument(args.results_dir)
    out_folder_argument(args.out)
    best, paths = write_summary(args.results_dir, args.out)
    if best.empty:
        print("No exact evaluations (eval_p1_* / eval_p2_* columns) in these results.")
    else:
        with pd.option_context("display.width", 250, "display.max_columns", None,
                               "display.max_colwidth", 60):
            print(format_table(best).to_string(index=False))
    print(stopped_note(args.results_dir), end="")
    for path in paths:
        print(path)

