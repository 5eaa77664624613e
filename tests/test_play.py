"""lab.play driven through its standard input, and the --vs tallies."""

import io
import re
import subprocess
import sys

import numpy as np
import pytest

from lab import game, play
from lab.game import bitboards
from lab.agents import base
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run

TTT = bitboards.board(3, 3, 3)


class Scripted(base.Agent):
    """A 3x3 agent of fixed scores, for predictable games."""

    def arrays(self):
        return {}

    @classmethod
    def from_arrays(cls, arrays):
        return cls()


class FirstEmpty(Scripted):
    """Always the lowest-numbered empty cell."""

    def scores(self, positions):
        return np.tile(-np.arange(9.0), (len(positions), 1))


class Perfect(Scripted):
    """Uniform among the minimax-optimal moves."""

    def scores(self, positions):
        return game.OPTIMAL[positions].astype(float)


def stones(text: str) -> tuple[int, int]:
    """(x, o) of a 3x3 board written as nine cells of x, o and ."""
    return tuple(sum(1 << c for c, mark in enumerate(text) if mark == side) for side in "xo")


def session(lines: str, seat: int = 1):
    """Play FirstEmpty with `lines` as the person's input; (score, everything printed)."""
    out = io.StringIO()
    score = play.play_person(FirstEmpty(), seat, io.StringIO(lines).readline, out.write,
                             np.random.default_rng(0))
    return score, out.getvalue()


