"""Adaptive search on Ray Tune: random or Optuna (TPE) search, ASHA early stopping, PBT.

`python -m lab.sweep --multirun hydra/sweeper=tune hydra.sweeper.num_samples=16 ... 'alpha=tag(log,interval(0.01,1))'`
(hydra_plugins/lab_plugins: TuneSweeper) hands the overrides here (`search`):

- the search space is written in Hydra's override grammar and parsed by Hydra's own parser:
  `interval(a,b)` uniform (integers for an integer knob), `tag(log,interval(a,b))` log-uniform,
  `choice(...)`, `range(...)` or a comma list categorical, a plain value fixed (`space`), and
  anything else refused in one line; the keys resolved against the algorithm's knobs (`resolve`);
- every configuration the space can produce is validated before anything starts: each searched
  knob at both ends of its interval and at every one of its choices (`validate`);
- every trial is a lab run: `lab.run.run` trains it, and at every evaluation point the trial
  reports the objective (exact win - loss of the greedy agent against `objective`'s opponent in
  its seat, the mean of both seats in self-play), the rows trained since its last report and its
  training state as a Tune checkpoint (so PBT can exploit it and an interrupted search resumes);
- this process (the driver) collects the rows (`Collector`) and writes each trial's run table
  atomically into results_dir with the lab's schema when it ends: `finished`, `stopped` (the
  scheduler ended it early; its rows are kept) or `failed`;
- at the end: the best configuration is printed and written as `results_dir/_search/best.yaml`,
  and `_search/objective.png` draws every trial's objective against training episodes;
  `_search/trials.jsonl` lists the trials that ended and their runs.

Tune's own experiment state lives in `results_dir/_search/tune`; running the same command again
after an interruption restores it (ended trials are kept, unfinished ones resume from their
last checkpoint; ASHA's rung records, not part of Tune's saved state, are replayed from the run
tables: LabASHA); `_search/search.json` refuses another search in the same directory. PBT
is synchronous (the whole population at each step) and a PBT run's table says which trial
trained each row (`PBT_TRIAL`). The same seed gives the same trials (random and PBT sample with Tune's
generator seeded by it, Optuna's TPE with its sampler seeded by it; TPE's later trials also depend
on which trials finished first when several run at once: max_concurrent=1 makes it exact).
"""

import base64
import functools
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lab import config, evaluate, provenance, results
from lab.knobs import ConfigError, RunConfig

SEARCHES = ("random", "optuna")
SCHEDULERS = ("none", "asha", "pbt")
OBJECTIVES = ("random", "onestep")
SEARCH_DIR = "_search"
TRIALS = "trials.jsonl"
PBT_TRIAL = "pbt_trial"
"""The column of a PBT run's table naming the trial that trained each row: where it changes, the
run exploited (copied) that trial's state; the knob columns show the values each row trained with."""


@dataclass(frozen=True)
class Dimension:
    """One searched knob."""

    kind: str
    """'interval' or 'choice'"""
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    values: tuple = ()

    def extremes(self) -> tuple:
        """The values that validating the whole dimension needs: both ends, or every choice."""
        return (self.low, self.high) if self.kind == "interval" else self.values

    def tune(self):
        from ray import tune

        if self.kind == "choice":
            return tune.choice(list(self.values))
        if self.integer:
            return (tune.lograndint if self.log else tune.randint)(int(self.low), int(self.high) + 1)
        return (tune.loguniform if self.log else tune.uniform)(float(self.low), float(self.high))


