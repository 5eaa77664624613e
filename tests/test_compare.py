"""Comparing configurations (lab.stats, lab.analysis.compare, the summary's sections): intervals checked
against the bootstrap done directly, by enumerating every resample of a small hand-made table."""

import itertools
import re
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from lab import stats
from lab.analysis import compare, report, summary
from lab.evaluation import evaluate

WINS = {  # (layers, neurons, alpha) -> the final exact win rate vs onestep of each seed; loss 0.05
    (2, 8, 0.01): (0.61, 0.74, 0.80, 0.93),
    (2, 8, 0.001): (0.40, 0.52, 0.66, 0.71),
    (3, 16, 0.01): (0.63, 0.70, 0.71, 0.90),
    (3, 16, 0.001): (0.10, 0.12, 0.15, 0.18),
}
LOSS = 0.05


def _runs(wins=WINS) -> pd.DataFrame:
    """A results table of finished mc_vfa runs as O against onestep, one evaluated iteration each."""
    rows = []
    for (layers, neurons, alpha), seeds in wins.items():
        for seed, win in enumerate(seeds):
            rows.append({
                "run_id": f"l{layers}a{alpha}s{seed}", "algorithm": "mc_vfa", "opponent": "onestep",
                "player": 2, "layers": layers, "neurons": neurons, "alpha": alpha,
                "episodes_per_update": 10, "iterations": 1, "seed": seed, "eval_every": 1,
                "episodes": 10, "iteration": 1, "status": "finished", "train_seconds": 1.0,
                "p1_win_rate": 0.5, "p2_win_rate": 0.4,
                **{evaluate.column(2, f"{o}_{r}"): v for o in evaluate.OPPONENTS
                   for r, v in (("win", win), ("loss", LOSS), ("draw", 1 - win - LOSS))},
                evaluate.column(2, "losing_lines"): 3, evaluate.column(2, "total_lines"): 10,
                evaluate.column(2, "winning_lines"): 5, evaluate.column(2, "drawing_lines"): 2,
                evaluate.column(2, "never_loses"): False, evaluate.column(2, "optimal_move_rate"): 0.9,
            })
    return pd.DataFrame(rows)


def _every_resample(samples, statistic) -> np.ndarray:
    """The bootstrap distribution done directly: the statistic of every way of drawing each
    sample's seeds again with replacement (each sample on its own), all equally likely."""
    draws = [list(itertools.product(s, repeat=len(s))) for s in samples]
    return np.array([statistic(*map(np.array, pick)) for pick in itertools.product(*draws)])


def _within(end, distribution, level):
    """A percentile end from 2,000 resamples or more lies within 1 point of probability of the
    exact one (the Monte Carlo error at 2.5% is 0.35 points with 2,000)."""
    low, high = np.quantile(distribution, [level - 0.01, level + 0.01])
    return low - 1e-12 <= end <= high + 1e-12


def test_intervals_are_the_bootstrap_done_directly():
    configs, _ = summary.comparisons(_runs())
    onestep = configs[configs["evaluated_vs"] == "onestep"].set_index("alpha", append=True)
    iqm = lambda x: scipy_stats.trim_mean(x, 0.25)  # noqa: E731 - rliable's IQM
    for (layers, neurons, alpha), wins in WINS.items():
        row = configs[(configs["evaluated_vs"] == "onestep") & (configs["layers"] == layers)
                      & (configs["alpha"] == alpha)].iloc[0]
        scores = np.array(wins) - LOSS
        for statistic, direct in (("mean", np.mean), ("iqm", iqm)):
            distribution = _every_resample([scores], direct)
            assert row[f"score_{statistic}"] == pytest.approx(direct(scores))
            assert _within(row[f"score_{statistic}_low"], distribution, 0.025), (statistic, wins)
            assert _within(row[f"score_{statistic}_high"], distribution, 0.975), (statistic, wins)
        # a t-interval of the mean (what the curves' bands use) is not what the summary reports
        half = scipy_stats.t.ppf(0.975, 3) * np.std(scores, ddof=1) / 2
        assert not _within(scores.mean() - half, _every_resample([scores], np.mean), 0.025)
    assert len(onestep) == 4


def test_probability_of_improvement_is_the_bootstrap_done_directly():
    best, other = np.array(WINS[2, 8, 0.01]), np.array(WINS[2, 8, 0.001])
    chance = lambda x, y: np.mean([(a > b) + 0.5 * (a == b) for a in x for b in y])  # noqa: E731
    point, low, high = stats.probability_of_improvement([best], [other])
    distribution = _every_resample([best, other], chance)
    assert point == pytest.approx(14 / 16)  # 0.61 < 0.66 and 0.71: 2 of 16 pairs lost
    assert _within(low, distribution, 0.025) and _within(high, distribution, 0.975)
    # exactly: 3.05% of the resamples are at most 0.5 and 1.59% below: the low end is 0.5, not
    # better than even (2,000 resamples put 2.5% of them at 0.5 or less and the end at 0.62)
    assert (distribution <= 0.5).mean() == pytest.approx(0.0305, abs=1e-4)
    assert low == 0.5 and high == 1.0


