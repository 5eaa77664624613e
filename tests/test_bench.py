"""The benchmark's in-process measurements run on the current API (they are not run by CI
otherwise: `python -m lab.bench` takes minutes)."""

import sys

import pytest

from lab.bench import boards, cluster, parallel, search, throughput
from lab.bench.report import REPORT_GRID


def test_in_process_measurements_run():
    assert throughput.engine_games_per_second(0.05) > 0
    overrides, _ = throughput.CASES["q_table"]
    assert throughput.training_episodes_per_second([*overrides, "episodes_per_update=100"], 0.05) > 0
    assert 0 < throughput.evaluation_point_ms(["algorithm=q_table", "episodes_per_update=100"],
                                         iterations=1, repeats=2) < 1000


def test_longest_first_makespan():
    assert parallel.longest_first_makespan([3, 3, 2, 2, 2], cores=2) == 7  # 3+2+2 | 3+2
    assert parallel.longest_first_makespan([5, 1, 1], cores=4) == 5


@pytest.mark.integration
def test_the_plain_optuna_baseline_runs():
    """The search section's baseline (Optuna alone over lab.run) searches and finds a value."""
    best, episodes = search.plain_optuna(0, trials=2, processes=2)
    assert -1 <= best <= 1 and 2 * 12_000 <= episodes <= 2 * 100_000  # each trained to a rung at least


def test_the_report_sections_grid_is_2500_configurations_of_the_current_knobs(tmp_path):
    from lab import sweep
    from lab.config.compose import grid

    composer, jobs = grid(*REPORT_GRID, "seed=0", f"results_dir={tmp_path}")
    planned = sweep.plan(composer(o) for o in jobs).train
    assert len(planned) == 2500 and len({j.run_id for j in planned}) == 2500
    assert {round(j.knobs.alpha, 2) for j in planned} == {round(0.04 * i, 2) for i in range(1, 26)}


def test_the_cluster_section_reads_the_sweeps_cores_line():
    log = ("run abc done; 64/64 finished\n64 runs finished, 0 failed; results in /r\n"
           "cores: 88% of 2 cores busy over 39.8 s; fixed cost 3.2 s (planning, starting workers, saving)\n"
           "srun: error: node1: task 0: Killed\n")
    seconds, line = cluster.cores_line(log)
    assert seconds == 39.8 and line.startswith("88% of 2 cores busy over 39.8 s; fixed cost 3.2 s")


def test_the_boards_section_runs_quick_and_the_engine_is_the_faster(capsys):
    pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install 'tictactoe-lab[boards]')")
    boards.boards_section(quick=True)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[:2] for row in rows] == [["3x3", "k3"], ["4x4", "k4"], ["5x5", "k4"]]
    for row in rows:
        lab_rate, python_rate, bots_rate = (float(figure.replace(",", "")) for figure in row[2:5])
        assert lab_rate > max(python_rate, bots_rate) > 0
        # the ratio is of the unrounded rates, the columns rounded to whole games: 0.1 either way
        assert float(row[5][:-1]) == pytest.approx(lab_rate / max(python_rate, bots_rate), abs=0.11)


def test_the_boards_section_says_how_to_install_openspiel_when_it_is_missing(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` fail
    boards.boards_section(quick=True)
    assert capsys.readouterr().out == boards.INSTALL_NOTE + "\n"


def test_the_absorption_benchmark_stores_and_records_every_run_handed_over():
    from lab.bench import driver

    jobs, packs = driver._packed_runs(30, checkpoints=True)
    for written in (False, True):  # sent home (the driver commits) or stored by the workers
        assert driver.runs_absorbed_per_second(jobs, packs, together=13, written=written) > 0
