"""How sure a comparison of configurations can be, from their seeds (docs/analysis.md says why not
rliable itself, whose estimators these are): the mean and the interquartile mean (IQM); 95%
percentile-bootstrap intervals, stratified (each configuration's seeds resampled on their own); the
probability of improvement P(X > Y), ties counted half, averaged over matched pairs. scipy resamples
(the `report` extra, imported where used: the lab imports without it); rliable resamples one score
matrix at a time where the lab needs thousands of intervals in one array.

On boards evaluated by games `by_games` (and `pooled`, `probability_of_improvement` given `games`)
also resamples each seed's games; one run's share of its games gets the Wilson score interval (it
keeps its coverage near 0 and 1, where Wald's collapses)."""

from math import ceil, sqrt
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
PERCENTILES = [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2]
RESAMPLES = (2_000, 20_000)
"""Bootstrap resamples, fewest and most, as many as keep a call within RESAMPLED numbers (20,000
keep a few seeds' percentile end within 0.1 points of the exact one)."""
RESAMPLED = 20_000_000
SEED = 0
"""The resampling's random stream: the same table gives the same intervals."""


def iqm(values, axis=-1):
    """The interquartile mean along `axis`: scipy's trim_mean cutting 25% at each end, as rliable's."""
    from scipy import stats  # the report extra, optional (~1 s): the lab imports without it

    return stats.trim_mean(values, 0.25, axis=axis)


STATISTICS = {"mean": np.mean, "iqm": iqm}


def available() -> bool:
    """Whether scipy can be imported (the `report` extra): the estimators need it."""
    try:
        import scipy.stats  # noqa: F401 - only whether the report extra is installed
    except ImportError:
        return False
    return True


