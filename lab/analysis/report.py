"""The interactive report of a results directory: RESULTS_DIR/_report/index.html, one file that
opens offline in a browser (Plotly's script and the data inlined). What it shows is in
docs/analysis.md ("The interactive report"). Everything is aggregated before it is written (curves
binned within CURVE_NUMBERS numbers), so a report stays a few MB whatever the runs' count. Needs
the `report` extra (plotly, scipy); written by `lab-report RESULTS_DIR` (_CLI_DOC) and at a sweep's
end (`analyse`)."""

import argparse
import datetime
import json
import shlex
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from lab import results, stats
from lab.analysis import compare, knob_figures, plots, search_figures, summary
from lab.evaluation import evaluate
from lab.cli import ArgumentParser, one_line, results_dir_argument, require_writable
from lab.files import write_atomic
from lab.results import search_record

REPORT = "_report"
"""Subfolder of a results directory for the report (skipped by pandas.read_parquet)."""
CURVE_POINTS = 50
CURVE_NUMBERS = 450_000
"""The curves' numbers in one report at most (about 3 MB of JSON): with the runs' curves
(RUN_NUMBERS) and Plotly's 4.8 MB, a 3,000-run grid's report stays under 10 MB."""
WEBGL_FROM = 1000
"""Configurations from which the knob view draws with WebGL (SVG slows down past this)."""
RUN_NUMBERS = 200_000
"""The runs' curves' numbers in one report at most (about 1.5 MB of JSON)."""
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
    """The command that trains a configuration's runs (their rows, one or more each) again: every
    knob the runs set, not only those the sweep varied, so that it does not depend on the defaults
    of the day."""
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
    """The finished runs of a table (summary.table), their training points in each seat they played
    (`train`: the agent's win rate there), their evaluation points (with win - loss per opponent) and
    the curves' kinds there: `random` (win - loss), `random_win`, ..., the agent's own measures."""
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
    """{"train": TRAINING, "eval": curve_points' kinds}, and {(algorithm, seat, config): its runs (id,
    seed and {source: [episodes, *the columns' values, null where none]}), checkpoints' folder and
    command}. Positional, not by name: a 3,000-run report would spend a megabyte on the names."""
    named, training, exact, kinds = points
    columns = {"train": list(TRAINING), "eval": kinds}
    numbers = named["run_id"].nunique() * (2 + len(TRAINING) + len(kinds))  # per bin of every run
    bins = int(np.clip(RUN_NUMBERS // max(1, numbers), 4, CURVE_POINTS))
    sources = {"train": binned(training, {"train": "mean", "train_seconds": "last"}, bins),
               "eval": binned(exact, dict.fromkeys(kinds, "mean"), bins)}
    per_run: dict = {}
    for source, table in sources.items():
        values, episodes = table[columns[source]].to_numpy(float), table["episodes"].to_numpy().astype(int)
        for name, rows in table.groupby(["algorithm", "seat", "config", "run_id"]).indices.items():
            per_run.setdefault(name[:3], {}).setdefault(name[3], {})[source] = [episodes[rows].tolist()] + [
                None if np.isnan(v).all() else _rounded(v) for v in values[rows].T]
    by_config = dict(iter(named.drop_duplicates(["config", "run_id"]).groupby(["algorithm", "config"])))
    out = {}
    for (algorithm, seat, config), points in per_run.items():
        runs = by_config[algorithm, config].sort_values("seed")
        folder = folders[runs[summary.FOLDER].iloc[0]] if summary.FOLDER in runs else next(iter(folders.values()))
        out[algorithm, seat, config] = {
            "command": command(runs), "checkpoints": f"{folder}/{results.CHECKPOINTS}",
            "runs": [{"id": r, "seed": int(s), **points.get(r, {})} for r, s in zip(runs["run_id"], runs["seed"])]}
    return columns, out


def _binned(points: pd.DataFrame, value: str, bins: int, within: str = "mean") -> pd.DataFrame:
    """The seed mean and band of `value` per configuration and bin of binned's points."""
    per_run = binned(points, {value: within}, bins)
    seeds = per_run.groupby(["algorithm", "seat", "config", "bin"]).agg(
        episodes=("episodes", "max"), mean=(value, "mean"), sd=(value, "std"), n=(value, "size"),
    ).reset_index()
    half = plots.t975(seeds["n"] - 1) * seeds["sd"] / np.sqrt(seeds["n"])
    half = half.where(seeds["n"] >= plots.BAND_SEEDS, seeds["sd"] / np.sqrt(2))  # 2 seeds: their range
    return seeds.assign(half=half.where(seeds["n"] > 1, 0.0))


METRICS = {"score": "win - loss", "win": "win rate", "draw": "draw rate", "loss": "loss rate",
           "optimal_move_rate": "optimal-move rate", "losing_lines": "losing lines",
           "train_seconds": "training seconds"}
"""The page's metric menu for the curves."""


def curves(points: tuple, configurations: int) -> dict:
    """{(algorithm, seat, config): {kind: [episodes, mean, half]}} of every configuration's finished
    runs, from curve_points: TRAINING's kinds and every evaluation kind it names."""
    _, training, exact, kinds = points
    bins = int(np.clip(CURVE_NUMBERS // max(1, configurations * (len(kinds) + 2) * 3), 8, CURVE_POINTS))
    parts = {kind: _binned(exact.dropna(subset=[kind]), kind, bins) for kind in kinds}
    parts["train"] = _binned(training, "train", bins)
    if "train_seconds" in training:  # cumulative to each iteration: the time the curves took (their clock)
        parts["train_seconds"] = _binned(training, "train_seconds", bins, within="last")
    out: dict = {}
    for kind, table in parts.items():  # a configuration's rows in the order of their bins
        episodes, values = table["episodes"].to_numpy(int), table[["mean", "half"]].to_numpy(float)
        for name, rows in table.groupby(["algorithm", "seat", "config"]).indices.items():
            out.setdefault(name, {})[kind] = [episodes[rows].tolist(), *map(_rounded, values[rows].T)]
    return out


def _rounded(values) -> list:
    """Four decimals, None for missing (JSON has no NaN)."""
    values = np.round(np.asarray(values, dtype=float), 4)
    return np.where(np.isnan(values), None, values).tolist()


STATISTIC_COLUMNS = {"rank": "rank", "score_mean": "mean", "score_mean_low": "mean_low",
                     "score_mean_high": "mean_high", "score_iqm": "iqm", "score_iqm_low": "iqm_low",
                     "score_iqm_high": "iqm_high", "win_mean": "win", "loss_mean": "loss",
                     "improvement": "p", "improvement_low": "p_low", "improvement_high": "p_high"}
"""lab.analysis.compare.configurations' columns in the report, per evaluation opponent, and their names there."""


def _digits(column: str) -> int:
    """Decimals of a statistics column as summary.md shows it (the page prints them as they come)."""
    return 0 if column == "rank" else compare.DIGITS["improvement" if column.startswith("improvement") else "score"]


def _group(configs: pd.DataFrame, effects: pd.DataFrame, all_curves: dict, scales: dict, runs: dict) -> dict:
    """One algorithm and seat (of one game, on bigger boards): its table, curves and knob views."""
    algorithm, seat = configs["algorithm"].iloc[0], configs["seat"].iloc[0]
    opponents = sorted(configs["evaluated_vs"].unique())
    first = configs[configs["evaluated_vs"] == opponents[0]].sort_values("config").reset_index(drop=True)
    knobs = summary.compared_knobs(first)
    factors = compare.factors(first, knobs)
    shown = [k for f in factors for k in f]
    table = {"config": first["config"].tolist(), "seeds": first["seeds"].astype(int).tolist(),
             "episodes": first["episodes"].astype(int).tolist(),
             "knobs": {k: [compare.value_text(v) for v in first[k]] for k in shown}}
    views = {}
    for vs in opponents:
        rows = configs[configs["evaluated_vs"] == vs].set_index("config").loc[first["config"]].reset_index()
        table[vs] = {name: [compare.rounded(v, _digits(column)) for v in rows[column]]
                     for column, name in STATISTIC_COLUMNS.items()}
        mine = compare.rows_of(effects, {"algorithm": algorithm, "seat": seat, "evaluated_vs": vs,
                                         **{k: configs[k].iloc[0] for k in summary.by_game(configs)}})
        views[vs] = {"knobs": json.loads(knob_view(rows, mine, factors, scales).to_json()),
                     "parallel": json.loads(parallel_view(rows, factors, vs, scales).to_json()),
                     "verdict": compare.verdict(rows.sort_values("rank")),
                     "importance": importance(rows, factors),
                     "sentences": [compare.knob_sentence(effect, int(rows["seeds"].min()))
                                   for _, effect in mine.groupby("knob", sort=False)] if len(mine) else []}
    game = f"{configs['game'].iloc[0]}: " if "game" in configs else ""
    measured = {vs: compare.measured(configs[configs["evaluated_vs"] == vs]) for vs in opponents}
    # the page opens on the opponent most runs trained against, where evaluated against it (else OneStep)
    trained = first["opponent"].mode() if "opponent" in first else pd.Series(dtype=object)
    objective = next((vs for vs in [*trained, "onestep"] if vs in opponents), opponents[0])
    mine = [all_curves.get((algorithm, seat, name), {}) for name in first["config"]]
    metrics = [[m, label] for m, label in METRICS.items() if m in PER_OPPONENT or any(m in c for c in mine)]
    return {"label": f"{game}{algorithm}, agent as {evaluate.SEATS[seat]}", "opponents": opponents,
            "measured": measured, "objective": objective, "metrics": metrics,
            "factors": factors, "table": table, "views": views, "curves": mine,
            "runs": [runs.get((algorithm, seat, name)) for name in first["config"]]}


def importance(rows: pd.DataFrame, factors: list[list[str]]) -> dict:
    """lab.stats.importance of the configurations' mean win - loss (a factor of many numeric values
    binned by quantiles, as a search's interval knob), or the words saying why there is none."""
    bins = {}
    for factor in factors:
        values = compare.factor_values(rows, factor)
        numeric = pd.to_numeric(rows[factor[0]], errors="coerce") if len(factor) == 1 else None
        many = values.nunique() > compare.MAX_VALUES and numeric is not None and numeric.notna().all()
        bins[" x ".join(factor)] = (pd.qcut(numeric.rank(method="first"), min(10, len(rows) // 4), labels=False)
                                    if many else values).to_numpy()
    found = stats.importance(bins, rows["score_mean"].to_numpy(float)) if bins else {}
    if not found:
        return {"note": f"No knob importance: too few configurations ({len(rows)}; it needs at least "
                        f"{stats.IMPORTANCE_LEAST})." if bins else "No knob varies."}
    return {"knobs": list(found), **{name: [compare.rounded(v[i], 3) for v in found.values()]
                                     for i, name in enumerate(("share", "low", "high"))},
            "note": "The share of the variance of the configurations' mean win - loss that each knob explains "
                    "alone (fANOVA's first-order term), with its 95% bootstrap interval over the configurations."}


def knob_view(rows: pd.DataFrame, effects: pd.DataFrame, factors: list[list[str]], scales: dict):
    """Plotly: a panel per factor, each configuration a point with its interval and its row number
    (customdata, so that a selection filters the table); `scales` as knob_figures.positions'."""
    from plotly import graph_objects as go  # plotly (the report extra): loaded to draw the report only
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=max(1, len(factors)), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=[" x ".join(f) for f in factors])
    Scatter = go.Scattergl if len(rows) >= WEBGL_FROM else go.Scatter
    y = rows["score_mean"].to_numpy(float)
    for col, factor in enumerate(factors, 1):
        x, kind, labels = knob_figures.positions(rows, factor, scales)
        x = [labels[int(i)] for i in x] if kind == "category" else x
        fig.add_trace(Scatter(
            x=x, y=y, mode="markers", customdata=np.arange(len(rows)), text=rows["config"],
            marker={"size": 6, "color": y, "colorscale": "Viridis", "opacity": 0.75},
            error_y={"type": "data", "array": rows["score_mean_high"] - y, "arrayminus": y - rows["score_mean_low"],
                     "thickness": 0.8, "width": 0, "color": "rgba(60,60,60,0.35)"},
            hovertemplate="%{text}<br>win - loss %{y:.3f}<extra></extra>", showlegend=False), row=1, col=col)
        mine = compare.rows_of(effects, {"knob": " x ".join(factor)})
        if len(mine):
            fig.add_trace(go.Scatter(
                x=mine["value"] if kind == "category" else pd.to_numeric(mine["value"]), y=mine["iqm"],
                # open diamonds: the configurations' points at the same value stay visible inside
                mode="markers", marker={"symbol": "diamond-open", "size": 12, "color": "black", "line": {"width": 2}},
                error_y={"type": "data", "array": mine["iqm_high"] - mine["iqm"], "arrayminus": mine["iqm"] - mine["iqm_low"]},
                hovertemplate="IQM of every run with %{x}: %{y:.3f}<extra></extra>", showlegend=False), row=1, col=col)
        axis = ({"type": "category", "categoryorder": "array", "categoryarray": labels} if kind == "category"
                else {"type": "log", "dtick": 1} if kind == "log" else {"type": kind})  # log: decades only
        fig.update_xaxes(row=1, col=col, **axis)
    fig.update_yaxes(title_text=f"final win - loss, {compare.measured(rows)}", row=1, col=1)
    fig.update_layout(dragmode="select", height=380, margin={"t": 40, "b": 40, "l": 60, "r": 20})
    return fig


def parallel_view(rows: pd.DataFrame, factors: list[list[str]], vs: str, scales: dict):
    """Plotly's parallel coordinates: an axis per factor and one of the objective; brushing an axis
    filters the table (from the values as plain lists, not Plotly's packed arrays)."""
    from plotly import graph_objects as go  # plotly (the report extra): loaded to draw the report only

    dimensions = []
    for factor in factors:
        x, kind, labels = knob_figures.positions(rows, factor, scales)
        if kind == "category":
            dimensions.append({"label": " x ".join(factor), "values": x.tolist(), "tickvals": list(range(len(labels))),
                               "ticktext": labels})
        elif kind == "log":  # an axis of log10(value), its ticks labelled with values
            ticks = np.unique(x)
            ticks = ticks if len(ticks) <= 8 else ticks[np.linspace(0, len(ticks) - 1, 6).round().astype(int)]
            dimensions.append({"label": f"{factor[0]} (log)", "values": np.log10(x).tolist(),
                               "tickvals": np.log10(ticks).tolist(),
                               "ticktext": [compare.value_text(float(f"{t:.3g}")) for t in ticks]})
        else:
            dimensions.append({"label": factor[0], "values": x.tolist()})
    score = rows["score_mean"].to_numpy(float)
    dimensions.append({"label": f"win - loss vs {evaluate.OPPONENT_TITLES[vs]}", "values": _rounded(score)})
    fig = go.Figure(go.Parcoords(line={"color": score, "colorscale": "Viridis", "showscale": True},
                                 dimensions=dimensions))
    fig.update_layout(height=380, margin={"t": 50, "b": 30, "l": 60, "r": 110})
    return fig


def page(data: dict) -> str:
    """The HTML page: the template with Plotly's script and the data inlined."""
    from plotly.offline import get_plotlyjs  # plotly (the report extra): loaded to draw the report only

    template = resources.files("lab.analysis").joinpath("report.html").read_text()
    before, rest = template.split("/*PLOTLY*/")
    middle, after = rest.split("/*DATA*/")
    # "</" inside a script would end it; JSON reads "<\/" as "</"
    inline = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return before + get_plotlyjs().replace("</script", "<\\/script") + middle + inline + after


def build(frame: pd.DataFrame, compared: tuple[pd.DataFrame, pd.DataFrame], results_dirs: list) -> dict:
    """Everything the page shows: a group per (game, algorithm, seat), most configurations first.
    `frame`: the runs of one results_dir, or of several as `together` puts them."""
    configs, effects = compared
    count = configs.drop_duplicates(["algorithm", "seat", "config"]).shape[0]
    points = curve_points(frame)  # finished runs, as lab.analysis.compare's
    all_curves = curves(points, count)
    scales = {k: v for results_dir in results_dirs for k, v in search_record.scales(results_dir).items()}
    keys = [*summary.by_game(configs), "algorithm", "seat"]  # bigger boards: each game apart
    folders = [Path(d).resolve() for d in results_dirs]
    run_columns, runs = drill_down(points, dict(zip(labels(results_dirs), folders)))
    groups = [_group(mine, effects, all_curves, scales, runs) for _, mine in configs.groupby(keys)]
    groups.sort(key=lambda g: -len(g["table"]["config"]))
    status = frame.groupby(["config", "run_id"], sort=False)["status"].last().value_counts()
    return {"results_dirs": list(map(str, folders)),
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "runs": {s: int(status.get(s, 0)) for s in ("finished", "failed", "stopped")},
            "groups": groups, "run_columns": run_columns,
            "search": search_figures.view(results_dirs[0]) if len(results_dirs) == 1 else None}


def labels(results_dirs: list) -> list[str]:
    """Each results_dir's folder name, or the paths as given where two folders have the same name."""
    names = [Path(d).resolve().name for d in results_dirs]
    return names if len(set(names)) == len(names) else [str(d) for d in results_dirs]


def together(results_dirs: list) -> pd.DataFrame:
    """The runs of several results_dirs in one table, each configuration named within its folder and
    then with its label in front and in summary.FOLDER: equal knobs in two folders stay two."""
    if len({Path(d).resolve() for d in results_dirs}) < len(results_dirs):
        raise ValueError("a results_dir is named twice: name each folder to compare once")
    parts = []
    for label, results_dir in zip(labels(results_dirs), results_dirs):
        frame = summary.name_configurations(results.load(results_dir))
        parts.append(frame.assign(config=label + ": " + frame["config"], **{summary.FOLDER: label}))
    return pd.concat(parts, ignore_index=True)


def write_report(results_dir, out=None, frame=None, compared=None) -> Path:
    """Write the report (RESULTS_DIR/_report/index.html unless `out` names a file) of a results_dir, or
    of a list of them on one page (`together`); its path. `frame` and `compared`
    (summary.comparisons of it) spare computing them again."""
    results_dirs = results_dir if isinstance(results_dir, list) else [results_dir]
    if frame is None:
        frame = together(results_dirs) if len(results_dirs) > 1 else results.load(results_dirs[0])
    frame = frame if "config" in frame else summary.name_configurations(frame)
    out = Path(out) if out else Path(results_dirs[0]) / REPORT / "index.html"
    compared = summary.comparisons(frame) if compared is None else compared
    if compared is None or compared[0].empty:
        raise ValueError(f"no finished run with an exact evaluation in {' or '.join(map(str, results_dirs))}: "
                         "nothing to report")
    write_atomic(out, page(build(frame, compared, results_dirs)).encode("utf-8"))  # never half a page
    return out


EXTRA_NOTE = "no interactive report: it needs the report extra (pip install 'tictactoe-lab[report]')"


def has_extra() -> bool:
    """Whether the `report` extra (plotly for the page, scipy for the intervals) is installed."""
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return stats.available()


def analyse(results_dir, every: bool = False) -> None:
    """What a sweep writes into a results directory at its end, from one read of its table: the
    figures (`every`: all of them), the summary and the report; prints where they are. Never
    raises: the runs are stored whatever happens here."""
    results_dir = Path(results_dir)
    try:
        frame = summary.name_configurations(results.load(results_dir))  # named once for every view
        compared = summary.comparisons(frame)
        left_out: list = []
        figures = plots.all_figures(results_dir, frame=frame, compared=compared, every=every, left_out=left_out)
        _, summary_files = summary.write_summary(results_dir, frame=frame, compared=compared)
    except Exception as exc:  # noqa: BLE001 - a plotting problem must not lose a sweep
        print(f"could not draw the figures of {results_dir} ({type(exc).__name__}: {exc}); "
              f"try: python analysis/plot_winrates.py {results_dir}", file=sys.stderr)
        return
    print(f"{len(figures)} figures in {results_dir / results.FIGURES}")
    if left_out:
        print(plots.left_out_note(len(left_out)))
    print(f"summary in {summary_files[1]} (and .csv)")
    if not has_extra():
        print(EXTRA_NOTE)
    elif compared is not None and not compared[0].empty:
        try:
            print(f"report in {write_report(results_dir, frame=frame, compared=compared)} (open it in a browser)")
        except Exception as exc:  # noqa: BLE001 - as above
            print(f"could not write the report of {results_dir} ({type(exc).__name__}: {exc}); "
                  f"try: lab-report {results_dir}", file=sys.stderr)
    print(f"agents in {results_dir / results.CHECKPOINTS} (play one: python -m lab.play CHECKPOINT)")


_CLI_DOC = """The interactive report of a results directory (lab.analysis.report): one HTML file that opens
offline, with the configurations' table (sortable, filtered by words), their curves, the knob
effects and parallel coordinates (selecting in either filters the table). Given several
results_dirs, one page compares their configurations, each named with its folder's.

    lab-report RESULTS_DIR [--out FILE]     (default: RESULTS_DIR/_report/index.html)
    lab-report RESULTS_DIR RESULTS_DIR ... --out FILE"""


@one_line(results.ResultsError)
def main() -> None:
    """The command line: `lab-report RESULTS_DIR ... [--out FILE]`."""
    parser = ArgumentParser(description=_CLI_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dirs", nargs="+", metavar="results_dir",
                        help="a sweep's results_dir (holds <run_id>.parquet files); several: compared on one page")
    parser.add_argument("--out", help="the HTML file to write (default with one results_dir: "
                                      "RESULTS_DIR/_report/index.html; needed with several)")
    args = parser.parse_args()
    for results_dir in args.results_dirs:
        results_dir_argument(results_dir)
    if len(args.results_dirs) > 1 and not args.out:
        parser.error("several results_dirs are compared on one page: name it with --out FILE")
    try:
        if not has_extra():
            raise ValueError(EXTRA_NOTE)
        if args.out:
            require_writable(Path(args.out).absolute().parent, "--out's folder")
        path = write_report(args.results_dirs, args.out)
    except (results.ResultsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