def test_a_knob_value_pools_its_configurations_resampling_each_on_its_own():
    """Stratified: every resample keeps 3 seeds of each configuration. Resampling the 6 seeds
    together would put the interval at [0.19, 0.85]."""
    low_config, high_config = np.array([0.1, 0.2, 0.35]), np.array([0.7, 0.8, 1.0])
    iqm = lambda *s: scipy_stats.trim_mean(np.concatenate(s), 0.25)  # noqa: E731
    point, low, high = stats.pooled([low_config, high_config], "iqm")
    distribution = _every_resample([low_config, high_config], iqm)
    assert point == pytest.approx(iqm(low_config, high_config))
    assert _within(low, distribution, 0.025) and _within(high, distribution, 0.975)
    assert (low, high) == pytest.approx((0.425, 0.625), abs=0.01)


def test_ranking_verdict_and_seeds_needed():
    configs, effects = summary.comparisons(_runs())
    ranked = configs[configs["evaluated_vs"] == "onestep"].sort_values("rank")
    assert ranked["config"].tolist()[:2] == ["ttt_player2_l2_n8_a0.01_e10_i1", "ttt_player2_l3_n16_a0.01_e10_i1"]
    assert ranked["rank"].tolist() == [1, 2, 3, 4]
    assert np.isnan(ranked["improvement"].iloc[0])
    # the two alpha=0.01 configurations overlap: P(best > second) = 10/16
    second = ranked.iloc[1]
    assert second["improvement"] == pytest.approx(10 / 16) and second["improvement_low"] <= 0.5
    assert ranked.iloc[3]["improvement"] == 1.0  # every seed of the best above every seed of the last
    sd = np.sqrt((np.var(WINS[2, 8, 0.01], ddof=1) + np.var(WINS[3, 16, 0.01], ddof=1)) / 2)
    difference = np.mean(WINS[2, 8, 0.01]) - np.mean(WINS[3, 16, 0.01])
    needed = np.ceil(2 * (1.959964 + 0.841621) ** 2 * sd ** 2 / difference ** 2)
    text = compare.verdict(ranked)
    # the third (2 x 8 at alpha 0.001) neither: P(best > it) = 0.875 [0.5, 1.0]
    assert text.startswith("The top 3 configurations cannot be told apart with 4 seeds: "
                           f"P(best > second) = {10 / 16:.2f} [{second['improvement_low']:.2f}, ")
    assert f"about {needed:,.0f} seeds per configuration" in text
    assert stats.seeds_needed(0.1, 0.1) == 16 and stats.seeds_needed(0.0, 0.1) == float("inf")
    clear = ranked.copy()
    clear.loc[clear.index[1], ["improvement", "improvement_low", "improvement_high"]] = (1.0, 0.8, 1.0)
    assert compare.verdict(clear) == ("The best configuration is better than the second with these seeds: "
                                      "P(best > second) = 1.00 [0.80, 1.00].")
    clear.loc[clear.index[1], "improvement_low"] = 1.0
    assert compare.verdict(clear).endswith("(every seed of the best ends above every seed of the second: "
                                           "with 4 seeds, a hint more than a proof).")
    assert compare.verdict(ranked.assign(seeds=1)).startswith("With 1 seed per configuration nothing says")
    one_seed, _ = summary.comparisons(_runs({k: v[:1] for k, v in WINS.items()}))
    assert one_seed["improvement"].isna().all() and one_seed["score_mean_low"].isna().all()


def test_knobs_that_move_together_are_one_factor_and_values_compare_in_matched_pairs():
    configs, effects = summary.comparisons(_runs())
    mine = effects[effects["evaluated_vs"] == "onestep"]
    assert mine["knob"].unique().tolist() == ["layers x neurons", "alpha"]
    alpha = mine[mine["knob"] == "alpha"].set_index("value")
    assert alpha.loc["0.01", "rank"] == 1 and alpha.loc["0.001", "pairs"] == 2
    # pairs (l2 0.01 vs l2 0.001) and (l3 0.01 vs l3 0.001): 14/16 and 16/16 seeds' pairs won
    assert alpha.loc["0.001", "improvement"] == pytest.approx((14 / 16 + 1) / 2)
    assert alpha.loc["0.001", "configurations"] == 2 and alpha.loc["0.001", "runs"] == 8
    sentences = [compare.knob_sentence(e, 4) for _, e in mine.groupby("knob", sort=False)]
    assert sentences[1] == "alpha: 0.01 has the highest IQM; it beats 0.001."
    assert sentences[0].startswith("layers x neurons: 2 x 8 has the highest IQM; ")


