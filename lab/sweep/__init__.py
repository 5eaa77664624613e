"""The Hydra entry point: `python -m lab.sweep [--multirun] key=value ...`.

Without --multirun it trains the one configuration in this process (`hydra_main`); with it, the lab's
launcher (hydra_plugins/lab_plugins) calls `launch` with the whole grid, which is planned in full
before anything trains (`plan`: the runs to train, those finished already, the notes on them), and
Ctrl-C stops cleanly: what finished stays saved. Each results_dir a sweep trains into keeps a copy
of its command, overrides and composed config (`write_record`: RESULTS_DIR/_sweeps/<UTC time>.yaml),
so that it can be re-run. Its other modules are in docs/architecture.md's module table.
"""

import contextlib
import itertools
import json
import os
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, NamedTuple, NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf

from lab import agents, results
from lab.analysis import export
from lab.cli import fail, one_line, plural, require_writable, terminate_as_interrupt
from lab.config import jobs
from lab.config.compose import CONF_PACKAGE, Composer, flat
from lab.knobs import ConfigError
from lab.execution import ray_connection
from lab.results import columns, provenance
from lab.sweep import callbacks, dispatch, overrides
from lab.sweep.overrides import HydraKnobs
from lab.sweep.dispatch import (FORK_SECONDS, MODES, RAY_START_SECONDS, RAY_WORTH_SECONDS, RETRIES,
                                Interrupted, execute, mode, report)
from lab.execution.progress import Execution, Outcome, Progress
from lab.execution.ray_connection import TOKEN_HINT, connect, disconnect

__all__ = ["FORK_SECONDS", "MODES", "RAY_START_SECONDS", "RAY_WORTH_SECONDS", "RETRIES", "TOKEN_HINT",
           "Execution", "HydraKnobs", "Interrupted", "Outcome", "Plan", "Progress", "analyse", "connect",
           "disconnect", "execute", "launch", "list_plan", "main", "mode", "plan", "report"]


def main() -> None:
    """The command: its overrides checked first (lab.sweep.overrides), then Hydra's run or multirun."""
    terminate_as_interrupt()  # `timeout`'s SIGTERM stops a sweep as Ctrl-C does: Ray and forks stopped
    overrides.check(sys.argv[1:])
    hydra_main()


# Hydra names the job after the module of its task function (hydra.job.name, which a config can
# interpolate), and that name has always been `sweep`.
@hydra.main(version_base="1.3", config_path=f"pkg://{CONF_PACKAGE}", config_name="config")
def hydra_main(cfg: DictConfig) -> dict:
    """One run in this process (Hydra's run mode); its final exact evaluation, for on_job_end."""
    launcher = HydraConfig.get().launcher  # unused by one run, but a bad value is still a mistake
    _check_options(launcher.get("parallel", "auto"), launcher.get("figures", True), launcher.get("num_cpus"))
    try:
        p = plan([flat(cfg)])
        hooks = one_line(ConfigError)(callbacks.Hooks)(None, None, launcher.get("track"))  # the tracker only
        for note in [*unused_knobs(cfg.algorithm, HydraConfig.get().overrides.task), *p.notes]:
            print(note)
        if launcher.get("dry_run"):
            list_plan(p, [list(HydraConfig.get().overrides.task)])
            return {}
        for j in p.train:  # before it trains
            require_writable(j.results_dir)
        execution = execute(p.train, parallel=False, hooks=hooks)
    except KeyboardInterrupt as stop:
        interrupted(stop)
    status = report(p.train, execution)
    if status:
        sys.exit(status)
    job, = p.train or p.skip
    return export.final(results.read_runs(job.results_dir, [job.run_id]))  # its final eval_* columns


def unused_knobs(algorithm: str, overrides) -> list[str]:
    """A note naming the knobs on the command line that a run's algorithm does not use (layers=3
    with q_table: layers is in every configuration, for the net algorithms); none if all are used."""
    used = agents.get(algorithm).Config.names()
    given = dict.fromkeys(o.split("=", 1)[0].lstrip("+~") for o in overrides)
    unused = [key for key in given if key in agents.knob_names() and key not in used]
    return [f"note: algorithm={algorithm} does not use {', '.join(unused)}: the run is the same without "
            f"{'them' if len(unused) > 1 else 'it'} (its knobs: {', '.join(used)})"] if unused else []


