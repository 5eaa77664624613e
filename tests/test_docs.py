"""The docs (docs/, a Sphinx site) and the README: the site builds in strict mode, their links
resolve, and every lab command they show in a ```bash block runs: a sweep as a dry run (which
validates every knob and plans every run, training nothing), any other lab command's options
against its --help. Templates with placeholders go in ```text blocks."""

import functools
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sweeping import REPO, clean_env

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SCRIPTS = {name: target.split(":")[0] for name, target in
           tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"].items()}
"""Installed commands -> their modules (lab-sweep -> lab.sweep)"""
RUNS = re.compile(r"^\s*(\d+) runs")
"""A sweep's comment that says how many runs it trains"""


def shown_commands() -> list[tuple[str, list[str], str]]:
    """(page, argv, comment) of every lab command in a ```bash block of the README and the docs;
    `a && b` are two commands, a trailing backslash continues the line."""
    shown = []
    for page in PAGES:
        if page.name == "architecture.md":  # its commands need the algorithm it adds: test_architecture.py
            continue
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                code, comment = (re.split(r"(?:^|\s)#", line, maxsplit=1) + [""])[:2]
                for part in code.split("&&"):
                    argv = program(shlex.split(part))
                    if argv:
                        shown.append((page.name, argv, comment))
    return shown


def program(words: list[str]) -> list[str] | None:
    """The command as `python -m MODULE ARGS` / `python SCRIPT ARGS`, or None if not the lab's."""
    module = words[:2] == ["python", "-m"] and words[2].startswith("lab.")
    script = words[:1] == ["python"] and len(words) > 1 and words[1].startswith("analysis/")
    if module or script:
        return [sys.executable, *words[1:]]
    if words and words[0] in SCRIPTS:
        return [sys.executable, "-m", SCRIPTS[words[0]], *words[1:]]
    return None


PLACEHOLDER = re.compile(r"<|\.\.\.|\||\b[A-Z][A-Z_]+\b| -sc | --help")
"""What marks a command written in prose as a template (`+sweeps=NAME`, `opponent=<name>`, ...)"""


def inline_sweeps() -> list[tuple[str, list[str], str]]:
    """Sweeps written in prose as `python -m lab.sweep ...` with nothing left to fill in."""
    found = []
    for page in PAGES:
        prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S).replace("\n", " ")
        for command in re.findall(r"`((?:python -m lab\.sweep|lab-sweep) [^`]*)`", prose):
            if not PLACEHOLDER.search(f" {command} "):
                found.append((page.name, program(shlex.split(command)), ""))
    return found


SWEEPS = [(page, argv, comment) for page, argv, comment in shown_commands()
          if argv[1:3] == ["-m", "lab.sweep"]] + inline_sweeps()
OTHERS = [(page, argv) for page, argv, _ in shown_commands() if argv[1:3] != ["-m", "lab.sweep"]]


NAMED_SWEEPS = ["smoke", "writeup_mc_vfa", "writeup_q_table", "writeup_alphazero", "writeup_td_value",
                "writeup_negamax_q", "all_algorithms", "boards_4x4", "boards_5x5"]


