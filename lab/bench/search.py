"""The docs' (docs/search.md) q_table search through the lab's sweeper (`--search`, issue 22)
against the same search written with Optuna alone over lab.run, as a user would."""

import multiprocessing
import os
import statistics
import tempfile
from pathlib import Path

from lab.bench.parallel import cores_line, timed_python, timed_sweep
from lab.config import jobs
from lab.config.compose import compose

SEARCH_SPACE = ["algorithm=q_table", "opponent=onestep", "player=2", "alpha=tag(log,interval(0.01,1))",
                "epsilon_decay=interval(0.99,0.99999)"]
SEARCH_SETTINGS = ["hydra.sweeper.num_samples=64", "hydra.sweeper.search=tpe", "hydra.sweeper.scheduler=asha",
                   "hydra.sweeper.objective=onestep"]
"""Successive halving from 111 iterations (the default grace period, iterations / 9), reduction factor 3"""


def plain_optuna(seed: int, trials: int = 64, processes: int | None = None) -> tuple[float, int]:
    """The docs' search with Optuna alone: TPE and successive halving (ASHA) over lab.run.run,
    `processes` worker processes (default: one per core) sharing a journal file; the best value,
    and the training episodes of all trials."""
    import optuna  # the search extra, optional: only this section needs it

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    processes = processes or os.cpu_count() or 1
    base = compose("algorithm=q_table", "opponent=onestep", "player=2", "results_dir=unused")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "journal.log")
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
        study = optuna.create_study(study_name="plain", storage=storage, direction="maximize")
        workers = [multiprocessing.Process(target=_plain_optuna_worker,
                                           args=(path, base, 1000 * seed + i, trials // processes + (i < trials % processes)))
                   for i in range(processes)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return study.best_value, sum(t.last_step * base["episodes_per_update"] for t in study.trials if t.last_step)


def _plain_optuna_worker(path: str, base: dict, seed: int, trials: int) -> None:
    # each worker process imports what it trains with itself: plain Optuna's time stays as measured
    import optuna
    from lab.run import run

    def objective(trial):
        job = jobs.job({**base, "alpha": trial.suggest_float("alpha", 0.01, 1, log=True),
                          "epsilon_decay_per_game": trial.suggest_float("epsilon_decay_per_game", 0.99, 0.99999)})

        def report(iteration, rows, learner):
            trial.report(rows[-1]["eval_p2_onestep_win"] - rows[-1]["eval_p2_onestep_loss"], iteration)
            return trial.should_prune()

        result = run(job, report=report)
        if result.stopped:
            raise optuna.TrialPruned()
        last = result.rows.iloc[-1]
        return last["eval_p2_onestep_win"] - last["eval_p2_onestep_loss"]

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
    study = optuna.load_study(study_name="plain", storage=storage, sampler=optuna.samplers.TPESampler(seed=seed),
                              pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=111, reduction_factor=3))
    study.optimize(objective, n_trials=trials)


def lab_search(seed: int, extra=()) -> tuple[float, float, int, str]:
    """The docs' search through the lab's sweeper (figures off, as plain Optuna draws none):
    wall time from the shell, best objective, training episodes, the `cores:` line."""
    with tempfile.TemporaryDirectory() as out:
        _, seconds, output = timed_sweep(["hydra/sweeper=search", *SEARCH_SETTINGS, *SEARCH_SPACE,
                                          f"hydra.sweeper.seed={seed}", *extra, f"results_dir={out}"])
    best = float(output.split("best: objective ", 1)[1].split()[0])
    episodes = int(output.split(" training episodes in all")[0].rsplit(" ", 1)[1].replace(",", ""))
    return seconds, best, episodes, cores_line(output)[1]


def search_section(quick: bool) -> None:
    cores = os.cpu_count() or 1
    seeds = [0] if quick else [0, 1, 2]
    print(f"search: docs/search.md's q_table search, {' '.join(SEARCH_SPACE[:3])}, 64 configurations, TPE, "
          f"successive halving from 111 iterations (factor 3), objective against onestep; {cores} cores")
    with tempfile.TemporaryDirectory() as out:  # untimed: compiles the kernels a fresh install has not
        timed_python(["-m", "lab.sweep", *SEARCH_SPACE[:3], "iterations=1", f"results_dir={out}"])
    print(f"  {'search seed':<12}{'lab':>9}{'plain Optuna':>14}{'ratio':>8}   best objective: lab / plain Optuna; "
          "training episodes: lab / plain Optuna")
    lab, plain = [], []
    for seed in seeds:  # alternated, in the same conditions
        seconds, best, episodes, _ = lab_search(seed)
        _, plain_seconds, plain_output = timed_python(
            ["-c", f"from lab.bench import search; print(*search.plain_optuna({seed}))"])
        plain_best, plain_episodes = plain_output.split()[-2:]
        lab.append(seconds)
        plain.append(plain_seconds)
        print(f"  {seed:<12}{seconds:>7.1f} s{plain_seconds:>12.1f} s{seconds / plain_seconds:>7.2f}x   "
              f"{best:.4f} / {float(plain_best):.4f}; {episodes:,} / {int(plain_episodes):,}")
    lab_median, plain_median = statistics.median(lab), statistics.median(plain)
    print(f"  median: lab {lab_median:.1f} s, plain Optuna {plain_median:.1f} s: {lab_median / plain_median:.2f}x "
          "(target at most 1.5x)")
    seconds, best, _, line = lab_search(0, ["hydra.sweeper.seeds=3"])
    print(f"  the same search with seeds=3 (each configuration on seeds 0-2, objective their mean): {seconds:.1f} s, "
          f"best {best:.4f}; {line}")