def trained(folder, *overrides):
    """The checkpoint of a tiny mc_vfa run with `overrides`, written in `folder`."""
    cfg = compose("algorithm=mc_vfa", "layers=2", "neurons=8", "episodes_per_update=10", "iterations=3",
                  *overrides)
    result = run(job(cfg))
    assert not result.failed
    path = folder / "agent.npz"
    path.write_bytes(result.checkpoint)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An agent trained as O only."""
    return trained(tmp_path_factory.mktemp("play"), "player=2")


@pytest.fixture(scope="module")
def x_checkpoint(tmp_path_factory):
    """An agent trained as X only."""
    return trained(tmp_path_factory.mktemp("play_x"), "player=1", "opponent=random")


def test_full_game_person_wins_as_x():
    # You 1, agent 2, you 4, agent 3, you 7: the left column.
    score, text = session("1\n4\n7\nn\n")
    assert score == {"you": 1, "agent": 0, "draws": 0}
    assert "the agent (O) plays 2" in text and "the agent (O) plays 3" in text
    assert "You win!" in text and text.rstrip().endswith("bye")
    assert " X | O | O\n---+---+---\n X | 5 | 6\n---+---+---\n X | 8 | 9" in text


def test_full_game_as_o_then_another_game():
    # Agent 1, you 5, agent 2, you 3 (block), agent 4, you 7: the diagonal 3-5-7.
    score, text = session("5\n3\n7\ny\n5\n3\n7\nno\n", seat=2)
    assert score == {"you": 2, "agent": 0, "draws": 0}
    assert "the agent (X) plays 1" in text and text.count("You win!") == 2


def test_agent_wins():
    # FirstEmpty as X takes 1, 2, 3 (the top row) while you play 5 and 9 without blocking.
    score, text = session("5\n9\nn\n", seat=2)
    assert score == {"you": 0, "agent": 1, "draws": 0}
    assert "The agent wins." in text


def test_illegal_and_malformed_moves_are_asked_again():
    score, text = session("1\n2\nabc\n0\n10\n\n1.5\n4\n7\nmaybe\nn\n")
    assert "cell 2 is taken: choose one of the empty cells [3, 4, 5, 6, 7, 8, 9]" in text
    for bad in ("abc", "0", "10", "", "1.5"):
        assert f"'{bad}' is not a cell" in text
    assert "type y or n" in text
    assert score["you"] == 1


def test_end_of_input_and_q_quit_cleanly():
    score, text = session("1\n")
    assert score == {"you": 0, "agent": 0, "draws": 0}
    assert text.rstrip().endswith("bye")
    score, text = session("q\n")
    assert text.rstrip().endswith("bye")


@pytest.mark.integration
def test_cli_plays_a_checkpoint_through_stdin(checkpoint):
    # Try every cell in order: taken ones are refused, so the game always ends; then end of input.
    done = subprocess.run([sys.executable, "-m", "lab.play", str(checkpoint), "--seed", "3"],
                          input="".join(f"{c}\n" for c in range(1, 10)), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.search(r"You win!|The agent wins\.|Draw\.", done.stdout)
    assert "the agent (O) plays" in done.stdout
    assert done.stdout.rstrip().endswith("bye")


@pytest.mark.integration
def test_cli_seat_o_and_bad_checkpoint(checkpoint, tmp_path):
    done = subprocess.run([sys.executable, "-m", "lab.play", str(checkpoint), "--seat", "o"],
                          input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "the agent (X) plays" in done.stdout
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not an archive")
    done = subprocess.run([sys.executable, "-m", "lab.play", str(bogus)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "cannot load a checkpoint" in done.stderr


def test_tallies_against_bots_from_the_empty_board():
    perfect, rng = play.opponent(Perfect(), "perfect", 1), np.random.default_rng(0)
    assert play.tallies(Perfect(), perfect, 300, rng=rng) == {1: (0, 300, 0), 2: (0, 300, 0)}
    # Perfect play never loses; against random it wins most games in either seat.
    result = play.tallies(Perfect(), play.opponent(Perfect(), "random", 1), 2000, rng=rng)
    assert result[1][2] == 0 and result[2][2] == 0
    assert result[1][0] > 1800 and result[2][0] > 1500
    # mcts, which 3x3's opponents lacked before the boards were one, never beats it either
    result = play.tallies(Perfect(), play.opponent(Perfect(), "mcts", 50), 100, rng=rng)
    assert result[1][2] == 0 and result[2][2] == 0


def test_the_same_seed_gives_the_same_tallies():
    def tally(seed):
        rng = np.random.default_rng(seed)
        return play.tallies(FirstEmpty(), play.opponent(FirstEmpty(), "random", 1), 200, rng=rng)

    assert tally(4) == tally(4) and tally(4) != tally(5)


@pytest.mark.integration
def test_cli_vs_prints_the_seat_the_agent_trained_in(checkpoint):
    done = subprocess.run([sys.executable, "-m", "lab.play", str(checkpoint), "--vs", "random",
                           "--games", "300", "--seed", "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^([XO]) \(\w+\)\s+(\d+)\s+(\d+)\s+(\d+)", done.stdout, re.M)
    assert [row[0] for row in rows] == ["O"] and sum(map(int, rows[0][1:])) == 300
    done = subprocess.run([sys.executable, "-m", "lab.play", str(checkpoint), "--vs", "perfect",
                           "--games", "300"], capture_output=True, text=True, timeout=60)
    losses_never = re.findall(r"^[XO] \(\w+\)\s+(\d+)", done.stdout, re.M)
    assert losses_never == ["0"]  # nobody beats perfect play
    done = subprocess.run([sys.executable, "-m", "lab.play", str(checkpoint), "--vs", str(checkpoint),
                           "--games", "50"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "50 games as O (the agent trained as O only" in done.stdout


def test_vs_leaves_out_the_seat_the_agent_never_trained_in(x_checkpoint):
    # Trained as X, the agent plays X's best moves as O too, from X's view: its O games mean nothing.
    out = io.StringIO()
    assert play.main([str(x_checkpoint), "--vs", "random", "--games", "200", "--seed", "0"], stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == ("the agent against random, 200 games as X (the agent trained as X only: "
                        "O's games are not played):")
    assert len(lines) == 3 and lines[2].startswith("X (1st)")


def test_the_seats_an_agent_trained_in(checkpoint, x_checkpoint, tmp_path):
    assert play.load_checkpoint(checkpoint).seats == (2,)
    assert play.load_checkpoint(x_checkpoint).seats == (1,)
    self_play = trained(tmp_path, "opponent=self")
    assert play.load_checkpoint(self_play).seats == (1, 2)
    assert FirstEmpty().seats == (1, 2)  # an agent that records no seat plays both
    assert list(play.tallies(FirstEmpty(), play.opponent(FirstEmpty(), "random", 1), 10, seats=(2,))) == [2]


def test_the_person_takes_the_seat_the_agent_did_not_train_in(checkpoint, x_checkpoint):
    def said(*argv):
        out = io.StringIO()
        assert play.main([*map(str, argv), "--seed", "0"], io.StringIO(""), out) == 0
        return out.getvalue()

    assert said(x_checkpoint).startswith("You play O; the agent moves first.")
    assert said(checkpoint).startswith("You play X; you move first.")
    assert said(x_checkpoint, "--seat", "O").startswith("You play O")  # any case, as --start's
    # a seat chosen against the agent's training is played, after one line that says so
    assert said(x_checkpoint, "--seat", "x").startswith(
        "note: the agent trained as X only; as O it plays moves it never learned\nYou play X;")
    assert said(checkpoint, "--seat", "o").startswith(
        "note: the agent trained as O only; as X it plays moves it never learned\nYou play O;")


@pytest.mark.parametrize("argv, words", [
    (["--seed", "-1", "--vs", "random"], "argument --seed: '-1' is not a non-negative integer"),
    (["--seed", "-1"], "argument --seed: '-1' is not a non-negative integer"),
    (["--vs", "random", "--show-values"], "argument --show-values: not allowed with argument --vs"),
    (["--vs", "random", "--seat", "o"], "argument --seat: not allowed with argument --vs"),
    (["--seat", "z"], "argument --seat: invalid choice: 'z'"),
])
def test_usage_mistakes_are_one_line(checkpoint, capsys, argv, words):
    with pytest.raises(SystemExit) as stopped:
        play.main([str(checkpoint), *argv], io.StringIO(""), io.StringIO())
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and said.count("\n") == 1 and words in said, said


def test_board_drawing():
    assert play.draw(TTT, *stones("x.o")).splitlines() == [" X | 2 | O", "---+---+---", " 4 | 5 | 6",
                                                          "---+---+---", " 7 | 8 | 9"]


def test_start_position_is_checked():
    assert play.parse_board("x...o....", TTT) == stones("x...o....")
    assert play.parse_board("X-O------", TTT) == stones("x.o")
    for bad, words in (("xx.......", "no game reaches"), ("xxxoo....", "already over"),
                       ("xxxooo...", "no game reaches"), ("x...o...", "9 cells"),
                       ("x...q....", "9 cells")):
        with pytest.raises(ValueError, match=words):
            play.parse_board(bad, TTT)


def test_reachable_and_over_are_3x3s_tables_on_every_board_code():
    """The rules lab.play checks a --start board by (on any board) against lab.game's tables."""
    for code in range(game.N_CODES):
        x, o = (int(((game.BOARDS[code] == mark) << np.arange(9)).sum()) for mark in (1, -1))
        assert play.reachable(TTT, x, o) == game.REACHABLE[code], code
        if game.REACHABLE[code]:
            assert bitboards.over(TTT, x, o) == game.TERMINAL[code], code