@dataclass
class Settings:
    """hydra.sweeper.* of the tune sweeper."""

    num_samples: int = 8
    search: str = "random"
    scheduler: str = "none"
    objective: str = "random"
    seed: int = 0
    grace_period: int | None = None
    reduction_factor: float = 3.0
    max_concurrent: int | None = None
    perturbation_interval: int | None = None
    extra: dict = field(default_factory=dict)

    def check(self) -> None:
        def need(ok, key, value, allowed):
            if not ok:
                raise ConfigError(f"hydra.sweeper.{key}={value!r} is not allowed: {key} must be {allowed}")

        need(isinstance(self.num_samples, int) and self.num_samples >= 1, "num_samples", self.num_samples, "a positive integer")
        need(self.search in SEARCHES, "search", self.search, " or ".join(SEARCHES))
        need(self.scheduler in SCHEDULERS, "scheduler", self.scheduler, " or ".join(SCHEDULERS))
        need(self.objective in OBJECTIVES + ("opponent",), "objective", self.objective,
             " or ".join(OBJECTIVES) + ", or opponent (the one the trials train against)")
        need(isinstance(self.seed, int) and self.seed >= 0, "seed", self.seed, "a non-negative integer")
        need(self.grace_period is None or (isinstance(self.grace_period, int) and self.grace_period >= 1),
             "grace_period", self.grace_period, "a positive number of iterations or null")
        need(isinstance(self.reduction_factor, (int, float)) and self.reduction_factor > 1,
             "reduction_factor", self.reduction_factor, "a number above 1")
        need(self.max_concurrent is None or (isinstance(self.max_concurrent, int) and self.max_concurrent >= 1),
             "max_concurrent", self.max_concurrent, "a positive integer or null")
        need(self.perturbation_interval is None or
             (isinstance(self.perturbation_interval, int) and self.perturbation_interval >= 1),
             "perturbation_interval", self.perturbation_interval, "a positive number of iterations or null")
        need(not (self.search == "optuna" and self.scheduler == "pbt"), "search", self.search,
             "random with scheduler=pbt (PBT samples its population itself)")


# ---------------------------------------------------------------------------------------------
# The search space


GRAMMAR = ("interval(a,b), tag(log,interval(a,b)), choice(x,y,...), range(start,stop[,step]), "
           "a comma list x,y,... or a plain value")
"""What a search-space override may be (said by every grammar error)"""
ALIASES = {"epsilon_decay": ("epsilon_decay_per_game", "epsilon_decay_per_update")}
"""Search keys that stand for the knob of the same meaning that the searched algorithm has
(q_table decays epsilon per game, mc_vfa per update)"""
GROUPS = ("algorithm", "opponent", "net", "members", "sweeps")


def _not_allowed(override, why: str) -> ConfigError:
    return ConfigError(f"{override.input_line} is not allowed: {why}; a search space takes {GRAMMAR}")


