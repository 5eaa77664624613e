"""Which runs go first and which go together: a sweep's scheduling.

Runs in one grid differ in cost by orders of magnitude; sent in override order, the longest could
start last and leave every other core idle. So the driver sends them longest first, by a predicted
cost, with runs too short to be worth a call of their own packed into batches. The cost model is
rough on purpose (only the order and batch sizes depend on it, never a result): microseconds per
training episode and milliseconds per evaluation point, measured on the 2-core development
machine, within about 30% of the runs' wall times.
"""

from typing import Iterator

from lab.config.jobs import Job

RUN_SECONDS = 0.015
"""Every run's own overhead: building its learner, its table and its checkpoint."""

TASK_SECONDS = 0.2
"""A batch is filled to about this much predicted work: well above a Ray call's overhead."""

TASKS_PER_CORE = 4
"""Batches stay small enough to give every core at least this many tasks to balance."""


def cost(job: Job) -> float:
    """Predicted seconds of the run on one core: training plus its exact evaluations."""
    algorithm, knobs, run = job.run.algorithm, job.knobs, job.run
    layers, neurons = getattr(knobs, "layers", 0), getattr(knobs, "neurons", 0)
    weights = neurons * (9 + neurons * max(layers - 1, 0)) if layers else 9  # a net's hidden layers
    per_episode = {  # microseconds per training game
        "q_table": 1.2, "td_value": 1.0,
        "negamax_q": 1.7,
        "mc_vfa": 3.0 + 0.0012 * weights,
        "q_net": 8.0 + 0.0004 * weights * getattr(knobs, "epochs", 1),
        "alphazero": 25.0 * getattr(knobs, "simulations", 50) + 0.1 * weights,
    }.get(algorithm, 10.0)
    per_update = 0.0  # microseconds per update, beyond its games
    if algorithm == "mc_vfa":  # a gradient step on the update's afterstates (all seen, if kept)
        per_update = (120 + 25 * knobs.layers) * (1.5 if knobs.memory == "keep" else 1.0)
    per_point = 0.7 + (0.0003 * weights if algorithm != "alphazero" else 0.15 * knobs.simulations)
    points = -(-run.iterations // run.eval_every) * len(run.seats)
    return (RUN_SECONDS + 1e-6 * (per_episode * run.episodes_per_update + per_update) * run.iterations
            + 1e-3 * per_point * points)


def batches(jobs: list[Job], cores: int) -> Iterator[list[Job]]:
    """The jobs, longest first, in batches of about TASK_SECONDS of predicted work each (a run
    longer than that alone), never fewer than TASKS_PER_CORE batches per core while runs last."""
    ordered = sorted(jobs, key=cost, reverse=True)  # ties keep grid order
    total = sum(map(cost, ordered))
    target = min(TASK_SECONDS, total / max(1, TASKS_PER_CORE * cores))
    batch, filled = [], 0.0
    for job in ordered:
        batch.append(job)
        filled += cost(job)
        if filled >= target:
            yield batch
            batch, filled = [], 0.0
    if batch:
        yield batch
