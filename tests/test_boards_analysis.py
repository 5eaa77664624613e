"""Figures, summary, report and play on bigger boards (issue 26): a results_dir holding a tiny
3x3 run, two tiny 4x4 runs (exact evaluation) and a tiny 5x5 run (evaluation by games) goes
through every view, split by game, while a 3x3-only results_dir keeps its file names and columns."""

import io
import importlib.util
import shutil
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from lab import play, results, stats
from lab.analysis import knob_figures, plots, report, summary
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run

TINY = ("layers=1", "neurons=8", "episodes_per_update=5", "eval_every=2", "iterations=4")
RUNS = {
    "ttt": TINY,
    "4x4": ("game=mnk_4_4_4", *TINY),
    "4x4 alpha": ("game=mnk_4_4_4", "alpha=0.1", *TINY),
    "5x5": ("game=mnk_5_5_4", "player=1", "opponent=random", "eval_games=100", *TINY[:-1], "iterations=2"),
}
REPO = Path(__file__).resolve().parents[1]
TTT_FIGURES = {"mc_vfa_ttt_player2_l1_n8.png", "mc_vfa_exact_ttt_player2_l1_n8.png", "comparison_exact_win.png",
               "mc_vfa_outcomes_ttt_player2_l1_n8_a0.0154_e5_i4.png"}
"""The figures of the tiny 3x3 run, named as before bigger boards"""


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """(mixed results_dir (with the 3x3 run's checkpoint, ttt.npz), 3x3-only results_dir, a 4x4
    checkpoint)"""
    mixed, ttt = tmp_path_factory.mktemp("mixed"), tmp_path_factory.mktemp("ttt")
    for name, overrides in RUNS.items():
        result = run(job(compose(*overrides)))
        assert not result.failed, result.rows["error"].iloc[0]
        results.commit(mixed, results.pack([result]))
        path = mixed / f"{result.run_id}.parquet"
        if name == "ttt":
            shutil.copy(path, ttt)
            (mixed / "ttt.npz").write_bytes(result.checkpoint)
        elif name == "4x4":
            checkpoint = mixed / "board.npz"
            checkpoint.write_bytes(result.checkpoint)
    return mixed, ttt, checkpoint


@pytest.fixture
def drawn(monkeypatch):
    """{file name: figure} of every figure saved, kept open to be looked at."""
    figures = {}

    def keep(fig, path):
        figures[path.name] = fig
        return path
    monkeypatch.setattr(knob_figures, "save", keep)  # every figure's PNG, lab.analysis.plots' too
    return figures


def _titles(fig) -> str:
    return " ".join([fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes])


def _dashed(fig) -> int:
    return sum(line.get_linestyle() == "--" for ax in fig.axes for line in ax.lines)


def test_figures_of_each_game_apart_named_after_it(dirs, drawn, tmp_path):
    open_before = plt.get_fignums()
    plots.all_figures(dirs[0], tmp_path)
    assert plt.get_fignums() == open_before  # closed even though `drawn` saved none of them
    assert TTT_FIGURES <= set(drawn)
    board = {"mc_vfa_mnk_4_4_4_player2_l1_n8.png", "mc_vfa_exact_mnk_4_4_4_player2_l1_n8.png",
             "comparison_mnk_4_4_4_win.png", "mc_vfa_mnk_5_5_4_player1_l1_n8.png",
             "mc_vfa_games_mnk_5_5_4_player1_l1_n8.png", "comparison_mnk_5_5_4_win.png"}
    assert board <= set(drawn)
    if stats.available():
        assert "mc_vfa_mnk_4_4_4_knobs_O.png" in drawn and "mc_vfa_knobs_O.png" not in drawn
    for name, fig in drawn.items():
        titles, on = _titles(fig), name.split("_knobs")[0]
        for game in ("mnk_4_4_4", "mnk_5_5_4"):  # a board's figure names its game and no other
            assert (game in titles) == (game in on), (name, titles)
        if "ttt" in on or name == "comparison_exact_win.png":
            assert "mnk_" not in titles, name
    assert _dashed(drawn["mc_vfa_exact_ttt_player2_l1_n8.png"]) == 4  # 3x3's ceilings: win and loss vs random and onestep
    # 4x4's ceilings (lab.evaluation.exact_ceiling): win and loss vs random, onestep and perfect; the win vs
    # random and onestep in the comparison; none on 5x5, which the lab does not solve
    four = drawn["mc_vfa_exact_mnk_4_4_4_player2_l1_n8.png"]
    assert [line.get_ydata()[0] for ax in four.axes for line in ax.lines if line.get_linestyle() == "--"] \
        == pytest.approx([0.9745892237103172, 0, 0.9745892237103172, 0, 0, 0])
    assert _dashed(drawn["comparison_mnk_4_4_4_win.png"]) == 2
    assert _dashed(drawn["mc_vfa_games_mnk_5_5_4_player1_l1_n8.png"]) == 0
    exact = [ax.get_ylabel() for ax in drawn["mc_vfa_exact_mnk_4_4_4_player2_l1_n8.png"].axes]
    assert {"loss rate vs perfect", "optimal-move rate", "losing lines / all lines"} <= set(exact)
    by_games = drawn["mc_vfa_games_mnk_5_5_4_player1_l1_n8.png"]
    assert [ax.get_ylabel() for ax in by_games.axes] == ["win rate vs random", "loss rate vs random"]
    assert all(ax.collections for ax in by_games.axes)  # the Wilson bands of one seed