def space(overrides, later=()) -> tuple[list[str], dict[str, Dimension]]:
    """Hydra Override objects (OverridesParser.parse_overrides) -> (the fixed overrides as
    strings, the searched knobs as Dimensions); an override in `later` (the command line)
    replaces one of `overrides` (a named search's hydra.sweeper.params) with the same key. Read as Hydra's Optuna sweeper reads them:
    `interval(a,b)` uniform, `tag(log,interval(a,b))` log-uniform, `choice(...)`, `range(...)`
    or a comma list categorical, anything that is not a sweep fixed. Anything else (glob(), other
    tags, a log tag on a list, a config group or Hydra's own setting searched) is a ConfigError
    of one line naming the override."""
    from hydra.core.override_parser.types import ChoiceSweep, Glob, IntervalSweep, RangeSweep, Transformer

    replaced = {o.get_key_element() for o in later}
    overrides = [o for o in overrides if o.get_key_element() not in replaced] + list(later)
    fixed, dims = [], {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            fixed.append(override.input_line)
            continue
        if override.is_hydra_override() or override.key_or_group in GROUPS or "/" in key \
                or override.is_add() or override.is_delete() or override.is_force_add():
            raise _not_allowed(override, "a search varies knobs (key=...), not config groups, added or "
                                         "deleted keys or Hydra's settings: fix those and search knobs")
        if key in dims:
            raise _not_allowed(override, f"{key} is searched twice")
        value = override.value()
        tags = set(getattr(value, "tags", None) or ())
        if isinstance(value, Glob):
            raise _not_allowed(override, "glob() selects config files, not knob values")
        if tags - {"log"}:
            raise _not_allowed(override, f"the only tag a search knows is log (not {', '.join(sorted(tags - {'log'}))})")
        if isinstance(value, IntervalSweep):
            low, high = value.start, value.end
            log = "log" in tags
            if not low < high or (log and low <= 0):
                raise _not_allowed(override, "an interval needs low < high (and low > 0 on a log scale)")
            dims[key] = Dimension("interval", low, high, log=log)
        elif isinstance(value, (ChoiceSweep, RangeSweep)):
            if tags:
                raise _not_allowed(override, "tag(log, ...) goes with interval(a,b) only")
            values = tuple(_plain(v) for v in override.sweep_iterator(transformer=Transformer.encode))
            if not values:
                raise _not_allowed(override, "it gives no value")
            dims[key] = Dimension("choice", values=values)
        else:
            raise _not_allowed(override, f"{type(value).__name__} is not a search dimension")
    return fixed, dims


def _plain(value):
    """An override value as a plain Python value (Hydra's encode gives strings for strings)."""
    if isinstance(value, str):
        from omegaconf import OmegaConf

        return OmegaConf.create({"v": value})["v"] if value not in ("",) else value
    return value


def resolve_objective(settings: Settings, base: dict) -> None:
    """objective=opponent: the fixed opponent the trials train against (named searches use it,
    so that `opponent=random` on the command line also changes what the search maximises)."""
    if settings.objective == "opponent":
        if base.get("opponent") not in OBJECTIVES:
            raise ConfigError(f"hydra.sweeper.objective=opponent is not allowed with opponent={base.get('opponent')}: "
                              f"it needs opponent {' or '.join(OBJECTIVES)}; set hydra.sweeper.objective="
                              f"{' or '.join(OBJECTIVES)}")
        settings.objective = base["opponent"]


def resolve(base: dict, dims: dict[str, Dimension]) -> dict[str, Dimension]:
    """The dimensions as the searched algorithm's knobs: aliases (ALIASES) replaced by its knob,
    intervals of integer knobs made integer. ConfigError when a key is not a knob it uses."""
    import typing

    algorithm = config.job(base).algorithm
    hints = {**typing.get_type_hints(RunConfig), **typing.get_type_hints(algorithm.Config)}
    uses = [k for k in config.RUN_KEYS if k != "eval_every"] + list(algorithm.Config.names())
    out = {}
    for key, dim in dims.items():
        if key in ALIASES:
            targets = [k for k in ALIASES[key] if k in uses]
            if not targets:
                raise ConfigError(f"{key} is not a knob algorithm={base.get('algorithm')} uses: it stands for "
                                  f"{' or '.join(ALIASES[key])}, and {base.get('algorithm')} has neither")
            print(f"searching {key} as {targets[0]} (algorithm={base.get('algorithm')})", file=sys.stderr)
            key = targets[0]
        if key not in uses:
            raise ConfigError(f"{key} is not a knob algorithm={base.get('algorithm')} uses: searching it "
                              f"changes nothing (its knobs: {', '.join(sorted(uses))})")
        if key in out:
            raise ConfigError(f"{key} is searched twice")
        if dim.kind == "interval" and hints.get(key) in (int, int | None):
            low, high = int(np.ceil(dim.low)), int(np.floor(dim.high))
            if not low < high:
                raise ConfigError(f"{key}=interval({dim.low:g},{dim.high:g}) is not allowed: {key} is an "
                                  "integer, and the interval holds fewer than two integers")
            dim = Dimension("interval", low, high, log=dim.log, integer=True)
        out[key] = dim
    return out


def validate(base: dict, dims: dict[str, Dimension]) -> None:
    """Every searched knob (resolved) at every extreme value, the others at the base's:
    ConfigError names the first knob and value the lab cannot run."""
    config.job(base)
    for key, dim in dims.items():
        for value in dim.extremes():
            config.job({**base, key: value})


def objective(row: dict, seats, opponent: str) -> float:
    """Exact win - loss of the greedy agent against `opponent` in its seats (mean of both in
    self-play), from one evaluated row."""
    return float(np.mean([row[evaluate.column(s, f"{opponent}_win")] - row[evaluate.column(s, f"{opponent}_loss")]
                          for s in seats]))


# ---------------------------------------------------------------------------------------------
# A trial (runs in a Ray worker)


def trainable(params: dict, base: dict, settings: dict, code: dict):
    """Tune's function trainable: one lab run, reporting at every evaluation point."""
    from ray import tune

    from lab import run as lab_run

    cfg = {**base, **params}
    try:
        job = config.job(cfg)
    except ConfigError as exc:  # validated at every extreme, but a combination can still be refused
        meta = {"run_id": None, "started_utc": pd.Timestamp.now(tz="UTC").isoformat(), "iterations": 0,
                **provenance.machine()}
        tune.report({"objective": -2.0, "iteration": 0, "episodes": 0, "rows": "[]", "meta": json.dumps(meta),
                     "status": "failed", "error": f"ConfigError: {exc}"})
        return
    trial_id = tune.get_context().get_trial_id()
    pbt = settings["scheduler"] == "pbt"
    run_id = job.run_id
    if pbt:  # a PBT trial's knobs change as it trains: its run is named by the trial, not by its knobs
        run_id = hashlib.sha256(f"{trial_id}/{json.dumps(base, sort_keys=True, default=str)}".encode()).hexdigest()[:16]
    start = None
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = (Path(folder) / "state.npz").read_bytes()
    meta = {"run_id": run_id, "started_utc": pd.Timestamp.now(tz="UTC").isoformat(),
            "iterations": job.run.iterations, **provenance.machine()}
    sent = [0]  # rows already reported (the first report of every (re)start sends them all)

    def report(iteration, rows, learner):
        if pbt:  # which trial trained each row: rows inherited by exploiting another keep its id
            for row in rows:
                row.setdefault(PBT_TRIAL, trial_id)
        metrics = {"objective": objective(rows[-1], job.run.seats, settings["objective"]),
                   "iteration": iteration, "episodes": int(rows[-1]["episodes"]),
                   "rows": json.dumps(rows[sent[0]:], default=lab_run._plain),
                   "meta": json.dumps(meta), "status": "running"}
        sent[0] = len(rows)
        if iteration == job.run.iterations:
            metrics["agent"] = base64.b64encode(learner.agent().to_bytes()).decode()
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "state.npz").write_bytes(lab_run.snapshot(learner, rows, rows[-1]["train_seconds"]))
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
        return False

    result = lab_run.run(job, code, report=report, start=start, run_id=run_id)
    if result.failed:
        rows = result.rows.drop(columns=[c for c in result.rows if c in provenance.COLUMNS
                                         or c in ("started_utc", "finished_utc", "status")])
        tune.report({"objective": -1.0, "iteration": job.run.iterations, "episodes": 0,
                     "rows": rows.to_json(orient="records"), "meta": json.dumps(meta),
                     "status": "failed", "error": str(result.rows["error"].iloc[0])})


