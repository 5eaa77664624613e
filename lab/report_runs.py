"""The report's drill-down (lab.report): from a configuration's row to its runs, each run's own
curves, its checkpoint, and the command that trains the configuration's runs again.

A configuration is a run's knobs without its seed; its runs are its seeds. The command names
every knob the runs set (not only those the sweep varied), so it does not depend on the defaults
of the day, and the seeds the configuration ran: `python -m lab.sweep --multirun algorithm=q_table
... seed=0,1,2 results_dir=reproduced`. The lab's runs are deterministic, so it gives the same
numbers.
"""

import shlex

import numpy as np
import pandas as pd

from lab import evaluate, results, summary

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
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def command(runs: pd.DataFrame) -> str:
    """The command that trains a configuration's runs (rows of its runs, one or more each) again."""
    first = runs.iloc[0]
    knobs = [k for k in summary.knob_columns(runs) if k not in ("seed", *BOARD) and pd.notna(first[k])]
    overrides = [f"{k}={_value(first[k])}" for k in knobs]
    game = summary.game(first)
    if game != "ttt":
        overrides.insert(1, f"game={game}")
    seeds = ",".join(str(int(s)) for s in sorted(runs["seed"].unique()))
    argv = ["python", "-m", "lab.sweep", "--multirun", *overrides, f"seed={seeds}", f"results_dir={REPRODUCED}"]
    return shlex.join(argv)


def _bins(runs: int, kinds: int) -> int:
    return int(np.clip(RUN_NUMBERS // max(1, runs * kinds * 2), FEWEST_POINTS, MOST_POINTS))


def _binned_runs(points: pd.DataFrame, value: str, bins: int) -> pd.DataFrame:
    """Each run's points of `value` cut into at most `bins` consecutive bins, averaged within."""
    points = points.sort_values(["run_id", "episodes"])
    count = points.groupby("run_id")["episodes"].transform("size").to_numpy()
    place = points.groupby("run_id").cumcount().to_numpy()
    points = points.assign(bin=place * np.minimum(bins, count) // count, value=points[value])
    return points.groupby(["algorithm", "seat", "config", "run_id", "bin"], sort=True).agg(
        episodes=("episodes", "max"), value=("value", "mean")).reset_index()


def run_curves(frame: pd.DataFrame) -> dict:
    """{(algorithm, seat, config): {run_id: {kind: [episodes, values]}}} of every finished run:
    its training win rate and its win - loss against each opponent it was evaluated against."""
    named = summary.table(frame)
    keys = ["algorithm", "config", "run_id", "episodes", "opponent", "player"]
    exact = results.evaluations(named[keys + [c for c in named if c.startswith("eval_p")]])
    bins = _bins(named["run_id"].nunique(), 1 + len(evaluate.OPPONENTS))
    parts = {vs: _binned_runs(exact.assign(score=exact[f"{vs}_win"] - exact[f"{vs}_loss"]).dropna(subset=["score"]),
                              "score", bins) for vs in evaluate.OPPONENTS}
    training = [named.loc[named["player"].fillna(seat) == seat, keys].assign(
        seat=seat, agent_win_rate=named[f"p{seat}_win_rate"]) for seat in (1, 2)]
    parts["train"] = _binned_runs(pd.concat(training), "agent_win_rate", bins)
    out: dict = {}
    for kind, table in parts.items():
        values = np.round(table["value"].to_numpy(float), 4)
        for (algorithm, seat, config, run_id), rows in table.groupby(["algorithm", "seat", "config", "run_id"]).indices.items():
            curve = [table["episodes"].to_numpy()[rows].astype(int).tolist(), values[rows].tolist()]
            out.setdefault((algorithm, seat, config), {}).setdefault(run_id, {})[kind] = curve
    return out


def drill_down(frame: pd.DataFrame, results_dir) -> dict:
    """{(algorithm, seat, config): its runs (id, seed, curves), the folder of their checkpoints
    and the command that trains them again} of every configuration with a finished run."""
    firsts = summary.table(frame).drop_duplicates("run_id")
    by_config = dict(iter(firsts.groupby(["algorithm", "config"])))
    checkpoints = f"{results_dir}/{results.CHECKPOINTS}"
    out = {}
    for (algorithm, seat, config), curves in run_curves(frame).items():
        runs = by_config[algorithm, config].sort_values("seed")
        out[algorithm, seat, config] = {
            "command": command(runs), "checkpoints": checkpoints,
            "runs": [{"id": r, "seed": int(s), "curves": curves.get(r, {})} for r, s in zip(runs["run_id"], runs["seed"])]}
    return out