def test_games_from_a_start_position():
    # X in a corner and O on the edge beside it: a won position for X, so perfect play against
    # perfect play, which draws from the empty board, wins every game from here.
    start = play.parse_board("xo.......", TTT)
    result = play.tallies(Perfect(), play.opponent(Perfect(), "perfect", 1), 200, start)
    assert result[1] == (200, 0, 0) and result[2] == (0, 0, 200)
    # every game really starts there: O's stone stays on cell 2, where the first agent to move is X
    seen = []

    def watching(x, o, rng):
        seen.extend(zip(x.tolist(), o.tolist()))
        return play.agent_moves(FirstEmpty(), x, o, rng)

    play.match(TTT, (watching, watching), 5, start, np.random.default_rng(0))
    assert seen[:5] == [start] * 5 and all(o & 0b10 for _, o in seen)


def test_show_values_prints_the_agents_scores(checkpoint):
    agent = play.load_checkpoint(checkpoint)
    out = io.StringIO()
    play.play_person(agent, 2, io.StringIO("").readline, out.write, np.random.default_rng(0),
                     show_values=True)
    text = out.getvalue()
    assert "the agent's scores of its moves:" in text
    expected = agent.scores(np.array([game.EMPTY]))[0]
    assert f"{expected[4]:.3g}" in text


def test_a_mistyped_opponent_names_the_choices(checkpoint, capsys):
    assert play.main([str(checkpoint), "--vs", "perfct"]) == 2
    assert "--vs 'perfct' is neither an opponent (random, onestep, block, mcts, perfect) nor a checkpoint " \
           "file (did you mean `perfect`?)" in capsys.readouterr().err
    assert play.main([str(checkpoint), "--vs", "onstep"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("(did you mean `onestep`?)")
