"""What a grid comes to, known before anything trains: the runs to train, those already finished
in results_dir (skipped), and the notes said about them."""

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, NamedTuple

from lab import results
from lab.config import jobs
from lab.results import provenance
from lab.cli import fail, plural
from lab.config.jobs import Job


class Plan(NamedTuple):
    """What a grid comes to, known before anything trains."""

    train: list[Job]
    skip: list[Job]
    """runs already finished in results_dir"""
    notes: list[str]
    """on what is skipped, trained once or re-run"""
    first: dict[tuple[Path, str], int]
    """(results_dir, run_id) -> index of the first configuration that is that run"""


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
        except (jobs.ConfigError, results.ResultsError) as exc:
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


def seeds_per_configuration(planned: Iterable[Job]) -> dict[tuple[Path, str], set[int]]:
    """The seeds of each configuration (a run's knobs without its seed, in its results_dir)."""
    seeds = defaultdict(set)
    for job in planned:
        knobs = job.identity()
        seed = knobs.pop("seed")
        seeds[job.results_dir, json.dumps(knobs, sort_keys=True)].add(seed)
    return seeds


def grid_size(planned: Iterable[Job]) -> str:
    """'3 configurations x 4 seeds' of distinct runs; 'x 1-4 seeds' where configurations have
    different numbers of seeds."""
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