# ---------------------------------------------------------------------------------------------
# The driver


def _collector_class():
    from ray.tune import Callback

    class Collector(Callback):
        """In the driver: gathers each trial's rows from its reports and writes its run table
        when it ends (finished, stopped or failed)."""

        def __init__(self, results_dir: str, code: dict):
            self.results_dir, self.code = results_dir, code
            self.rows, self.meta, self.agent, self.curves, self.errors = {}, {}, {}, {}, {}
            self.written = []

        def on_trial_result(self, iteration, trials, trial, result, **info):
            tid = trial.trial_id
            if result.get("status") == "failed":
                self.errors[tid] = result.get("error")
                self.rows[tid] = {}
            rows = self.rows.setdefault(tid, {})
            for row in json.loads(result["rows"]):
                rows[row.get("iteration", 0)] = row
            self.meta[tid] = json.loads(result["meta"])
            if "agent" in result:
                self.agent[tid] = base64.b64decode(result["agent"])

        def _write(self, trial, failed_error=None):
            from lab.run import RunResult

            tid = trial.trial_id
            meta = self.meta.get(tid)
            rows = self.rows.get(tid)
            if not meta or not rows:  # died before its first report: nothing to write but its end
                _log_trial(self.results_dir, tid, None, "failed")
                return
            frame = pd.DataFrame([rows[i] for i in sorted(rows)])
            error = failed_error or self.errors.get(tid)
            last = int(frame["iteration"].max())
            frame["status"] = "failed" if error else "finished" if last >= meta["iterations"] else "stopped"
            frame["error"] = error
            stamp = {"started_utc": pd.Timestamp(meta["started_utc"]), "finished_utc": pd.Timestamp.now(tz="UTC"),
                     **self.code, **{k: meta[k] for k in provenance.machine()}}
            frame = frame.assign(**stamp)
            agent = self.agent.get(tid) if frame["status"].iloc[0] == "finished" else None
            results.save(RunResult(meta["run_id"], frame, agent), self.results_dir)
            self.written.append(meta["run_id"])
            _log_trial(self.results_dir, tid, meta["run_id"], frame["status"].iloc[0])
            print(f"trial {tid} -> run {meta['run_id']} {frame['status'].iloc[0]} at iteration {last}",
                  file=sys.stderr, flush=True)
            for store in (self.rows, self.agent):
                store.pop(tid, None)

        def on_trial_complete(self, iteration, trials, trial, **info):
            self._write(trial)

        def on_trial_error(self, iteration, trials, trial, **info):
            self._write(trial, failed_error=f"trial error: {getattr(trial, 'error_file', '')}")

    return Collector


