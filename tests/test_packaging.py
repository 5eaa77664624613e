"""The lab as users install and call it: a wheel or an editable install that carries its configs
(mapped from conf/ and sweeps/, no links), console scripts, the Hydra groups `--help` lists, and
named sweeps that are grids with or without --multirun."""

import os
import site
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from lab import results
from sweeping import REPO, clean_env, cli


def test_help_lists_exactly_the_labs_groups(tmp_path):
    done = cli(["--help"], tmp_path)
    groups = done.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    listed = sorted(line.split(":")[0] for line in groups.splitlines() if ": " in line)
    assert listed == ["algorithm", "board", "game", "matchup", "members", "net", "opponent", "sweeps"]
    assert "game: mnk_4_4_4, mnk_5_5_4, ttt" in groups
    assert "board: mnk_4_4_4_alphazero, mnk_4_4_4_mc_vfa," in groups  # chosen by game and algorithm
    assert "matchup: ttt_mc_vfa_random, ttt_q_net_onestep, ttt_q_net_random" in groups  # chosen by game, algorithm and opponent
    assert ("sweeps: all_algorithms, boards_4x4, boards_5x5, search_alphazero, search_mc_vfa, search_negamax_q, search_q_net, "
            "search_q_table, search_td_value, smoke, writeup_alphazero, writeup_mc_vfa, writeup_negamax_q, "
            "writeup_q_table, writeup_td_value"
            in groups)


def test_a_named_sweep_without_multirun_runs_its_grid(tmp_path):
    done = cli(["+sweeps=smoke", "iterations=2", "results_dir=out", "hydra.launcher.parallel=false",
                "hydra.launcher.figures=false"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 configurations x 2 seeds, 4 runs to train" in done.stdout
    table = results.load(tmp_path / "out")
    assert sorted(table.drop_duplicates("run_id")[["layers", "seed"]].itertuples(index=False)) == \
        [(2, 0), (2, 1), (3, 0), (3, 1)]


def _venv_with_lab(tmp_path, install: list) -> Path:
    """A fresh virtual environment with this environment's packages (numpy, ray, hydra ...) but
    not its editable lab, and the lab installed by `pip install --no-deps INSTALL`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    ours = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if os.path.isdir(p)]
    with open(os.path.join(purelib, "deps.pth"), "w") as f:
        f.write("\n".join(dict.fromkeys(ours)) + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", *install], check=True)
    return venv


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["wheel", "editable"])
def test_an_installed_lab_runs_a_named_sweep_outside_the_repository(tmp_path, mode):
    """Install the lab (a built wheel, or editable from the repository) into a fresh virtual
    environment and run a named sweep from an empty directory: the configs and named sweeps are
    found through the package mapping of pyproject.toml, not through links or the cwd."""
    if mode == "wheel":
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "dist", REPO],
                               check=True, capture_output=True, text=True)
        assert "absent from the `packages` configuration" not in built.stdout + built.stderr
        (wheel,) = (tmp_path / "dist").glob("*.whl")
        venv = _venv_with_lab(tmp_path, [wheel])
        home = venv
    else:
        venv = _venv_with_lab(tmp_path, ["-e", REPO])
        home = REPO
    empty = tmp_path / "empty"
    empty.mkdir()
    env = clean_env(PYTHONPATH="")
    where = subprocess.run([venv / "bin" / "python", "-c", "import lab.conf, lab.sweeps; "
                            "print(lab.__file__, lab.conf.__file__, lab.sweeps.__file__)"],
                           cwd=empty, env=env, check=True, capture_output=True, text=True).stdout.split()
    assert all(path.startswith(str(home)) for path in where), where
    done = subprocess.run([venv / "bin" / "lab-sweep", "+sweeps=smoke", "iterations=2",
                           "results_dir=out", "hydra.launcher.parallel=false",
                           "hydra.launcher.figures=false"],
                          cwd=empty, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(list((empty / "out").glob("*.parquet"))) == 4
    if mode == "wheel":  # the report's page template travels with the wheel
        done = subprocess.run([venv / "bin" / "lab-report", "out"], cwd=empty, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (empty / "out" / "_report" / "index.html").stat().st_size > 1_000_000


def test_the_lab_holds_no_symbolic_links():
    """A checkout without symlinks (Windows, some archives) must hold the whole lab."""
    links = [path for root in ("lab", "conf", "sweeps", "hydra_plugins", "analysis", "tests")
             for path in (REPO / root).rglob("*") if path.is_symlink()]
    assert links == []


def test_every_package_of_the_lab_is_installed():
    """pyproject.toml lists the packages (lab.conf and lab.sweeps are mapped from conf/ and
    sweeps/): a new subpackage of lab/ or hydra_plugins/ missing from it would be left out of
    the wheel."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(init.parent.relative_to(REPO).parts)
               for root in ("lab", "hydra_plugins") for init in (REPO / root).rglob("__init__.py")}
    mapped = {package: REPO / folder for package, folder in setuptools["package-dir"].items()}
    missing = on_disk - set(setuptools["packages"])
    assert not missing, f"pyproject.toml [tool.setuptools] packages lacks {sorted(missing)}: the wheel leaves them out"
    groups = {f"lab.conf.{folder.name}" for folder in (REPO / "conf").iterdir() if any(folder.glob("*.yaml"))}
    assert set(setuptools["packages"]) == on_disk | set(mapped) | groups | {"lab", "hydra_plugins"}
    assert mapped == {"lab.conf": REPO / "conf", "lab.sweeps": REPO / "sweeps"}


def test_tab_completion_of_lab_sweep(tmp_path, monkeypatch):
    monkeypatch.setenv("COMP_LINE", "lab-sweep +sweeps=s")
    done = cli(["-sc", "query=bash"], tmp_path)
    assert done.stdout.split() == [f"+sweeps=search_{a}" for a in ("alphazero", "mc_vfa", "negamax_q", "q_net",
                                                                    "q_table", "td_value")] + [
        "+sweeps=smoke"]
    monkeypatch.setenv("COMP_LINE", "lab-sweep +sweeps=w")
    assert cli(["-sc", "query=bash"], tmp_path).stdout.split() == [
        f"+sweeps=writeup_{a}" for a in ("alphazero", "mc_vfa", "negamax_q", "q_table", "td_value")]
    monkeypatch.setenv("COMP_LINE", "lab-sweep algorithm=q")
    assert cli(["-sc", "query=bash"], tmp_path).stdout.split() == ["algorithm=q_net", "algorithm=q_table"]