def test_summary_md_ranks_every_group_with_intervals(tmp_path):
    best, written = summary.write_summary(tmp_path, frame=_runs())
    assert [p.name for p in written] == ["summary.csv", "summary.md", "configurations.csv", "knobs.csv"]
    text = (tmp_path / summary.SUMMARY / "summary.md").read_text()
    assert text.startswith("| algorithm | seat | evaluated_vs |")
    assert "### mc_vfa, agent as O, evaluated against OneStep exactly: 4 configurations" in text
    assert "- alpha: 0.01 has the highest IQM; it beats 0.001." in text
    assert "The top 3 configurations cannot be told apart with 4 seeds" in text
    row = best[best["evaluated_vs"] == "onestep"].iloc[0]
    assert row["win_loss"] == pytest.approx(np.mean(WINS[2, 8, 0.01]) - LOSS)
    assert row["win_loss_low"] < row["win_loss"] < row["win_loss_high"]
    assert len(pd.read_csv(tmp_path / summary.SUMMARY / "configurations.csv")) == 8  # 4 x 2 opponents


def test_without_the_report_extra_the_summary_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)  # `import scipy` raises ImportError
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    assert summary.comparisons(_runs()) is None and not report.has_extra()
    best, written = summary.write_summary(tmp_path, frame=_runs())
    assert len(written) == 2 and "win_loss" not in best
    text = (tmp_path / summary.SUMMARY / "summary.md").read_text()
    assert text.endswith(summary.EXTRA_NOTE) and "## Configurations ranked" not in text


def test_knob_sentence_says_which_values_lose_tie_or_interact():
    effect = pd.DataFrame({
        "knob": "alpha", "value": ["0.1", "0.2", "0.3", "0.4", "0.5"], "pairs": [0, 4, 4, 4, 4],
        "iqm": [0.8, 0.5, 0.75, 0.78, 0.7], "iqm_low": [0.7, 0.4, 0.6, 0.65, 0.6],
        "iqm_high": [0.9, 0.6, 0.85, 0.85, 0.8],
        "improvement": [np.nan, 0.8, 0.6, 0.3, 0.55], "improvement_low": [np.nan, 0.6, 0.45, 0.2, 0.5],
        "improvement_high": [np.nan, 0.9, 0.7, 0.4, 0.6]})
    assert compare.knob_sentence(effect, 3) == (
        "alpha: 0.1 has the highest IQM; it beats 0.2; cannot be told apart from 0.3 and 0.5 with 3 seeds; "
        "but 0.4 beats it in more of the pairs that differ only in this knob.")
    interacting = effect.assign(iqm_high=[0.9, 0.6, 0.65, 0.85, 0.8])  # 0.3's interval below 0.1's
    assert "its IQM is above that of 0.3, yet neither wins more often" in compare.knob_sentence(interacting, 3)
    assert compare.knob_sentence(effect.assign(pairs=0), 3) == (
        "alpha: 0.1 has the highest IQM; no two configurations differ only in it, so no probability of improvement.")


ALPHAS = {  # a 3-alpha grid of one net, 4 seeds each: 0.5 ends above 0.1 on every seed
    (2, 8, 0.1): (0.60, 0.62, 0.64, 0.66),
    (2, 8, 0.3): (0.70, 0.74, 0.78, 0.82),
    (2, 8, 0.5): (0.86, 0.88, 0.90, 0.92),
}


def test_one_seed_shows_no_interval_and_no_verdict_where_four_seeds_do(tmp_path):
    four, one = _runs(ALPHAS), _runs({k: v[:1] for k, v in ALPHAS.items()})
    for frame, seeds in ((one, 1), (four, 4)):
        out = tmp_path / str(seeds)
        summary.write_summary(out, frame=frame)
        text = (out / summary.SUMMARY / "summary.md").read_text()
        configs, effects = summary.comparisons(frame)
        sentence = compare.knob_sentence(effects[effects["evaluated_vs"] == "onestep"], seeds)
        intervals = configs[["score_mean_low", "score_iqm_high"]].join(effects[["iqm_low", "improvement_high"]],
                                                                       how="outer")
        if seeds == 1:
            assert intervals.isna().all().all()
            assert "it beats" not in text and "better than the second with" not in text
            assert not re.search(r"\d \[", text) and "1.00, no interval (1 pair with 1 seed)" in text
            assert "beats" not in sentence and compare.ONE_SEED in sentence and compare.ONE_SEED in text
            assert "0.550 (1 seed)" in text  # alpha 0.1: its one seed, no interval
        else:
            assert intervals.notna().any().all()
            assert sentence == "alpha: 0.5 has the highest IQM; it beats 0.3 and 0.1."
            assert "(1 pair)" in text and "(1 pairs)" not in text and compare.ONE_SEED not in text
            assert "better than the second with these seeds" in text