def _log_trial(results_dir, trial_id: str, run_id: str | None, status: str) -> None:
    """One line per ended trial in _search/trials.jsonl: which runs are this search's, and
    whether every trial ended (an interrupted search did not)."""
    with open(Path(results_dir) / SEARCH_DIR / TRIALS, "a") as log:
        log.write(json.dumps({"trial": trial_id, "run_id": run_id, "status": status}) + "\n")


def ended_trials(results_dir) -> dict[str, dict]:
    """trial id -> its last line in _search/trials.jsonl."""
    path = Path(results_dir) / SEARCH_DIR / TRIALS
    lines = path.read_text().splitlines() if path.exists() else []
    return {entry["trial"]: entry for entry in map(json.loads, filter(None, lines))}


def _searcher(settings: Settings, dims: dict):
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.basic_variant import BasicVariantGenerator

    if settings.search == "optuna":
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        searcher = OptunaSearch(sampler=optuna.samplers.TPESampler(seed=settings.seed))
        return ConcurrencyLimiter(searcher, settings.max_concurrent) if settings.max_concurrent else searcher
    return BasicVariantGenerator(random_state=settings.seed, max_concurrent=settings.max_concurrent or 0)


def _within(dims: dict, params: dict) -> dict:
    """PBT's explore multiplies a value by 0.8 or 1.2: kept inside the searched interval (so it
    stays a configuration validated before the search), integers rounded."""
    for key, dim in dims.items():
        if dim.kind == "interval" and key in params:
            value = min(max(params[key], dim.low), dim.high)
            params[key] = int(round(value)) if dim.integer else float(value)
    return params


def row_objective(row: dict, opponent: str) -> float | None:
    """`objective` of a stored row in the seats it was evaluated in; None between evaluations."""
    values = []
    for seat in (1, 2):
        win, loss = row.get(evaluate.column(seat, f"{opponent}_win")), row.get(evaluate.column(seat, f"{opponent}_loss"))
        if win is not None and loss is not None and not pd.isna(win) and not pd.isna(loss):
            values.append(float(win) - float(loss))
    return float(np.mean(values)) if values else None