def _bootstrap(samples, statistic, **options):
    """scipy's percentile bootstrap with the lab's settings: its ConfidenceInterval (low, high)."""
    from scipy import stats  # the report extra, optional (~1 s): the lab imports without it

    size = sum(np.size(s) for s in samples)
    resamples = int(np.clip(RESAMPLED // size, *RESAMPLES))
    # in batches of about 16 million numbers (128 MB): a big grid's at once would take GBs
    return stats.bootstrap(samples, statistic, vectorized=True, n_resamples=resamples,
                           batch=max(1, 16_000_000 // size), confidence_level=CONFIDENCE,
                           method="percentile", rng=SEED, **options).confidence_interval


def intervals(values, statistic: str = "mean") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `values` (configurations x seeds): the statistic and its 95% percentile-bootstrap
    interval, each row resampled on its own. One seed: NaN ends, never the value (read as certainty)."""
    values = np.asarray(values, dtype=float)
    point = STATISTICS[statistic](values, axis=-1)
    if values.shape[-1] < 2:
        return point, np.full_like(point, np.nan), np.full_like(point, np.nan)
    # One call for every row: scipy draws each resample's seeds once for all rows, which leaves
    # each row's interval a plain bootstrap of that row.
    ends = _bootstrap((values,), STATISTICS[statistic], axis=-1)
    return point, *_within(ends, point)


def _within(ends, point) -> tuple:
    """The bootstrap ends, each the point where the resamples were all equal (scipy gives nan)."""
    return tuple(np.where(np.isnan(end), point, end) for end in ends)


def _resampled(strata: list[np.ndarray], statistic, games: list | None = None):
    """Bootstrap `statistic(*strata)` resampling each stratum on its own: (point, low, high), NaN ends
    when a stratum has one seed. Given `games`, each stratum's (win, draw, loss, games) per seed, a
    resample draws the seeds and then their games again (as `by_games` does)."""
    strata = [np.asarray(s, dtype=float) for s in strata]
    point = float(statistic(*strata, axis=-1))
    if min(len(s) for s in strata) < 2:
        return point, np.nan, np.nan
    if games is not None:
        rng = np.random.default_rng(SEED)
        drawn = [_games_resample(rng, np.asarray(g[:3], float)[:, None],
                                 np.asarray(g[3], np.int64)[None])["score"][:, 0] for g in games]
        ends = np.percentile(statistic(*drawn, axis=-1), PERCENTILES)
        return point, float(ends[0]), float(ends[1])

    def broadcast(*resampled, axis=-1):  # scipy may hand strata of different batch shapes
        shape = np.broadcast_shapes(*(s.shape[:-1] for s in resampled))
        return statistic(*(np.broadcast_to(s, shape + s.shape[-1:]) for s in resampled), axis=axis)

    low, high = _within(_bootstrap(strata, broadcast, paired=False), point)
    return point, float(low), float(high)


def pooled(strata: list, statistic: str = "iqm", games: list | None = None) -> tuple[float, float, float]:
    """The statistic over every seed of several strata (configurations) together, with its
    stratified-bootstrap interval: (point, low, high); `games` as `_resampled`'s."""

    def of_all(*samples, axis=-1):
        return STATISTICS[statistic](np.concatenate(samples, axis=axis), axis=axis)

    return _resampled(strata, of_all, games)


def _improvement(*samples, axis=-1):
    """P(X > Y) averaged over tasks; samples are x_1..x_k then y_1..y_k."""
    k = len(samples) // 2
    chances = []
    for x, y in zip(samples[:k], samples[k:]):
        x, y = x[..., :, None], y[..., None, :]
        chances.append(((x > y) + 0.5 * (x == y)).mean(axis=(-2, -1)))
    return np.mean(chances, axis=0)


def probability_of_improvement(xs: list, ys: list, games: list | None = None) -> tuple[float, float, float]:
    """(P(X > Y), low, high) over matched tasks: xs[i] and ys[i] are the seeds of X and Y on task i
    (a configuration against another: [x], [y]); `games` in the order of xs then ys (`_resampled`)."""
    if len(xs) != len(ys) or not xs:
        raise ValueError("probability_of_improvement needs the same tasks, at least one, for X and Y")
    return _resampled([*xs, *ys], _improvement, games)


GAMES_RESAMPLES = 2_000
"""Resamples of the two-level bootstrap (`by_games`): seeds, then each seed's games."""


def by_games(win, draw, loss, games, statistic: str = "mean") -> dict:
    """Per row of the seed matrices (configurations x seeds) of shares won, drawn, lost and games
    played: {"score", "win", "loss": (point, low, high)}, a two-level percentile bootstrap: the seeds
    drawn again, then each drawn seed's games (multinomial at its shares). One seed: NaN ends."""
    shares = np.asarray([win, draw, loss], dtype=float)
    games = np.asarray(games, dtype=np.int64)
    rows, seeds = games.shape
    points = {m: STATISTICS[statistic](v, axis=-1)
              for m, v in zip(("score", "win", "loss"), (shares[0] - shares[2], shares[0], shares[2]))}
    ends = {m: np.full((2, rows), np.nan) for m in points}
    if seeds < 2:
        return {m: (points[m], *ends[m]) for m in points}
    rng = np.random.default_rng(SEED)
    chunk = max(1, 8_000_000 // (GAMES_RESAMPLES * seeds))  # rows per pass: about 200 MB of draws
    for start in range(0, rows, chunk):
        part = slice(start, min(rows, start + chunk))
        for measure, values in _games_resample(rng, shares[:, part], games[part]).items():
            estimates = STATISTICS[statistic](values, axis=-1)
            ends[measure][:, part] = np.percentile(estimates, PERCENTILES, axis=0)
    return {m: (points[m], *ends[m]) for m in points}


def _games_resample(rng, shares: np.ndarray, games: np.ndarray) -> dict:
    """One pass of by_games (`shares`: win, draw, loss stacked): (resamples, rows, seeds) arrays of
    win, loss and score shares."""
    rows, seeds = games.shape
    picked = rng.integers(0, seeds, (GAMES_RESAMPLES, rows, seeds))
    at = (np.arange(rows)[None, :, None], picked)
    p = np.stack([share[at] for share in shares], axis=-1)
    p = np.clip(p, 0, None) / np.clip(p, 0, None).sum(axis=-1, keepdims=True)  # rounding in stored shares
    n = games[at]
    counts = rng.multinomial(n, p)
    won, lost = counts[..., 0] / n, counts[..., 2] / n
    return {"score": won - lost, "win": won, "loss": lost}


IMPORTANCE_LEAST = 8
"""Configurations below which no knob importance is computed: too few to say anything."""
IMPORTANCE_RESAMPLES = 1_000


def importance(bins: dict, y) -> dict[str, tuple[float, float, float]]:
    """fANOVA's first-order term per knob: the share of the variance of `y` (a value per
    configuration) explained by its means within the knob's `bins` (a label per configuration),
    with a 95% bootstrap interval: {knob: (share, low, high)}, largest first."""
    y = np.asarray(y, dtype=float)
    if len(y) < IMPORTANCE_LEAST:
        return {}
    rng = np.random.default_rng(SEED)
    picked = np.vstack([np.arange(len(y)), rng.integers(0, len(y), (IMPORTANCE_RESAMPLES, len(y)))])
    found = {}
    for knob, labels in bins.items():
        codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)[1].ravel()
        shares = _explained(codes[picked], y[picked], codes.max() + 1)
        low, high = np.quantile(shares[1:], [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        # a resample's share is biased upward (a knob explaining nothing explains a little of
        # any resample): the interval is widened to hold the share itself
        found[knob] = (float(shares[0]), float(min(low, shares[0])), float(max(high, shares[0])))
    return dict(sorted(found.items(), key=lambda item: -item[1][0]))


def _explained(codes: np.ndarray, y: np.ndarray, labels: int) -> np.ndarray:
    """Per row of (resamples x configurations): the between-bins share of y's variance (0 if constant)."""
    rows = np.arange(len(y))[:, None] * labels + codes
    counts = np.bincount(rows.ravel(), minlength=len(y) * labels).reshape(len(y), labels)
    sums = np.bincount(rows.ravel(), weights=y.ravel(), minlength=len(y) * labels).reshape(len(y), labels)
    mean = y.mean(axis=1, keepdims=True)
    within = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    between = (counts * (within - mean) ** 2 * (counts > 0)).sum(axis=1)
    total = ((y - mean) ** 2).sum(axis=1)
    return np.divide(between, total, out=np.zeros_like(total), where=total > 0)


POWER = 0.8
"""seeds_needed: how often a real difference of the size observed should show."""


def seeds_needed(difference: float, sd: float) -> float:
    """Seeds per configuration for means `difference` apart, seeds spread by `sd`, to differ at the 95%
    level POWER of the time (two-sample, normal), at least 2; inf for equal means."""
    if difference == 0:
        return float("inf")
    z = Z + NormalDist().inv_cdf(POWER)
    return max(2.0, float(np.ceil(2 * z ** 2 * sd ** 2 / difference ** 2)))


Z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)
"""The normal quantile of a two-sided 95% interval (1.96)."""


def wilson(successes: int, trials: int) -> tuple[float, float, float]:
    """The share successes / trials and its 95% Wilson score interval: (share, low, high)."""
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and trials ({trials}), got {successes!r}")
    share = successes / trials
    scale = 1 + Z ** 2 / trials
    center = (share + Z ** 2 / (2 * trials)) / scale
    half = Z / scale * sqrt(share * (1 - share) / trials + Z ** 2 / (4 * trials ** 2))
    # at 0 and at all successes an end is exactly 0 or 1; the formula lands a rounding away
    low = 0.0 if successes == 0 else center - half
    high = 1.0 if successes == trials else center + half
    return share, low, high


def games_needed(width: float) -> int:
    """Games after which every Wilson interval of a share is at most `width` wide, whatever the
    share. The interval is widest at share 1/2, where it is Z / sqrt(games + Z^2) wide, so this is
    ceil(Z^2 / width^2 - Z^2): 9,600 games for 2 points (width 0.02), 2,398 for 4."""
    if not 0 < width < 1:
        raise ValueError(f"width must be between 0 and 1 (a share of games), got {width!r}")
    return max(1, ceil(Z ** 2 / width ** 2 - Z ** 2))
