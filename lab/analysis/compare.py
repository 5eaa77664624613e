"""Which configurations are better, and whether the difference is real (lab.stats's estimators),
from the final evaluations of the finished runs (lab.analysis.summary.final_evaluations: `win`,
`loss`, `score` = win - loss, and `games` where measured by games) within a *group*: one algorithm,
seat and evaluation opponent. Configurations rank by mean score, ties to more wins, then to fewer
episodes (as lab.analysis.summary's best); knobs that move together count as one factor."""

import numpy as np
import pandas as pd

from lab import stats
from lab.cli import plural
from lab.evaluation import evaluate

GROUP = ["algorithm", "seat", "evaluated_vs"]
CONFIG = GROUP + ["config"]
MEASURES = ("score", "win", "loss")
IMPROVEMENT = ["improvement", "improvement_low", "improvement_high"]
GAMES = ("win", "draw", "loss", "games")
"""A seed's results by games, as stats.by_games takes them."""
NEXT = 4
"""How many configurations after the best are compared with it."""
FEW_SEEDS = 5
"""Below this many seeds a bootstrap interval spans little more than what the seeds reached."""
MAX_VALUES = 8
"""A knob with more values than this (a search's continuous knob) gets no value-by-value
comparison; the knob figure shows it."""


def _seed_matrix(final: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A row per configuration (CONFIG order): its seeds' values of `column`, NaN-padded; their counts."""
    grouped = final.groupby(CONFIG, sort=True)
    row, position = grouped.ngroup().to_numpy(), grouped.cumcount().to_numpy()
    counts = np.bincount(row)
    matrix = np.full((len(counts), counts.max()), np.nan)
    matrix[row, position] = final[column].to_numpy(float)
    return matrix, counts


def _with_intervals(table: pd.DataFrame, final: pd.DataFrame, games: tuple | None) -> None:
    """Add `<measure>_<mean|iqm>` and their `_low` / `_high` columns, the rows of equal seed counts
    bootstrapped in one call per statistic; rows evaluated by games (`games`: GAMES' seed matrices)
    get stats.by_games's intervals instead, the games' noise added to the seeds'."""
    matrices, counts = zip(*(_seed_matrix(final, measure) for measure in MEASURES))
    matrix, counts = np.vstack(matrices), np.concatenate(counts)
    for statistic in stats.STATISTICS:
        columns = np.full((3, len(counts)), np.nan)
        for n in np.unique(counts):
            rows = counts == n
            columns[:, rows] = stats.intervals(matrix[rows, :n], statistic)
        for i, measure in enumerate(MEASURES):
            part = columns[:, i * len(table):(i + 1) * len(table)]
            for suffix, values in zip(("", "_low", "_high"), part):
                table[f"{measure}_{statistic}{suffix}"] = values
    if games is None:
        return
    shares, counts = dict(zip(GAMES, games)), counts[:len(table)]
    have = ~np.isnan(shares["games"])
    by_games = have.sum(axis=1) == counts
    for statistic in stats.STATISTICS:
        for n in np.unique(counts[by_games]):
            rows = by_games & (counts == n)
            found = stats.by_games(*(shares[m][rows, :n] for m in GAMES), statistic)
            for measure, (point, low, high) in found.items():
                table.loc[rows, [f"{measure}_{statistic}_low", f"{measure}_{statistic}_high"]] = np.c_[low, high]
    # the fewest games a seed of the configuration played: what its labels say ("by N games")
    table["games"] = np.where(by_games, np.where(have, shares["games"], np.inf).min(axis=1), np.nan)


def configurations(final: pd.DataFrame, knobs: list[str]) -> pd.DataFrame:
    """One row per (group, configuration): its knobs, seeds, episodes, mean and IQM of each measure
    with intervals, `score_sd` (the seeds' spread), its best seed's run, `rank` in its group and,
    for ranks 2 to NEXT + 1 where both have 2 seeds or more, P(best > this) (IMPROVEMENT)."""
    if final.empty:
        return pd.DataFrame()
    grouped = final.groupby(CONFIG, sort=True)
    table = grouped.agg(seeds=("run_id", "nunique"), episodes=("episodes", "max"),
                        score_sd=("score", "std")).reset_index()
    table = table.join(grouped[[k for k in knobs if k in final and k not in CONFIG]].first()
                       .reset_index(drop=True))
    table["best_run"] = final.loc[grouped["score"].idxmax(), "run_id"].to_numpy()
    games = (tuple(_seed_matrix(final, m)[0] for m in GAMES)  # where some run was evaluated by games
             if "games" in final and final["games"].notna().any() else None)
    _with_intervals(table, final, games)
    scores, counts = _seed_matrix(final, "score")
    table = table.sort_values([*GROUP, "score_mean", "win_mean", "episodes"],
                              ascending=[True] * len(GROUP) + [False, False, True])
    table["rank"] = table.groupby(GROUP).cumcount() + 1
    table[IMPROVEMENT] = np.nan
    for _, group in table.groupby(GROUP):
        first = group.index[0]
        best = scores[first, :counts[first]]
        for row in group.index[1:NEXT + 1]:
            if min(len(best), counts[row]) > 1:  # from one seed each it is 0 or 1 and says nothing
                pair = (first, row)
                by_games = None if games is None or any(np.isnan(games[3][r, :counts[r]]).any() for r in pair) \
                    else [tuple(m[r, :counts[r]] for m in games) for r in pair]
                table.loc[row, IMPROVEMENT] = stats.probability_of_improvement(
                    [best], [scores[row, :counts[row]]], by_games)
    return table.reset_index(drop=True)


ONE_SEED = "1 seed: run `seed=0,1,2,...` for an interval"
"""What a number without an interval lacks, where it is shown."""
DIGITS = {"score": 3, "iqm": 3, "improvement": 2}
"""Decimals of each kind of number, the same in summary.md and the report (rounded once, here)."""


def rounded(value, digits: int) -> float | None:
    """A number as shown (None for missing): the report writes these, so that it prints the digits
    summary.md prints, never a rounding of a rounding."""
    return None if value is None or pd.isna(value) else float(f"{float(value):.{digits}f}")


def interval_text(point, low, high, digits: int = 3) -> str:
    """`point [low, high]`; without an interval (one seed) `point (1 seed)`."""
    if pd.isna(point):
        return ""
    if pd.isna(low) or pd.isna(high):
        return f"{point:.{digits}f} (1 seed)"
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def improvement_text(row) -> str:
    """`P [low, high]` of a configurations() row."""
    return interval_text(row["improvement"], row["improvement_low"], row["improvement_high"], 2)


def _pooled_sd(first, second) -> float:
    """The seeds' standard deviation of the score, pooled over two configurations."""
    dof = first["seeds"] + second["seeds"] - 2
    return float(np.sqrt(((first["seeds"] - 1) * first["score_sd"] ** 2
                          + (second["seeds"] - 1) * second["score_sd"] ** 2) / dof))


def verdict(ranked: pd.DataFrame) -> str:
    """The plain sentence for one group's configurations (configurations() rows, by rank)."""
    if len(ranked) < 2:
        return "One configuration: nothing to compare it with."
    first, second = ranked.iloc[0], ranked.iloc[1]
    seeds = int(min(first["seeds"], second["seeds"]))
    if seeds < 2:
        return ("With 1 seed per configuration nothing says whether the best configuration is better "
                f"than the second: no interval, no verdict ({ONE_SEED}).")
    if second["improvement_low"] > 0.5:
        few = (f" (every seed of the best ends above every seed of the second: with {seeds} seeds, a "
               "hint more than a proof)" if second["improvement_low"] == 1 and seeds < FEW_SEEDS else "")
        return (f"The best configuration is better than the second with these seeds: "
                f"P(best > second) = {improvement_text(second)}{few}.")
    compared = ranked.iloc[1:NEXT + 1]
    apart = compared["improvement_low"] > 0.5
    tied = int(apart.to_numpy().argmax()) if apart.any() else len(compared)
    top = f"at least the top {tied + 1}" if tied == len(compared) and len(ranked) > tied + 1 \
        else f"the top {tied + 1}"
    difference, sd = first["score_mean"] - second["score_mean"], _pooled_sd(first, second)
    if difference == 0 and sd == 0:
        needed = "the two end at the same value on every seed: no number of seeds separates them."
    elif difference == 0:
        needed = f"their means are equal (seeds' spread {sd:.3f}): no number of seeds separates them."
    else:
        n = stats.seeds_needed(difference, sd)
        needed = (f"at the seeds' spread ({sd:.3f}) and the difference of their means "
                  f"({difference:.4f}), about {n:,.0f} seeds per configuration would tell the two "
                  "apart (two-sample, 95% level, 8 times in 10).")
    return (f"{top.capitalize()} configurations cannot be told apart with {seeds} seeds: "
            f"P(best > second) = {improvement_text(second)}; {needed}")


def factors(configs: pd.DataFrame, knobs: list[str]) -> list[list[str]]:
    """The knobs that vary among a group's configurations; knobs of a few values each that move
    together (one's value fixes the other's) form one factor."""
    varying = [k for k in knobs if k in configs and configs[k].nunique(dropna=False) > 1]
    few = {k for k in varying if configs[k].nunique(dropna=False) <= MAX_VALUES}
    merged: list[list[str]] = []
    for knob in varying:
        home = next((f for f in merged if knob in few and f[0] in few and _together(configs, f[0], knob)), None)
        if home is None:
            merged.append([knob])
        else:
            home.append(knob)
    return merged


def _together(configs: pd.DataFrame, a: str, b: str) -> bool:
    pairs = len(configs[[a, b]].astype(str).drop_duplicates())
    return pairs == max(configs[a].nunique(dropna=False), configs[b].nunique(dropna=False))


def value_text(value) -> str:
    """A knob's value as the summary and the figures write it: 3, 0.01, keep, none."""
    if pd.isna(value):
        return "none"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    return str(int(value)) if float(value).is_integer() else f"{float(value):g}"


def factor_values(configs: pd.DataFrame, factor: list[str]) -> pd.Series:
    """Each configuration's value of a factor as text: `3 x 16` for layers x neurons."""
    return configs[factor].apply(lambda row: " x ".join(value_text(v) for v in row), axis=1)


def _matched(configs: pd.DataFrame, values: pd.Series, others: list[str], a: str, b: str) -> list:
    """Pairs (config with value a, config with value b) equal in every other varying knob."""
    key = configs[others].astype(str).agg("|".join, axis=1) if others else pd.Series("", configs.index)
    with_a = dict(zip(key[values == a], configs.index[values == a]))
    return [(with_a[k], c) for k, c in zip(key[values == b], configs.index[values == b]) if k in with_a]


def knob_effects(final: pd.DataFrame, knobs: list[str]) -> pd.DataFrame:
    """One row per (group, factor, value) of factors with 2 to MAX_VALUES values: `knob` (joined by
    ' x '), `value`, its configurations and runs, `iqm` (with its interval) over every run with the
    value, `rank` by IQM, and P(best value > this) (IMPROVEMENT) over `pairs` matched pairs."""
    rows = []
    for key, group in final.groupby(GROUP, sort=True):
        configs = group.groupby("config").first()
        seeds = group.groupby("config")["score"].agg(lambda s: s.to_numpy(float))
        # each configuration's seeds' (win, draw, loss, games) where every run was evaluated by games
        games = None if "games" not in group or group["games"].isna().any() else {
            c: tuple(runs[m].to_numpy(float) for m in GAMES) for c, runs in group.groupby("config")}
        every = factors(configs, knobs)
        for factor in every:
            values = factor_values(configs, factor)
            if not 2 <= values.nunique() <= MAX_VALUES:
                continue
            others = [k for f in every if f is not factor for k in f]
            effect = []
            for value, members in values.groupby(values):
                point, low, high = stats.pooled([seeds[c] for c in members.index], "iqm",
                                                games and [games[c] for c in members.index])
                effect.append({**dict(zip(GROUP, key)), "knob": " x ".join(factor), "value": value,
                               "configurations": len(members), "runs": int(sum(len(seeds[c]) for c in members.index)),
                               "iqm": point, "iqm_low": low, "iqm_high": high})
            effect.sort(key=lambda e: -e["iqm"])
            best = effect[0]["value"]
            for rank, row in enumerate(effect, 1):
                pairs = _matched(configs, values, others, best, row["value"]) if rank > 1 else []
                xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
                p = (stats.probability_of_improvement([seeds[c] for c in xs], [seeds[c] for c in ys],
                                                      games and [games[c] for c in xs + ys])
                     if pairs else (np.nan,) * 3)
                rows.append({**row, "rank": rank, "pairs": len(pairs), "improvement": p[0],
                             "improvement_low": p[1], "improvement_high": p[2]})
    return pd.DataFrame(rows)


def knob_sentence(effect: pd.DataFrame, seeds: int) -> str:
    """What one factor's rows of knob_effects() say, in a sentence: a verdict only where the
    probability of improvement has an interval (2 seeds or more in every pair compared)."""
    best, compared = effect.iloc[0], effect.iloc[1:]
    compared = compared[compared["pairs"] > 0]
    head = f"{best['knob']}: {best['value']} has the highest IQM"
    if compared.empty:
        return f"{head}; no two configurations differ only in it, so no probability of improvement."
    low, high = compared["improvement_low"], compared["improvement_high"]
    if low.isna().all():
        return f"{head}; with 1 seed no value can be said to beat another ({ONE_SEED})."
    tied, apart = (low <= 0.5) & (high >= 0.5), compared["iqm_high"] < best["iqm_low"]
    clauses = [(low > 0.5, "it beats {}"),
               (tied & apart, "its IQM is above that of {}, yet neither wins more often in the pairs of "
                              "configurations that differ only in this knob: its effect depends on the others"),
               (tied & ~apart, f"cannot be told apart from {{}} with {seeds} seeds"),
               (high < 0.5, "but {} beats it in more of the pairs that differ only in this knob"),
               (low.isna(), f"no verdict on {{}}: pairs with 1 seed ({ONE_SEED})")]
    said = [text.format(_listing(compared.loc[where, "value"].tolist())) for where, text in clauses if where.any()]
    return f"{head}; " + "; ".join(said) + "."


def _improvement_cell(row) -> str:
    """knobs' P(best value > this) cell: with its interval, or saying why it has none."""
    if not row["pairs"]:
        return ""
    pairs = plural(row["pairs"], "pair")
    if pd.isna(row["improvement_low"]):
        return f"{row['improvement']:.2f}, no interval ({pairs} with 1 seed)"
    return f"{improvement_text(row)} ({pairs})"


def _listing(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


SHOWN = 10
"""Configurations listed per group in summary.md (all of them in configurations.csv)."""


def markdown_table(header: list[str], rows: list) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(row) + " |" for row in rows]


def markdown(configs: pd.DataFrame, effects: pd.DataFrame) -> str:
    """summary.md's sections on every group: its configurations ranked with intervals, the
    verdict, and the knobs' effects with a sentence per knob."""
    lines = ["## Configurations ranked", "",
             "A configuration is a run's knobs without its seed; its runs are its seeds. Per algorithm, "
             "seat and evaluation opponent, the final win - loss of every configuration (exact, or by N "
             "games per run where the heading says so, the interval then resampling the seeds and each "
             "seed's games): mean and interquartile mean (IQM) over its runs with 95% stratified-bootstrap intervals; P(best > this): the "
             "chance that a seed of the best configuration ends above a seed of this one, with its "
             "interval (better when the whole interval is above 0.5). Every configuration is in "
             "configurations.csv; the knobs' rows in knobs.csv."]
    keys = ["game", *GROUP] if "game" in configs else GROUP  # bigger boards: each game apart
    for key, ranked in configs.groupby(keys, sort=True):
        algorithm, seat, vs = key[-3:]
        game = f"{key[0]}: " if len(key) > len(GROUP) else ""
        lines += ["", f"### {game}{algorithm}, agent as {evaluate.SEATS[seat]}, evaluated against {evaluate.OPPONENT_TITLES[vs]} "
                      f"{measured(ranked)}: {plural(len(ranked), 'configuration')}", ""]
        rows = [[str(r["rank"]), r["config"], str(r["seeds"]),
                 interval_text(r["score_mean"], r["score_mean_low"], r["score_mean_high"]),
                 interval_text(r["score_iqm"], r["score_iqm_low"], r["score_iqm_high"]),
                 f"{r['win_mean']:.3f}", f"{r['loss_mean']:.3f}",
                 improvement_text(r) if pd.notna(r["improvement"]) else ""]
                for _, r in ranked.head(SHOWN).iterrows()]
        lines += markdown_table(["rank", "configuration", "seeds", "win - loss: mean [95% CI]",
                                 "IQM [95% CI]", "win", "loss", "P(best > this)"], rows)
        if len(ranked) > SHOWN:
            lines.append(f"\n{len(ranked) - SHOWN} more in configurations.csv.")
        lines += ["", verdict(ranked)]
        lines += _knob_lines(effects, dict(zip(keys, key)), int(ranked["seeds"].min()))
    return "\n".join(lines) + "\n"


def measured(configs: pd.DataFrame) -> str:
    """`exactly`, or `by N games` (the fewest any run played): how a group's numbers were obtained."""
    games = configs["games"].min() if "games" in configs else np.nan
    return "exactly" if pd.isna(games) else f"by {int(games):,} games"


def rows_of(effects: pd.DataFrame, key: dict) -> pd.DataFrame:
    """The rows of a knob_effects table (perhaps empty, without columns) equal to `key` in its columns."""
    return effects[(effects[list(key)] == pd.Series(key)).all(axis=1)] if not effects.empty else effects


def _knob_lines(effects: pd.DataFrame, key: dict, seeds: int) -> list[str]:
    mine = rows_of(effects, key)
    if mine.empty:
        return []
    lines = ["", "Knobs: the IQM of the final win - loss over every run with the value (each "
                 "configuration's seeds resampled on their own); P(best value > this) over the pairs of "
                 "configurations that differ only in that knob.", ""]
    rows = [[r["knob"], r["value"], str(r["configurations"]),
             interval_text(r["iqm"], r["iqm_low"], r["iqm_high"]), _improvement_cell(r)]
            for _, r in mine.iterrows()]
    lines += markdown_table(["knob", "value", "configurations", "IQM [95% CI]", "P(best value > this)"], rows)
    lines.append("")
    lines += [f"- {knob_sentence(effect, seeds)}" for _, effect in mine.groupby("knob", sort=False)]
    return lines