def _asha_class():
    from types import SimpleNamespace

    from ray.tune.schedulers import ASHAScheduler

    class LabASHA(ASHAScheduler):
        """ASHA whose rung records survive an interrupted search. Tune's restore brings back the
        trials and the searcher but this scheduler as it was built, with empty rungs; so on its
        first result it replays what the lab's run tables hold: every ended trial's evaluations
        (_search/trials.jsonl), and a resumed trial's earlier evaluations (its first report after
        a restart sends all its rows). Replayed in the order they happened, they record at each
        rung the values the interrupted search had recorded, and the decisions go on the same."""

        def __init__(self, results_dir: str, objective: str, **settings):
            super().__init__(**settings)
            self.lab_results_dir, self.lab_objective, self.lab_replayed = results_dir, objective, False

        def on_trial_result(self, tune_controller, trial, result):
            if not self.lab_replayed:
                self.lab_replayed = True
                self._replay_ended_trials()
            bracket = self._trial_info.get(trial.trial_id)
            if bracket is not None:
                for row in json.loads(result.get("rows", "[]")):
                    value = row_objective(row, self.lab_objective)
                    if value is not None and row.get("iteration", 0) < result[self._time_attr]:
                        bracket.on_result(trial, row["iteration"], value * self._metric_op)
            return super().on_trial_result(tune_controller, trial, result)

        def _replay_ended_trials(self):
            runs = {e["run_id"]: trial for trial, e in ended_trials(self.lab_results_dir).items() if e["run_id"]}
            if not runs:
                return
            frame = results.load(self.lab_results_dir)
            frame = frame[frame["run_id"].isin(runs)]
            for run_id in dict.fromkeys(runs):  # in the order the trials ended
                ghost = SimpleNamespace(trial_id=runs[run_id])
                for row in frame[frame["run_id"] == run_id].sort_values("iteration").to_dict("records"):
                    value = row_objective(row, self.lab_objective)
                    if value is not None:
                        self._brackets[0].on_result(ghost, int(row["iteration"]), value * self._metric_op)

    return LabASHA


def _pbt_class():
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import PopulationBasedTraining

    class LabPBT(PopulationBasedTraining):
        """Synchronous PBT without a stale stop. When a step exploits a trial that is still saving
        its own pause checkpoint, Tune stops that trial's actor and caches a STOP "for after the
        save"; the cache outlives the actor, so the trial, restarted from the cloned checkpoint,
        was stopped at its first save (one run in some 20 ended `stopped` at the next evaluation).
        A paused trial has no pending decision of its own (pausing clears them): whatever is
        cached for it when it is chosen to run again belonged to its previous actor."""

        def choose_trial_to_run(self, tune_controller):
            trial = super().choose_trial_to_run(tune_controller)
            if trial is not None and trial.status == Trial.PAUSED:
                controller = getattr(tune_controller, "_tune_controller", tune_controller)
                controller._cached_trial_decisions.pop(trial.trial_id, None)
            return trial

    return LabPBT