def test_a_3x3_results_dir_draws_the_figures_it_drew(dirs, drawn, tmp_path):
    plots.all_figures(dirs[1], tmp_path)
    assert set(drawn) == TTT_FIGURES


def test_summary_ranks_each_game_apart_with_intervals_by_games(dirs, tmp_path):
    best, written = summary.write_summary(dirs[0], tmp_path)
    assert list(best.columns[:2]) == ["game", "algorithm"]
    assert set(best["game"]) == {"ttt", "mnk_4_4_4", "mnk_5_5_4"}
    for _, row in best.iterrows():
        assert row["config"].startswith(row["game"] + "_")
    five = best[best["game"] == "mnk_5_5_4"].iloc[0]
    assert five["evaluated_vs"] == "random" and five["evaluation"] == "games"
    assert five["win_low"] < five["win"] < five["win_high"]
    assert best.loc[best["game"] == "mnk_4_4_4", "evaluation"].eq("exact").all()
    assert best["ceiling_win"].notna().tolist() == (best["game"] != "mnk_5_5_4").tolist()  # 5x5: not solved
    text = (tmp_path / "summary.md").read_text()
    assert "`win_low, win_high`" in text
    if stats.available():
        assert "### mnk_4_4_4: mc_vfa, agent as O, evaluated against random exactly: 2 configurations" in text
        assert "### ttt: mc_vfa, agent as O, evaluated against random exactly: 1 configuration" in text
        assert "### mnk_5_5_4: mc_vfa, agent as X, evaluated against random by 100 games: 1 configuration" in text
        assert "| by 100 games | 100 |" in text
        assert set(pd.read_csv(tmp_path / "configurations.csv")["game"]) == set(best["game"])


def test_a_3x3_summary_keeps_its_columns(dirs, tmp_path):
    best, _ = summary.write_summary(dirs[1], tmp_path)
    assert not {"game", "evaluation", "win_low", "win_high"} & set(best.columns)
    text = (tmp_path / "summary.md").read_text()
    assert "`game`" not in text and "`evaluation`" not in text and "mnk_" not in text


@pytest.mark.skipif(not stats.available(), reason="the report needs the report extra (scipy)")
def test_report_groups_each_game_apart(dirs):
    frame = summary.name_configurations(results.load(dirs[0]))
    groups = report.build(frame, summary.comparisons(frame), [dirs[0]])["groups"]
    labels = sorted(group["label"] for group in groups)
    assert labels == ["mnk_4_4_4: mc_vfa, agent as O", "mnk_5_5_4: mc_vfa, agent as X", "ttt: mc_vfa, agent as O"]
    for group in groups:
        game = group["label"].split(":")[0]
        assert all(name.startswith(game + "_") for name in group["table"]["config"])
    assert report.write_report(dirs[0]).stat().st_size > 0


@pytest.mark.parametrize("seat", ["x", "o"])
def test_play_a_board_checkpoint_in_the_terminal(dirs, seat):
    out = io.StringIO()
    cells = "".join(f"{cell}\n" for cell in range(1, 17))  # the first empty cell each turn
    assert play.main([str(dirs[2]), "--seat", seat, "--seed", "0"], io.StringIO(cells + "n\n"), out) == 0
    said = out.getvalue()
    assert f"You play {seat.upper()}" in said and "\n 13 | 14 | 15 | 16\n" in said
    assert said.count("the agent (") >= 3 and said.rstrip().endswith("bye")
    assert any(end in said for end in ("You win!", "The agent wins.", "Draw."))


