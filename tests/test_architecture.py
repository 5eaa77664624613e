"""docs/architecture.md lets a reader add a seventh algorithm: following its steps in a copy of the
repository (the code blocks captioned with a file's path, then its shell commands) gives an
algorithm that trains through a real sweep on 3x3 and on 4x4, shows up in the knob reference and
learns on both."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lab import game
from lab.game import opponents
from sweeping import REPO, clean_env

PAGE = REPO / "docs" / "architecture.md"
SECTION = "## Adding an algorithm, step by step"
FILE_BLOCK = re.compile(r"```\{code-block\} \w+\n:caption: (\S+)( \(.*\))?\n\n(.*?)\n```", re.S)
"""A block captioned with a path: the file's whole text, or with a note in parentheses, the
lines that change in it"""


def steps() -> str:
    text = PAGE.read_text()
    start = text.index(SECTION)
    return text[start:text.index("\n## ", start + len(SECTION))]


def apply_edit(path: Path, lines: list[str]) -> None:
    """Replace each line of the file that starts with the same three words as a shown line."""
    text = path.read_text().split("\n")
    for shown in lines:
        key = shown.split()[:3]
        matches = [i for i, line in enumerate(text) if line.split()[:3] == key]
        assert len(matches) == 1, f"{path}: the page's line {shown!r} matches {len(matches)} lines"
        text[matches[0]] = shown
    path.write_text("\n".join(text))


def follow(copy: Path) -> list[str]:
    """Apply the page's file blocks in the copy; return its shell commands, in order."""
    section = steps()
    blocks = FILE_BLOCK.findall(section)
    assert [path for path, _, _ in blocks] == ["lab/agents/mc_table.py", "lab/agents/__init__.py",
                                               "conf/algorithm/mc_table.yaml"]
    for path, note, body in blocks:
        if note:
            apply_edit(copy / path, body.split("\n"))
        else:
            (copy / path).write_text(body + "\n")
    return [line for block in re.findall(r"```bash\n(.*?)```", section, re.S) for line in block.splitlines()]


@pytest.mark.slow
@pytest.mark.integration
def test_following_the_page_adds_an_algorithm_that_trains_through_a_sweep(tmp_path):
    copy = tmp_path / "lab-copy"
    shutil.copytree(REPO, copy, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "results", "__pycache__", "_build", "*.egg-info", ".pytest_cache"))
    for configs in ("conf", "sweeps"):  # run from its folder, the copy must read its own configs
        link = copy / "lab" / configs  # (a link where the lab ships them by a package mapping)
        if not link.exists():
            link.symlink_to(Path("..") / configs)
    commands = follow(copy)
    assert commands[0] == "python -m lab.reference > docs/knobs.md" and "lab.sweep" in commands[1]
    assert "game=mnk_4_4_4" in commands[2] and "results_dir=results/mc_table_4x4" in commands[2]
    env = clean_env(PYTHONPATH=str(copy))
    for command in commands:
        done = subprocess.run(command.replace("python ", f"{sys.executable} ", 1), shell=True, cwd=copy,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    knobs = (copy / "docs" / "knobs.md").read_text()
    assert "## `mc_table`" in knobs
    assert "| `alpha` | number | `0.1` | step size of an afterstate's value" in knobs
    runs = pd.read_parquet(copy / "results" / "mc_table").groupby("run_id").last()
    assert len(runs) == 2 and (runs.status == "finished").all() and (runs.algorithm == "mc_table").all()
    assert (runs.eval_p1_random_win > 0.7).all(), runs.eval_p1_random_win  # a random X wins 0.585
    on_4x4 = pd.read_parquet(copy / "results" / "mc_table_4x4").groupby("run_id").last()
    assert len(on_4x4) == 2 and (on_4x4.status == "finished").all() and (on_4x4.m == 4).all()
    assert (on_4x4.evaluation == "exact").all()
    assert (on_4x4.eval_p1_random_win > 0.33).all(), on_4x4.eval_p1_random_win  # a random X wins 0.317
    checkpoint = next((copy / "results" / "mc_table" / "_checkpoints").glob("*.npz"))
    play = f"import lab.agents; print(lab.agents.load({str(checkpoint)!r}).act([1, 0, 0, 0, -1, 0, 0, 0, 0]))"
    done = subprocess.run([sys.executable, "-c", play], cwd=copy, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and int(done.stdout) in (1, 2, 3, 5, 6, 7, 8), done.stderr


def test_the_pages_example_opponent_is_a_move_table():
    """The mask the page's opponent steps add to lab.game.opponents.table gives a legal move table."""
    (expression,) = re.findall(r'`"center": lambda: (.+?)`', PAGE.read_text().replace("\n   ", " "))
    moves = game.uniform_over(eval(expression, {**vars(opponents), "np": np}))  # noqa: S307 - the page's own code
    rows = moves[game.DECISIONS]
    assert np.allclose(rows.sum(axis=1), 1) and not (rows * ~game.LEGAL[game.DECISIONS]).any()
    assert moves[game.EMPTY, 4] == 1 and moves[game.AFTER[game.EMPTY, 4]].max() < 1  # centre, else random