def test_single_seed_strata_give_no_interval():
    singles = [np.array([v]) for v in (0.1, 0.4, 0.5, 0.9, 0.2, 0.3, 0.6, 0.7)]
    point, low, high = stats.probability_of_improvement(singles[:4], singles[4:])
    assert point == 0.5 and np.isnan(low) and np.isnan(high)
    point, low, high = stats.pooled(singles, "iqm")
    assert point == pytest.approx(scipy_stats.trim_mean(np.concatenate(singles), 0.25)) and np.isnan([low, high]).all()
    # one stratum of one seed among others is not held fixed either: no interval
    assert np.isnan(stats.pooled([np.array([0.1, 0.3]), np.array([0.5])])[1])
    point, low, high = stats.intervals(np.array([[0.2], [0.4]]))
    assert point.tolist() == [0.2, 0.4] and np.isnan(low).all() and np.isnan(high).all()


CLOSE = {(2, 8, 0.01): (0.50, 0.52, 0.53, 0.55), (2, 8, 0.001): (0.40, 0.41, 0.43, 0.44)}
"""Seeds that end close together, as a bigger board's often do: the games' noise matters."""


def _by_games(games: int) -> pd.DataFrame:
    """_runs(CLOSE) as if on a 5x5 board, every share measured by `games` games (lab.evaluation.evaluate)."""
    frame = _runs(CLOSE).assign(m=5, n=5, k=4, evaluation="games")
    for vs in evaluate.OPPONENTS:
        frame[evaluate.column(2, f"{vs}_games")] = games
    return frame


def test_by_games_intervals_hold_the_games_noise_and_every_label_says_by_how_many(tmp_path):
    widths, knob_widths, improvement_lows = {}, {}, {}
    for games in (400, 9600):
        configs, effects = summary.comparisons(_by_games(games))
        widths[games] = (configs["score_mean_high"] - configs["score_mean_low"]).to_numpy()
        knob_widths[games] = (effects["iqm_high"] - effects["iqm_low"]).to_numpy()
        improvement_lows[games] = configs["improvement_low"].dropna().to_numpy()
        assert (configs["games"] == games).all()
        summary.write_summary(tmp_path / str(games), frame=_by_games(games))
        text = (tmp_path / str(games) / summary.SUMMARY / "summary.md").read_text()
        sections = text.split("## Configurations ranked")[1]
        assert f"evaluated against random by {games:,} games: 2 configurations" in sections
        assert "exactly" not in sections
        assert f"| by {games:,} games | {games} |" in text.split("## Configurations ranked")[0]
    exact, _ = summary.comparisons(_runs(CLOSE))
    seeds_only = (exact["score_mean_high"] - exact["score_mean_low"]).to_numpy()
    assert (widths[400] > widths[9600]).all() and (widths[400] > seeds_only).all()
    assert (widths[400] > 1.5 * widths[9600]).all()
    assert widths[9600] == pytest.approx(seeds_only, rel=0.25)  # 9,600 games: little beyond the seeds
    # a knob value's pooled IQM and P(best > this) resample the games too
    assert (knob_widths[400] > 1.5 * knob_widths[9600]).all()
    assert (improvement_lows[400] < improvement_lows[9600]).all() and (improvement_lows[9600] == 1).all()


def test_knob_importance_is_the_share_of_variance_between_a_knobs_values():
    rng = np.random.default_rng(1)
    alpha, memory = np.repeat(["a", "b", "c"], 4), np.tile(["keep", "clear"], 6)
    y = np.select([alpha == "a", alpha == "b"], [0.8, 0.5], 0.1) + 0.05 * rng.normal(size=12)
    found = stats.importance({"alpha": alpha, "memory": memory}, y)
    means = pd.Series(y).groupby(alpha).transform("mean")
    assert found["alpha"][0] == pytest.approx(((means - y.mean()) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    assert list(found) == ["alpha", "memory"] and found["alpha"][1] <= found["alpha"][0] <= found["alpha"][2]
    assert stats.importance({"alpha": alpha[:7]}, y[:7]) == {}  # too few configurations


def test_the_parallel_png_labels_every_value_of_a_grids_knob(tmp_path, monkeypatch):
    from lab.analysis import knob_figures

    drawn = {}
    monkeypatch.setattr(knob_figures, "save", lambda fig, path: drawn.setdefault(path.name, fig) and path)
    configs, _ = summary.comparisons(_runs(ALPHAS))
    knob_figures.parallel_figure(configs, tmp_path)
    texts = {t.get_text() for t in drawn["mc_vfa_parallel_O_onestep.png"].axes[0].texts}
    assert {"0.1", "0.3", "0.5"} <= texts  # the middle value too, not only the ends