def test_play_a_board_from_a_start_showing_the_agents_scores(dirs):
    start = "x..." "...." "...." "...o"  # X to move again, the agent as X with --seat o
    out = io.StringIO()
    assert play.main([str(dirs[2]), "--start", start, "--seat", "o", "--show-values"], io.StringIO(""), out) == 0
    said = out.getvalue()
    assert "You play O; the agent moves first." in said and "the agent's scores of its moves:" in said
    agent = play.load_checkpoint(dirs[2])
    scores = agent.scores(np.array([[1, 1 << 15]], np.uint64))[0]
    table = said.split("the agent's scores of its moves:\n")[1].split("\nthe agent (X) plays")[0]
    cells = [cell.strip() for row in table.splitlines()[::2] for cell in row.split("|")]
    assert cells == ["." if c in (0, 15) else f"{scores[c]:.3g}" for c in range(16)]
    assert " X |  2 |  3 |  4\n" in said and "\n 13 | 14 | 15 |  O\n" in said


def test_play_refuses_a_bad_start_or_opponent_on_a_board_in_one_line(dirs, capsys):
    for start, words in (("x........", "a board of this agent is 16 cells"),
                         ("xxxxooo.........", "the game is already over"),
                         ("xx..............", "no game reaches this board")):
        assert play.main([str(dirs[2]), "--start", start]) == 2
        said = capsys.readouterr().err
        assert said.count("\n") == 1 and words in said, said
    assert play.main([str(dirs[2]), "--vs", str(dirs[0] / "ttt.npz")]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "its agent plays m, n, k = (3, 3, 3), this one (4, 4, 4)" in said


def test_play_a_board_checkpoint_against_another_from_a_start(dirs):
    out = io.StringIO()
    args = [str(dirs[2]), "--vs", str(dirs[2]), "--games", "40", "--start", "." * 15 + "x", "--seed", "2"]
    assert play.main(args, stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"the agent against {dirs[2]} from {'.' * 15}x, 40 games as O (the agent trained as O "
                        "only: X's games are not played):")
    (o_row,) = lines[2:]
    assert o_row.startswith("O (2nd)") and sum(int(v) for v in o_row.split()[2:5]) == 40
    # in both seats (tallies' default), one greedy agent against itself: each game's mirror
    agent, start = play.load_checkpoint(dirs[2]), (1 << 15, 0)
    result = play.tallies(agent, play.opponent(agent, str(dirs[2]), 1), 40, start, np.random.default_rng(2))
    (x_wins, x_draws, x_losses), (o_wins, o_draws, o_losses) = result[1], result[2]
    assert x_wins + x_draws + x_losses == 40 and o_wins + o_draws + o_losses == 40
    assert (x_wins, x_losses) == (o_losses, o_wins)


def test_play_vs_a_bot_on_a_board_tallies_the_seat_it_trained_in(dirs, capsys):
    """--vs on 4x4: the agent's games against a bot in the seat it trained in (O), the same tallies
    for the same --seed; perfect never loses to it."""
    out = io.StringIO()
    assert play.main([str(dirs[2]), "--vs", "random", "--games", "300", "--seed", "1"], stdout=out) == 0
    again = io.StringIO()
    assert play.main([str(dirs[2]), "--vs", "random", "--games", "300", "--seed", "1"], stdout=again) == 0
    assert out.getvalue() == again.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("the agent against random, 300 games as O (") and len(lines) == 3
    for line in lines[2:]:
        counts = [int(v) for v in line.split()[2:5]]
        assert sum(counts) == 300, line
    perfect = io.StringIO()
    assert play.main([str(dirs[2]), "--vs", "perfect", "--games", "50"], stdout=perfect) == 0
    assert all(line.split()[2] == "0" for line in perfect.getvalue().splitlines()[2:])  # no win against it


def test_the_boards_table_ranks_each_board_apart(dirs, monkeypatch, capsys):
    """analysis/boards_table.py (docs/boards.md's table of the board sweeps): 4x4 exact with its
    ceiling, 5x5 by games with the win's Wilson interval over the run's games, 3x3 left out."""
    spec = importlib.util.spec_from_file_location("boards_table", REPO / "analysis" / "boards_table.py")
    boards_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(boards_table)
    monkeypatch.setattr(sys, "argv", ["boards_table.py", str(dirs[0])])
    boards_table.main()
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    assert lines[0].startswith("| game | seat | against | algorithm |") and len(lines) == 2 + 3
    four = [line.split(" | ") for line in lines[2:] if line.startswith("| mnk_4_4_4")]
    assert len(four) == 2 and all(row[9] == "0.975 / 0.000" for row in four)  # O's ceiling vs onestep
    assert float(four[0][8]) >= float(four[1][8])  # ranked by win - loss
    (five,) = [line.split(" | ") for line in lines if line.startswith("| mnk_5_5_4")]
    rates = results.load(dirs[0]).query("m == 5").dropna(subset=["evaluation"]).iloc[-1]
    share, low, high = stats.wilson(round(rates["eval_p1_random_win"] * 100), 100)
    assert five[5] == f"{share:.4f} [{low:.4f}, {high:.4f}]" and five[9] == ""
    assert "ttt" not in shown
