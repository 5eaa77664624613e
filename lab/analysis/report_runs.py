"""The report's drill-down (lab.analysis.report): from a configuration's row to its runs (its seeds), each
run's own curves, its checkpoint, and the command that trains them again, `python -m lab.sweep
--multirun algorithm=q_table ... seed=0,1,2 results_dir=reproduced`: every knob the runs set (not only
those the sweep varied, so that it does not depend on the defaults of the day). The lab's runs are
deterministic, so it gives the same numbers."""

import shlex

import numpy as np
import pandas as pd

from lab import results
from lab.analysis import summary
from lab.evaluation import evaluate

RUN_NUMBERS = 200_000
"""The runs' curves' numbers in one report at most (about 1.5 MB of JSON)."""
FEWEST_POINTS, MOST_POINTS = 4, 50
REPRODUCED = "reproduced"
"""The results_dir the reproduce command writes to (a new one, beside the original's runs)."""
BOARD = ("m", "n", "k")
"""Knobs that the `game` group sets: the command names the game instead."""


def _value(value) -> str:
    """A knob's value as a Hydra override spells it, exactly (a float's full repr)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value)  # an int's digits (numpy's too), or a word


def command(runs: pd.DataFrame) -> str:
    """The command that trains a configuration's runs (their rows, one or more each) again."""
    first = runs.iloc[0]
    knobs = [k for k in summary.knob_columns(runs) if k not in ("seed", *BOARD) and pd.notna(first[k])]
    overrides = [f"{k}={_value(first[k])}" for k in knobs]
    game = summary.games(runs).iloc[0]
    if game != "ttt":
        overrides.insert(1, f"game={game}")
    seeds = ",".join(str(int(s)) for s in sorted(runs["seed"].unique()))
    argv = ["python", "-m", "lab.sweep", "--multirun", *overrides, f"seed={seeds}", f"results_dir={REPRODUCED}"]
    return shlex.join(argv)


PER_OPPONENT = ("score", "win", "draw", "loss")
"""Measures taken against each evaluation opponent (a panel each); the others are the agent's own."""


def curve_points(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """The finished runs of a table (summary.table), their training points in each seat they
    played (`train`: the agent's win rate there; `train_seconds` where the table has it), their
    evaluation points (lab.results.evaluations, with win - loss per opponent) and the curves' kinds
    there: `random` (win - loss), `random_win`, ..., and the agent's own measures where the results
    have them (exact on 3x3)."""
    named = summary.table(frame)
    keys = ["algorithm", "config", "run_id", "episodes", "opponent", "player"]
    exact = results.evaluations(named[keys + [c for c in named if c.startswith("eval_p")]])
    exact = exact.assign(**{vs: exact[f"{vs}_win"] - exact[f"{vs}_loss"] for vs in evaluate.OPPONENTS})
    kept = keys + [c for c in ("train_seconds",) if c in named]
    training = pd.concat([named.loc[named["player"].fillna(seat) == seat, kept].assign(
        seat=seat, train=named[f"p{seat}_win_rate"]) for seat in (1, 2)])
    kinds = [vs if m == "score" else f"{vs}_{m}" for vs in evaluate.OPPONENTS for m in PER_OPPONENT]
    kinds += [m for m in ("optimal_move_rate", "losing_lines") if m in exact and exact[m].notna().any()]
    return named, training, exact, kinds


def binned(points: pd.DataFrame, columns: dict[str, str], bins: int) -> pd.DataFrame:
    """Each run's points cut into at most `bins` consecutive bins; per bin its last episodes and
    each of `columns` ({column: how a bin takes it, "mean" or "last"})."""
    points = points.sort_values(["config", "run_id", "episodes"])  # a run id can be in two folders compared
    runs = points.groupby(["config", "run_id"], sort=False)
    count, place = runs["episodes"].transform("size").to_numpy(), runs.cumcount().to_numpy()
    points = points.assign(bin=place * np.minimum(bins, count) // count)
    return points.groupby(["algorithm", "seat", "config", "run_id", "bin"], sort=True).agg(
        episodes=("episodes", "max"), **{c: (c, how) for c, how in columns.items()}).reset_index()


TRAINING = ("train", "train_seconds")
"""A run's measures at its training points: its training games' win rate, its cumulative seconds."""


def drill_down(points: tuple, folders: dict) -> tuple[dict, dict]:
    """{"train": TRAINING, "eval": the kinds of curve_points}, and {(algorithm, seat, config): its runs
    (id, seed and {source: [episodes, *its columns' values]}, null where a run has no such curve),
    their checkpoints' folder and command} of curve_points' runs. Positional, not by name: a
    3,000-run report would spend a megabyte on the names. `folders`: the results_dirs by label
    (summary.FOLDER's values)."""
    named, training, exact, kinds = points
    columns = {"train": list(TRAINING), "eval": kinds}
    numbers = named["run_id"].nunique() * (2 + len(TRAINING) + len(kinds))  # per bin of every run
    bins = int(np.clip(RUN_NUMBERS // max(1, numbers), FEWEST_POINTS, MOST_POINTS))
    sources = {"train": binned(training, {"train": "mean", "train_seconds": "last"}, bins),
               "eval": binned(exact, dict.fromkeys(kinds, "mean"), bins)}
    curves: dict = {}
    for source, table in sources.items():
        values = [np.round(table[k].to_numpy(float), 4) for k in columns[source]]
        episodes = table["episodes"].to_numpy().astype(int)
        for name, rows in table.groupby(["algorithm", "seat", "config", "run_id"]).indices.items():
            curves.setdefault(name[:3], {}).setdefault(name[3], {})[source] = [episodes[rows].tolist()] + [
                None if np.isnan(v[rows]).all() else np.where(np.isnan(v[rows]), None, v[rows]).tolist() for v in values]
    by_config = dict(iter(named.drop_duplicates(["config", "run_id"]).groupby(["algorithm", "config"])))
    out = {}
    for (algorithm, seat, config), points in curves.items():
        runs = by_config[algorithm, config].sort_values("seed")
        folder = folders[runs[summary.FOLDER].iloc[0]] if summary.FOLDER in runs else next(iter(folders.values()))
        out[algorithm, seat, config] = {
            "command": command(runs), "checkpoints": f"{folder}/{results.CHECKPOINTS}",
            "runs": [{"id": r, "seed": int(s), **points.get(r, {})} for r, s in zip(runs["run_id"], runs["seed"])]}
    return columns, out