def launch(config_loader, sweep_config, job_overrides, address=None, num_cpus=None, parallel="auto",
           figures=True, dry_run=False, dashboard=False, track=None, hydra_callbacks=None):
    """Called by the lab's Hydra launcher with the whole grid. Unless it is a dry run, a knob is
    invalid or nothing is left to train: joins the Ray cluster if one is named, writes the sweep's
    record and executes the runs, each saved one told to Hydra's job callbacks and the tracker
    (lab.sweep.callbacks)."""
    started = time.perf_counter()
    _check_options(parallel, figures, num_cpus)
    ahead = None
    try:
        ahead = None if dry_run else dispatch.fork_ahead(len(job_overrides), parallel, address, num_cpus)
        composer = Composer(config_loader, sweep_config)
        p = one_line(ConfigError)(plan)(composer(o) for o in job_overrides)  # a job Hydra cannot compose
        hooks = one_line(ConfigError)(callbacks.for_grid)(hydra_callbacks, sweep_config, track, composer,
                                                          job_overrides, p.first)
        if not dry_run:  # before Ray starts or a run trains
            for folder in sorted({j.results_dir for j in p.train}):
                require_writable(folder)
        print(f"{grid_size(p.train + p.skip)}, {plural(len(p.train), 'run')} to train")
        for note in p.notes:
            print(note)
        where = dispatch.mode(p.train, parallel, address, num_cpus) if p.train else None
        if parallel == "auto" and where in ("processes", "driver"):
            print(dispatch.without_ray_note(p.train, where, num_cpus))
        if dry_run:
            list_plan(p, job_overrides)
            return []
        joins = where == "ray" and ray_connection.joins(address) and not ray_connection.ray_started()
        if joins:  # a cluster that cannot be joined stops the sweep before its record is written
            ray_connection.connect(address, num_cpus, dashboard)
        if p.train:
            write_record({j.results_dir for j in p.train}, sweep_config, record_counts(p.train, p.skip))
        sys.stdout.flush()  # the notes before the progress (on stderr)
        execution = execute(p.train, address=address, num_cpus=num_cpus, parallel=parallel, started=started,
                            dashboard=dashboard, hooks=hooks, ahead=ahead)  # starts a local Ray itself
        if joins:
            ray_connection.disconnect()
            execution.seconds = time.perf_counter() - started
    except KeyboardInterrupt as stop:
        interrupted(stop)
    finally:
        if ahead:  # not trained in (nothing to train, an error): closed
            ahead.pool.close()
    status = report(p.train, execution)
    if figures:
        analyse((j.results_dir for j in p.train + p.skip), figures)
    if status:
        sys.exit(status)
    return [JobReturn(overrides=list(o), status=JobStatus.COMPLETED) for o in job_overrides]


def check_launcher(parallel, figures, num_cpus) -> None:
    """Refuse launcher options that are not allowed (a grid's and a search's): ConfigError."""
    if parallel not in (True, False, "processes", "auto"):
        raise ConfigError(f"hydra.launcher.parallel={parallel!r} is not allowed: true (Ray), processes (forks "
                          "of this process, no Ray), false (this process) or auto")
    if figures not in (True, False, "all"):
        raise ConfigError(f"hydra.launcher.figures={figures!r} is not allowed: true (the summary, the report "
                          "and the figures of up to 16 configurations), all (every figure) or false (none)")
    if num_cpus is not None and (isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1):
        raise ConfigError(f"hydra.launcher.num_cpus={num_cpus!r} is not allowed: a positive number of cores, "
                          "or null (every core)")


_check_options = one_line(ConfigError)(check_launcher)  # its refusal in one line, exit 2


