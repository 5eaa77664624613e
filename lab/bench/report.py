"""The end of a sweep over a finished 10,000-run grid of 2,500 configurations (`--report`, issue
24): figures, summary and report, timed, and the report's size; the runs written as one real run's
rows each."""

import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from lab import results
from lab.bench import driver
from lab.evaluation import evaluate
from lab.run import run

REPORT_GRID = ["algorithm=q_table", "opponent=random", "player=1", "episodes_per_update=10", "iterations=100",
               "eval_every=2", "alpha=" + ",".join(f"{0.04 * i:.2f}" for i in range(1, 26)),
               "epsilon=" + ",".join(f"{0.1 * i:.1f}" for i in range(1, 11)),
               "epsilon_decay_per_game=" + ",".join(f"{1 - 10 ** -(2 + i / 3):.6f}" for i in range(10))]
"""25 alphas x 10 epsilons x 10 decays = 2,500 configurations, 4 seeds each, 100 iterations with
50 exact evaluations: 1,000,000 rows."""


def write_finished_grid(seeds: int, results_dir) -> int:
    """REPORT_GRID's runs, all finished, in results_dir: one real run's rows under each run's id
    and knobs, its win rates scaled by a share drawn per run (peaking at alpha 0.5; seeded) so
    that configurations and seeds differ. Returns how many runs it wrote."""
    planned = driver.planned(*REPORT_GRID, f"seed=range(0,{seeds})", f"results_dir={results_dir}")
    rows = run(planned[0]).rows
    rng = np.random.default_rng(0)
    for job in planned:
        knobs = {key: getattr(job.knobs, key) for key in ("alpha", "epsilon", "epsilon_decay_per_game")}
        share = rng.uniform(0.6, 1.0) * (1 - abs(knobs["alpha"] - 0.5))
        table = rows.assign(run_id=job.run_id, seed=job.run.seed, **knobs)
        for vs in evaluate.OPPONENTS:
            win, draw = evaluate.column(1, f"{vs}_win"), evaluate.column(1, f"{vs}_draw")
            table[draw] += table[win] * (1 - share)
            table[win] *= share
        table["p1_win_rate"] *= share
        pq.write_table(results.arrow_table(table), Path(results_dir) / f"{job.run_id}.parquet")
    results.load(results_dir)  # indexes the table, as the sweep that trained them leaves it
    return len(planned)


def report_section(quick: bool) -> None:
    from lab.analysis import report  # matplotlib and the analysis (~0.6 s): only this section draws

    if not report.has_extra():
        print(f"report: {report.EXTRA_NOTE}")
        return
    seeds = 1 if quick else 4
    with tempfile.TemporaryDirectory() as out:
        runs = write_finished_grid(seeds, out)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            report.analyse(out)
        seconds = time.perf_counter() - start
        size = (Path(out) / report.REPORT / "index.html").stat().st_size / 1e6
        print(f"report: the end of a {runs:,}-run sweep (2,500 configurations, 100 rows each): figures, "
              f"summary and report in {seconds:.1f} s (target 30 s); the report {size:.1f} MB (target 20 MB)")
