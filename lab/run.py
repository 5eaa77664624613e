"""One configuration -> a trained agent, one tidy row per iteration, and a checkpoint.

`run` never raises for a failing learner: an exception or a diverging network ends the run with
status "failed" and the error in every row, so a sweep records it and goes on.
"""

import time
import traceback
from dataclasses import dataclass

import pandas as pd
from numba.core import event

import lab
from lab import evaluate, provenance
from lab.agents.base import Agent
from lab.config import Job
from lab.knobs import RunConfig

_IMPORT_SECONDS = time.perf_counter() - lab.IMPORT_STARTED
_first_run_in_process = True

# numba holds its compiler lock while it compiles a kernel or loads it from its on-disk cache: the
# time under the lock is the start-up a worker's first runs pay, kept out of train/eval seconds.
_compiling = event.TimingListener()
event.register("numba:compiler_lock", _compiling)


def in_the_driver() -> None:
    """This process is a sweep's driver: its imports are the sweep's fixed cost, not its first
    run's start-up."""
    global _first_run_in_process
    _first_run_in_process = False


def _compile_seconds() -> float:
    return _compiling.duration if _compiling.done else 0.0


class _Clock:
    """Seconds of `with clock:` blocks, minus the numba compilation inside them."""

    def __init__(self):
        self.seconds = self.compiling = 0.0

    def __enter__(self):
        self._start, self._compiled = time.perf_counter(), _compile_seconds()

    def __exit__(self, *exc):
        compiling = _compile_seconds() - self._compiled
        self.seconds += time.perf_counter() - self._start - compiling
        self.compiling += compiling


@dataclass
class RunResult:
    run_id: str
    rows: pd.DataFrame
    checkpoint: bytes | None
    """the final agent as .npz bytes (None when the run failed)"""

    @property
    def failed(self) -> bool:
        return bool((self.rows["status"] == "failed").any())


def evaluation(agent: Agent, run_cfg: RunConfig) -> dict:
    """lab.evaluate.exact of the agent in the seats it trains in (both in self-play), as
    columns eval_p<seat>_<key>; evaluated in both seats, also the seats-alternated results
    (lab.evaluate.alternated) as eval_alternated_<key>."""
    moves = agent.move_table()
    measured = {seat: evaluate.exact(moves, seat) for seat in run_cfg.seats}
    columns = {evaluate.column(seat, key): value
               for seat, result in measured.items() for key, value in result.items()}
    if len(measured) == 2:
        columns.update({evaluate.alternated_column(key): value for key, value in
                        evaluate.alternated(measured[1], measured[2]).items()})
    return columns


def run(job: Job, code: dict | None = None) -> RunResult:
    """Train one validated run (lab.config.job). `code` is the driver's lab.provenance.code()
    (this process's when None), stamped with the run's times and machine on every row."""
    global _first_run_in_process
    started, wall = pd.Timestamp.now(tz="UTC"), time.perf_counter()
    startup = _IMPORT_SECONDS if _first_run_in_process else 0.0
    _first_run_in_process = False
    run_cfg = job.run
    columns = {"run_id": job.run_id, **job.identity()}
    rows, checkpoint, error = [], None, None
    episodes = 0
    training, evaluating = _Clock(), _Clock()
    try:
        learner = job.algorithm.Learner(job.knobs, run_cfg)
        for iteration in range(1, run_cfg.iterations + 1):
            with training:
                p1_wins, p2_wins, draws = learner.iterate()
            episodes += run_cfg.episodes_per_update
            n = run_cfg.episodes_per_update
            rows.append({
                **columns,
                "iteration": iteration,
                "episodes": int(episodes),
                "p1_wins": int(p1_wins), "p2_wins": int(p2_wins), "draws": int(draws),
                "p1_win_rate": p1_wins / n, "p2_win_rate": p2_wins / n, "draw_rate": draws / n,
                "train_epsilon": learner.exploration(),
            })
            if iteration % run_cfg.eval_every == 0 or iteration == run_cfg.iterations:
                with evaluating:
                    rows[-1].update(evaluation(learner.agent(), run_cfg))
            rows[-1].update(train_seconds=training.seconds, eval_seconds=evaluating.seconds)
        checkpoint = learner.agent().to_bytes()
    except Exception as exc:  # noqa: BLE001 - any learner failure is recorded, not raised
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
    if error is not None and not rows:
        rows.append({**columns, "iteration": 0, "episodes": 0, "train_seconds": training.seconds,
                     "eval_seconds": evaluating.seconds})
    frame = pd.DataFrame(rows)
    frame["status"] = "failed" if error else "finished"
    frame["error"] = error
    frame["startup_seconds"] = startup + training.compiling + evaluating.compiling
    frame["wall_seconds"] = startup + time.perf_counter() - wall
    stamp = {"started_utc": started, "finished_utc": pd.Timestamp.now(tz="UTC"),
             **(code or provenance.code()), **provenance.machine()}
    frame = frame.assign(**stamp)
    return RunResult(job.run_id, frame, checkpoint)

