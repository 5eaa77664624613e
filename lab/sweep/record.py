"""The sweep record: a copy of a sweep's command, overrides and composed config in each results_dir
it trains into (RESULTS_DIR/_sweeps/<UTC time>.yaml), so that it can be re-run."""

import contextlib
import itertools
import os
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from lab import results
from lab.results import columns, provenance
from lab.sweep.planning import seeds_per_configuration


def write(results_dirs, sweep_config: DictConfig, counts: dict) -> list[Path]:
    """Write the record (the composed primary config, command line, overrides, host, code and
    run counts) into RESULTS_DIR/_sweeps/<UTC time>.yaml of each results_dir; returns the files."""
    now = time.gmtime()
    text = ("# A sweep that trained into this results_dir (written by lab.sweep.record): its command,\n"
            "# overrides and composed primary config. Re-run it with the same command.\n"
            + OmegaConf.to_yaml(OmegaConf.create(_document(sweep_config, counts, now))))
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


def counts(train: list, skip: list) -> dict:
    """The record's counts: configurations (knobs but the seed), distinct seeds, runs to train, skipped."""
    seeds = seeds_per_configuration(train + skip)
    return {"configurations": len(seeds), "seeds": len(set().union(*seeds.values())),
            "train": len(train), "skip": len(skip)}


def _document(sweep_config: DictConfig, counts: dict, now: time.struct_time) -> dict:
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