def interrupted(stop: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C: one line on what is saved, exit status 130 (128 + SIGINT), no traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not break Ray's shutdown
    saved = stop.saved if isinstance(stop, Interrupted) else 0
    print(f"\ninterrupted: {plural(saved, 'finished run')} of this sweep {'is' if saved == 1 else 'are'} saved; "
          "the same command resumes the rest", file=sys.stderr)
    sys.exit(130)


def analyse(results_dirs, figures=True) -> None:
    """The figures, summary and report of each results directory (figures="all": every figure).
    Ctrl-C here: one line, exit 130; the runs are all saved, and the same command draws again."""
    import lab.analysis.report  # matplotlib and the analysis (~0.6 s): only once a sweep draws figures

    try:
        for results_dir in sorted(set(map(Path, results_dirs))):
            if results.run_files(results_dir):
                lab.analysis.report.analyse(results_dir, every=figures == "all")
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("\ninterrupted while drawing the figures: every finished run is saved; the same command "
              "draws them again", file=sys.stderr)
        sys.exit(130)


def draw_search(results_dir: Path, figures=True) -> None:
    """After a search: its figures and report; with figures="all", every figure and the summary too."""
    import lab.analysis.report  # matplotlib and plotly: loaded by the process that draws, only
    import lab.analysis.search_figures

    lab.analysis.search_figures.draw(results_dir)
    report = lab.analysis.report
    if figures == "all":
        analyse([results_dir])
    elif not report.has_extra():
        print(report.EXTRA_NOTE)
    else:
        try:
            print(f"report in {report.write_report(results_dir)} (open it in a browser)")
        except Exception as exc:  # noqa: BLE001 - the runs are saved whatever happens here
            print(f"could not write the report of {results_dir} ({type(exc).__name__}: {exc}); "
                  f"try: lab-report {results_dir}", file=sys.stderr)


class Plan(NamedTuple):
    """What a grid comes to, known before anything trains: the runs to train, those to `skip`
    (finished in results_dir), the notes on what is skipped, trained once or re-run, and `first`:
    (results_dir, run_id) -> index of the first configuration that is that run."""

    train: list[jobs.Job]
    skip: list[jobs.Job]
    notes: list[str]
    first: dict[tuple[Path, str], int]


def plan(cfgs: Iterable[dict]) -> Plan:
    """Validate every configuration, drop duplicates and finished runs (one finished by other code:
    skipped with a note when on_code_change=reuse, the default, trained again when rerun). Exits in
    one line, before anything is written, on the first invalid knob or unreadable results directory."""
    train, skip, first, stored = [], [], {}, {}
    duplicates = failed_before = stopped_before = forced = 0
    other_code = {"reuse": Counter(), "rerun": Counter()}  # code version -> runs, per switch value
    current = None
    for index, cfg in enumerate(cfgs):
        try:
            job = jobs.job(cfg)
            if job.results_dir not in stored:
                stored[job.results_dir] = results.stored(job.results_dir)
        except (ConfigError, results.ResultsError) as exc:
            fail(str(exc))
        if (job.results_dir, job.run_id) in first:
            duplicates += 1
            continue
        first[job.results_dir, job.run_id] = index
        before = stored[job.results_dir].get(job.run_id)
        if before is not None and before.status == "finished" and not job.force:
            current = current or provenance.version()
            if provenance.same_code(before.code, current):
                skip.append(job)
                continue
            other_code[job.on_code_change][provenance.version_of(before.code)] += 1
            if job.on_code_change == "reuse":
                skip.append(job)
                continue
        failed_before += before is not None and before.status == "failed"
        stopped_before += before is not None and before.status == "stopped"
        forced += before is not None and before.status == "finished" and job.force
        train.append(job)
    notes = []
    if duplicates:
        notes.append(f"{plural(duplicates, 'run')} {'repeats' if duplicates == 1 else 'repeat'} another "
                     "one in every knob their algorithm uses: trained once")
    if skip:
        notes.append(f"{plural(len(skip), 'run')} already finished in results_dir: skipped (force=true re-runs them)")
    for switch, what in (("reuse", "reused as they are (on_code_change=rerun trains them again)"),
                         ("rerun", "training them again (on_code_change=rerun)")):
        if other_code[switch]:
            notes.append(_code_change_note(other_code[switch], what))
    for count, what in ((failed_before, "failed before in results_dir: re-running them"),
                        (stopped_before, "stopped early by a search in results_dir: training them in full"),
                        (forced, "already finished in results_dir: re-running them (force=true)")):
        if count:
            notes.append(f"{plural(count, 'run')} {what}")
    return Plan(train, skip, notes, first)


def seeds_per_configuration(planned: Iterable[jobs.Job]) -> dict[tuple[Path, str], set[int]]:
    """The seeds of each configuration (a run's knobs without its seed, in its results_dir)."""
    seeds = defaultdict(set)
    for job in planned:
        knobs = job.identity()
        seed = knobs.pop("seed")
        seeds[job.results_dir, json.dumps(knobs, sort_keys=True)].add(seed)
    return seeds


def grid_size(planned: Iterable[jobs.Job]) -> str:
    """'3 configurations x 4 seeds' of distinct runs ('x 1-4 seeds' where their numbers differ)."""
    seeds = seeds_per_configuration(planned)
    counts = sorted({len(s) for s in seeds.values()})
    each = plural(counts[0], "seed") if len(counts) == 1 else f"{counts[0]}-{counts[-1]} seeds"
    return f"{plural(len(seeds), 'configuration')} x {each}"


def _code_change_note(versions: Counter, what: str) -> str:
    """How many finished runs other code versions trained, which ones, and what happens to them."""
    shown = ", ".join(f"{version} ({n})" for version, n in versions.most_common(3))
    if len(versions) > 3:
        shown += f" and {len(versions) - 3} more"
    return (f"{plural(versions.total(), 'run')} finished in results_dir {'was' if versions.total() == 1 else 'were'} "
            f"trained by other code: {shown}; "
            f"this is {provenance.version_of(provenance.code())}: {what}")


def list_plan(p: Plan, job_overrides) -> None:
    """List what would train and what is skipped, each with the overrides of its configuration."""
    for what, listed in (("train", p.train), ("skip ", p.skip)):
        for job in listed:
            overrides = " ".join(job_overrides[p.first[job.results_dir, job.run_id]])
            print(f"{what} {job.run_id}  {overrides}")
    print("dry run: nothing trained, nothing written")


def write_record(results_dirs, sweep_config: DictConfig, counts: dict) -> list[Path]:
    """Write the record (the composed primary config, command line, overrides, host, code and
    run counts) into each results_dir (module doc); returns the files."""
    now = time.gmtime()
    text = ("# A sweep that trained into this results_dir (written by lab.sweep): its command,\n"
            "# overrides and composed primary config. Re-run it with the same command.\n"
            + OmegaConf.to_yaml(OmegaConf.create(_record(sweep_config, counts, now))))
    written = []
    for results_dir in sorted(set(map(Path, results_dirs))):
        folder = results_dir / results.SWEEPS
        folder.mkdir(parents=True, exist_ok=True)
        stem = time.strftime("%Y%m%dT%H%M%SZ", now)
        # two sweeps started in the same second keep both records, named to sort in order
        for n in itertools.count(1):
            path = folder / (f"{stem}.yaml" if n == 1 else f"{stem}_{n:03d}.yaml")
            with contextlib.suppress(FileExistsError), open(path, "x") as f:
                f.write(text)
                break
        written.append(path)
    return written


def record_counts(train: list, skip: list) -> dict:
    """The record's counts: configurations (knobs but the seed), distinct seeds, runs to train, skipped."""
    seeds = seeds_per_configuration(train + skip)
    return {"configurations": len(seeds), "seeds": len(set().union(*seeds.values())),
            "train": len(train), "skip": len(skip)}


def _record(sweep_config: DictConfig, counts: dict, now: time.struct_time) -> dict:
    primary = OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])
    try:
        composed = OmegaConf.to_container(primary, resolve=True)
    except Exception:  # noqa: BLE001 - an interpolation only a job can resolve: kept as written
        composed = OmegaConf.to_container(primary, resolve=False)
    hydra_node = sweep_config.get("hydra")

    def node(key):
        found = OmegaConf.select(hydra_node, key) if hydra_node is not None else None
        return OmegaConf.to_container(found, resolve=False) if OmegaConf.is_config(found) else found

    code, cwd = provenance.code(), None
    with contextlib.suppress(OSError):  # gone: a Ray job's unpacked working_dir can be replaced
        cwd = os.getcwd()
    return {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", now),
        "command": code["command"],
        "cwd": cwd,
        "host": provenance.machine()["host"],
        "code": {k: code[k] for k in columns.CODE},
        "overrides": node("overrides.task") or [],
        "hydra_overrides": node("overrides.hydra") or [],
        "sweeper": node("sweeper"),
        "launcher": node("launcher"),
        "runs": counts,
        "config": composed,
    }