def dry_run(args: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess:
    """The sweep's dry run: every knob validated and every run planned, nothing trained or written.
    A single run (no --multirun) is checked as a one-job sweep, which validates the same knobs.
    The same command shown twice (`+sweeps=X`, `--multirun +sweeps=X`) runs once."""
    return _dry_runs(cwd)[_one_job(args)].result()


def _one_job(args) -> tuple[str, ...]:
    return tuple(a for a in args if a != "--multirun")


@functools.cache
def _dry_runs(cwd: Path) -> dict:
    """Every dry run of this module, started at the first one asked for, one per core at a time:
    each is a Python process that mostly imports (one after another, 49 took 71 s)."""
    wanted = dict.fromkeys([_one_job(argv[3:]) for _, argv, _ in SWEEPS] + [(f"+sweeps={n}",) for n in NAMED_SWEEPS])
    pool = ThreadPoolExecutor(os.cpu_count() or 1)
    env = clean_env()  # read here: pytest changes os.environ between tests while the threads run
    return {args: pool.submit(_dry_run, args, cwd, env) for args in wanted}


def _dry_run(args: tuple[str, ...], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "lab.sweep", "--multirun", *args, "hydra.launcher.dry_run=true"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def empty_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs-commands")


def planned_runs(done: subprocess.CompletedProcess) -> int:
    found = re.search(r"^\d+ configurations? x [\d-]+ seeds?, (\d+) runs? to train", done.stdout, re.M)
    assert found, done.stdout[-1000:]
    return int(found.group(1))


@pytest.mark.integration
@pytest.mark.parametrize("page, argv, comment", SWEEPS, ids=[" ".join(a[3:])[:60] for _, a, _ in SWEEPS])
def test_every_sweep_shown_runs_as_a_dry_run(page, argv, comment, empty_dir):
    done = dry_run(tuple(argv[3:]), empty_dir)
    assert done.returncode == 0, f"{page}: {' '.join(argv[1:])}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    assert "dry run: nothing trained, nothing written" in done.stdout
    assert not any(empty_dir.iterdir()), "a dry run wrote something"
    if RUNS.search(comment):
        assert planned_runs(done) == int(RUNS.search(comment).group(1)), f"{page}: {comment}"


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMED_SWEEPS)
def test_the_named_sweep_tables_give_the_runs_a_sweep_plans(name, empty_dir):
    """README.md and docs/sweeps.md list the named sweeps with their runs: what a dry run plans."""
    planned = planned_runs(dry_run((f"+sweeps={name}",), empty_dir))
    for page in (REPO / "README.md", REPO / "docs" / "sweeps.md"):
        row = re.search(rf"^\| `{name}` \|.*\| (\d+) \|$", page.read_text(), re.M)
        assert row and int(row.group(1)) == planned, f"{page.name}: +sweeps={name} plans {planned} runs"


@pytest.mark.integration
@pytest.mark.parametrize("argv", sorted({tuple(a[:3]) for _, a in OTHERS}), ids=lambda a: " ".join(a[1:]))
def test_every_other_lab_command_shown_takes_its_options(argv):
    helped = subprocess.run([*argv, "--help"], cwd=REPO, env=clean_env(), capture_output=True, text=True,
                            timeout=120)
    assert helped.returncode == 0, helped.stderr
    for page, shown in OTHERS:
        if tuple(shown[:3]) == argv:
            for option in (word for word in shown[2:] if re.match(r"\[?--[a-z]", word)):
                option = option.strip("[]")
                assert option in helped.stdout, f"{page}: {' '.join(shown[1:])}: no {option} in {argv[-1]}"


def test_the_commands_shown_are_found():
    """Guards the extraction itself: the README's first line is three commands, two of the lab's."""
    first = [argv[1:] for page, argv, _ in shown_commands() if page == "README.md"][:2]
    assert first == [["-m", "lab.sweep", "--multirun", "+sweeps=smoke"],
                     ["analysis/plot_winrates.py", "results/smoke"]]
    assert len(SWEEPS) >= 15 and len(OTHERS) >= 10
    assert ("writeups.md", ["-m", "lab.sweep", "--multirun", "+sweeps=writeup_mc_vfa", "precision=float64",
                            "results_dir=results/writeup_mc_vfa_float64"]) in [(p, a[1:]) for p, a, _ in SWEEPS]


def test_the_readme_keeps_its_two_commands_and_stays_an_entry_point():
    readme = (REPO / "README.md").read_text()
    assert readme.split("\n")[2:6] == [
        "```bash",
        "pip install -e . && python -m lab.sweep --multirun +sweeps=smoke && "
        "python analysis/plot_winrates.py results/smoke",
        "pip install -e '.[test]' && python -m pytest -n auto",
        "```"]
    assert len(readme.encode()) <= 12 * 1024


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
        if not re.match(r"[a-z]+:", target):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def sphinx(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           str(source), str(out)], capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_the_docs_build_in_strict_mode(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    done = sphinx(REPO / "docs", tmp_path / "html")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "html" / "knobs.html").exists() and (tmp_path / "html" / "architecture.html").exists()


@pytest.mark.integration
def test_a_broken_link_or_a_page_left_out_fails_the_build(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    faults = {"page link": ("speed.md", "[gone](nowhere.md)\n"), "anchor": ("speed.md", "[gone](knobs.md#gone)\n"),
              "orphan page": ("orphan.md", "# In no table of contents\n")}
    for fault, (name, text) in faults.items():
        docs = tmp_path / fault.replace(" ", "-")
        shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns("_build"))
        page = docs / name
        page.write_text(text + (page.read_text() if page.exists() else ""))
        done = sphinx(docs, docs.with_name(f"{docs.name}-html"))
        assert done.returncode != 0 and "WARNING" in done.stderr, fault


NOT_CODE = {"lab.run_id"}
"""Dotted names the docs mention that are not Python: the MLflow tag lab-export writes"""


def test_every_module_and_name_of_the_lab_the_docs_mention_exists():
    text = "".join(page.read_text() for page in PAGES)
    stale = []
    for dotted in sorted(set(re.findall(r"\blab(?:\.\w+)+", text)) - NOT_CODE):
        parts = dotted.split(".")
        for known in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:known]))
                break
            except ImportError:
                continue
        for name in parts[known:]:
            found = getattr(found, name, None)
        if found is None:
            stale.append(dotted)
    for path in sorted(set(re.findall(r"`((?:lab|tests|analysis|sweeps|conf|hydra_plugins)/[\w/.\-]*)`", text))):
        if not (REPO / path).exists() and not re.search(r"[A-Z]{2,}", path):  # NAME: a template
            stale.append(path)
    assert not stale, f"the docs name what the code no longer has: {stale}"