def _scheduler(settings: Settings, dims: dict, iterations: int, eval_every: int, results_dir=None):
    from ray.tune.schedulers import FIFOScheduler

    if settings.scheduler == "asha":
        grace = settings.grace_period or max(eval_every, iterations // 9)
        return _asha_class()(str(results_dir), settings.objective, time_attr="iteration", max_t=iterations,
                             grace_period=grace, reduction_factor=settings.reduction_factor)
    if settings.scheduler == "pbt":
        interval = settings.perturbation_interval or max(eval_every, iterations // 10)
        return _pbt_class()(time_attr="iteration", perturbation_interval=interval,
                            hyperparam_mutations={k: d.tune() for k, d in dims.items()},
                            custom_explore_fn=functools.partial(_within, dims),
                            synch=True)  # the whole population at each step: the
        # asynchronous mode, with a population larger than the cores, compares a trial with
        # paused ones and lets the trailing trial rarely reach a step while it is the worst
    return FIFOScheduler()


def search(base: dict, dims: dict[str, Dimension], settings: Settings, address=None, num_cpus=None,
           figures=True) -> int:
    """Run the search (validated already) and write its results. Returns the exit status."""
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")  # rows travel in results: no result.json copies
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    import logging

    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    import ray
    from ray import tune

    from lab import sweep as lab_sweep

    results_dir = Path(config.check_settings(base)[0])
    job0 = config.job(base)
    storage = results_dir / SEARCH_DIR
    path = storage / "tune"
    code = provenance.code()
    ours = not ray.is_initialized()
    if ours:
        lab_sweep.connect(address, num_cpus)
    fn = tune.with_parameters(trainable, base=base, settings={"scheduler": settings.scheduler,
                                                               "objective": settings.objective}, code=code)
    identity = _identity(base, dims, settings)
    if tune.Tuner.can_restore(str(path)):
        saved = json.loads((storage / "search.json").read_text()) if (storage / "search.json").exists() else None
        if saved != identity:
            print(f"error: results_dir={results_dir} holds another search ({storage / 'search.json'} says "
                  "what it searched): use another results_dir, or delete that folder to start this one there",
                  file=sys.stderr)
            return 2
        print(f"resuming the interrupted search in {path}")
        tuner = tune.Tuner.restore(str(path), trainable=fn, resume_unfinished=True, resume_errored=True,
                                   param_space={k: d.tune() for k, d in dims.items()})
    else:
        storage.mkdir(parents=True, exist_ok=True)
        (storage / TRIALS).unlink(missing_ok=True)
        (storage / "search.json").write_text(json.dumps(identity, indent=1, default=str) + "\n")
        Collector = _collector_class()
        tuner = tune.Tuner(
            fn,
            param_space={k: d.tune() for k, d in dims.items()},
            tune_config=tune.TuneConfig(
                metric="objective", mode="max", num_samples=settings.num_samples,
                search_alg=_searcher(settings, dims),
                scheduler=_scheduler(settings, dims, job0.run.iterations, job0.run.eval_every, results_dir),
                ),  # max_concurrent: the searcher limits it (ConcurrencyLimiter, BasicVariantGenerator)
            run_config=tune.RunConfig(
                name="tune", storage_path=str(storage), verbose=0,
                callbacks=[Collector(str(results_dir), code)],
                # PBT copies the state of the best trials at each step: every checkpoint kept
                checkpoint_config=tune.CheckpointConfig(num_to_keep=None if settings.scheduler == "pbt" else 2),
                failure_config=tune.FailureConfig(max_failures=0)),
        )
    tuner.fit()
    if ours:
        lab_sweep.disconnect()  # now: at exit Ray would stop a second slower
    ended = len(ended_trials(results_dir))
    if ended < settings.num_samples:  # Ctrl-C: Tune saved its state and returned
        print(f"interrupted: {ended} of {settings.num_samples} trials ended and are saved in "
              f"{results_dir}; the same command resumes the search (a trial in progress from its "
              "last evaluation)", file=sys.stderr)
        return 130
    return finish(results_dir, base, dims, settings, figures=figures)


def _identity(base: dict, dims: dict, settings: Settings) -> dict:
    """What makes a search itself: resuming one in results_dir needs the same."""
    return json.loads(json.dumps({"base": {k: v for k, v in base.items() if k != "force"},
                                  "space": {k: vars(d) for k, d in dims.items()},
                                  "settings": vars(settings)}, default=str))


def curves(results_dir, settings: Settings) -> pd.DataFrame:
    """Every trial's objective at each evaluation point, from the run tables: run_id, status,
    episodes, objective. Only this search's runs (_search/trials.jsonl), whatever else
    results_dir holds."""
    frame = results.load(results_dir)
    frame = frame[frame["run_id"].isin({e["run_id"] for e in ended_trials(results_dir).values()})]
    points = results.evaluations(frame)
    points["objective"] = points[f"{settings.objective}_win"] - points[f"{settings.objective}_loss"]
    return points.groupby(["run_id", "iteration"], as_index=False).agg(
        episodes=("episodes", "first"), objective=("objective", "mean"), status=("status", "first"))


def finish(results_dir: Path, base: dict, dims: dict, settings: Settings, figures=True) -> int:
    """Print and write the best configuration; draw the objective of every trial."""
    table = curves(results_dir, settings)
    final = table.sort_values("iteration").groupby("run_id").tail(1)
    stopped = int((final.status == "stopped").sum())
    # trials that failed before training (no run table) count too
    failed = sum(e["status"] == "failed" for e in ended_trials(results_dir).values())
    done = final[final.status == "finished"]
    episodes = int(table.groupby("run_id").episodes.max().sum())
    print(f"{len(done) + stopped + failed} trials: {len(done)} finished, {stopped} stopped early, {failed} failed; "
          f"{episodes:,} training episodes in all")
    if done.empty:
        print("no trial finished: no best configuration", file=sys.stderr)
        return 1
    best = done.sort_values(["objective", "run_id"], ascending=[False, True]).iloc[0]
    runs = results.runs(results.load(results_dir)).set_index("run_id")
    row = runs.loc[best.run_id]
    algorithm = config.job(base).algorithm
    keys = list(config.RUN_KEYS) + list(algorithm.Config.names())
    knobs = {k: _value(row[k]) for k in keys if k in row and k != "eval_every" and _value(row[k]) is not None}
    if base.get("opponent") != "self":
        knobs.setdefault("player", base.get("player"))
    folder = results_dir / SEARCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    groups = {k: knobs.pop(k) for k in ("algorithm", "opponent") if k in knobs}
    again = " ".join(f"{k}={v}" for k, v in {**groups, **knobs}.items())
    lines = ["# @package _global_",
             f"# The best trial of the search in {results_dir} (run {best.run_id}):",
             f"# exact {settings.objective} win - loss {best.objective:.4f} after {int(best.episodes):,} episodes.",
             f"# Use it: python -m lab.sweep --config-dir {results_dir} +{SEARCH_DIR}=best [results_dir=...]",
             f"# or:     python -m lab.sweep {again}",
             "defaults:"]
    lines += [f"  - override /{k}: {v}" for k, v in groups.items()]
    lines += [f"{k}: {json.dumps(v)}" for k, v in knobs.items()]
    (folder / "best.yaml").write_text("\n".join(lines) + "\n")
    print(f"best: objective {best.objective:.4f} (exact {settings.objective} win - loss), run {best.run_id}")
    print("  " + again)
    print(f"best configuration in {folder / 'best.yaml'}")
    if figures:
        try:
            print(f"objective per trial in {figure(table, folder / 'objective.png', settings)}")
            from lab import sweep as lab_sweep

            lab_sweep.analyse([results_dir])
        except Exception as exc:  # noqa: BLE001 - a plotting problem must not lose a search
            print(f"could not draw the figures ({type(exc).__name__}: {exc})", file=sys.stderr)
    return 1 if failed else 0


def _value(v):
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return None
    return v.item() if isinstance(v, np.generic) else v


def figure(table: pd.DataFrame, path: Path, settings: Settings) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for run_id, curve in table.sort_values("episodes").groupby("run_id"):
        status = curve.status.iloc[0]
        style = {"finished": dict(color="tab:blue", alpha=0.8), "stopped": dict(color="tab:gray", alpha=0.6, linestyle="--"),
                 "failed": dict(color="tab:red", alpha=0.6)}[status]
        ax.plot(curve.episodes, curve.objective, linewidth=1, **style)
        if status == "stopped":
            ax.plot(curve.episodes.iloc[-1], curve.objective.iloc[-1], "x", color="tab:gray")
    ax.plot([], [], color="tab:blue", label="finished")
    ax.plot([], [], color="tab:gray", linestyle="--", marker="x", label="stopped by the scheduler")
    ax.set_xlabel("training episodes")
    ax.set_ylabel(f"exact win - loss against {settings.objective}")
    ax.set_title(f"search: {settings.search}, scheduler {settings.scheduler}, {table.run_id.nunique()} trials")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
