"""Play a trained agent in the terminal, or pit it against another player.

    python -m lab.play CHECKPOINT [--seat x|o]            you against the agent
    python -m lab.play CHECKPOINT --vs perfect --games 1000  the agent against an opponent

You type the number of an empty cell, 1 (top left) to 9 (bottom right), as drawn on the board;
`q` or end of input (Ctrl-D) quits. With --vs the agent plays N games in each seat against a
fixed opponent (random, onestep, block, perfect) or another checkpoint, and the tallies are
printed. Both players' greedy moves are move tables (lab.game), so thousands of games take
well under a second.
"""

import argparse
import sys

import numpy as np

from lab import agents, game, opponents

MARKS = {1: "X", -1: "O"}


class Quit(Exception):
    """The person typed q or closed standard input."""


def draw(board) -> str:
    """The board as three rows; an empty cell shows the number you type to play there."""
    cells = [MARKS.get(int(v), str(i + 1)) for i, v in enumerate(board)]
    rows = [" " + " | ".join(cells[r:r + 3]) for r in (0, 3, 6)]
    return "\n---+---+---\n".join(rows)


def ask(prompt: str, read, write) -> str:
    """One stripped line of input; Quit on end of input or q."""
    write(prompt)
    line = read()
    if not line:  # end of input
        write("\n")
        raise Quit
    line = line.strip().lower()
    if line in ("q", "quit", "exit"):
        raise Quit
    return line


def ask_move(board, read, write) -> int:
    """The person's move as a cell index 0..8, asked again until it is a legal one."""
    empty = [i + 1 for i in range(9) if board[i] == 0]
    while True:
        line = ask("your move (1-9, q quits): ", read, write)
        if not line.isdigit() or not 1 <= int(line) <= 9:
            write(f"'{line}' is not a cell: type one of the empty cells {empty}, or q\n")
        elif board[int(line) - 1] != 0:
            write(f"cell {line} is taken: choose one of the empty cells {empty}\n")
        else:
            return int(line) - 1


def one_game(agent, seat: int, read, write, rng) -> int:
    """Play one game, the person in `seat` (1 = X, 2 = O); the winner (1 X, -1 O, 0 draw)."""
    person = 1 if seat == 1 else -1
    board = np.zeros(9, dtype=np.int8)
    code = game.EMPTY
    while not game.TERMINAL[code]:
        write("\n" + draw(board) + "\n")
        if game.TO_MOVE[code] == person:
            move = ask_move(board, read, write)
        else:
            move = agent.act(board, rng)
            write(f"the agent ({MARKS[-person]}) plays {move + 1}\n")
        code = int(game.AFTER[code, move])
        board = game.decode(code)
    write("\n" + draw(board) + "\n")
    return int(game.WINNER[code])


def play_person(agent, seat: int, read, write, rng) -> dict:
    """Games until the person stops; the running score, from the person's side."""
    person = 1 if seat == 1 else -1
    score = {"you": 0, "agent": 0, "draws": 0}
    write(f"You play {MARKS[person]}" + (" and move first.\n" if seat == 1 else "; the agent moves first.\n"))
    try:
        while True:
            winner = one_game(agent, seat, read, write, rng)
            key = "draws" if winner == 0 else "you" if winner == person else "agent"
            score[key] += 1
            write({"draws": "Draw.", "you": "You win!", "agent": "The agent wins."}[key])
            write(f"  (you {score['you']}, agent {score['agent']}, draws {score['draws']})\n")
            while (answer := ask("another game? [y/n] ", read, write)) not in ("y", "yes", "n", "no"):
                write("type y or n\n")
            if answer.startswith("n"):
                break
    except Quit:
        pass
    write("bye\n")
    return score


def opponent_table(name: str) -> np.ndarray:
    """The move table of a fixed opponent by name, or of the agent in a checkpoint file."""
    if name in opponents.NAMES:
        return opponents.table(name)
    return agents.load(name).move_table()


def tallies(agent_moves: np.ndarray, other_moves: np.ndarray, games: int) -> dict:
    """{seat: (wins, draws, losses)} of the agent over `games` games in each seat."""
    _, as_x = game.play(games, agent_moves, other_moves)
    _, as_o = game.play(games, other_moves, agent_moves)
    x_wins, o_wins, draws = game.tally(as_x)
    o_x_wins, o_o_wins, o_draws = game.tally(as_o)
    return {1: (int(x_wins), int(draws), int(o_wins)), 2: (int(o_o_wins), int(o_draws), int(o_x_wins))}


def format_tallies(result: dict, games: int, opponent: str) -> str:
    lines = [f"the agent against {opponent}, {games} games in each seat:",
             f"{'agent as':<10} {'wins':>7} {'draws':>7} {'losses':>7}   {'win %':>6} {'draw %':>6} {'loss %':>6}"]
    for seat, name in ((1, "X (1st)"), (2, "O (2nd)")):
        wins, draws, losses = result[seat]
        lines.append(f"{name:<10} {wins:>7} {draws:>7} {losses:>7}   "
                     f"{100 * wins / games:6.1f} {100 * draws / games:6.1f} {100 * losses / games:6.1f}")
    return "\n".join(lines)


def main(argv=None, stdin=None, stdout=None) -> int:
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    parser = argparse.ArgumentParser(prog="python -m lab.play", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a trained agent: RESULTS_DIR/_checkpoints/<run_id>.npz")
    parser.add_argument("--seat", choices=("x", "o"), default="x",
                        help="your seat: x moves first (default), o moves second")
    parser.add_argument("--vs", metavar="OPPONENT",
                        help=f"play the agent against {', '.join(opponents.NAMES)} or another CHECKPOINT")
    parser.add_argument("--games", type=int, default=1000, help="games in each seat with --vs (default 1000)")
    parser.add_argument("--seed", type=int, help="seed of the random tie-breaks and opponents")
    args = parser.parse_args(argv)
    try:
        agent = agents.load(args.checkpoint)
        other = opponent_table(args.vs) if args.vs else None
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: cannot load a checkpoint: {exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    if args.vs:
        if args.games < 1:
            parser.error("--games must be a positive integer")
        game.seed_kernels(int(rng.integers(2**31)))
        result = tallies(agent.move_table(), other, args.games)
        print(format_tallies(result, args.games, args.vs), file=stdout)
        return 0

    def write(text):
        stdout.write(text)
        stdout.flush()

    play_person(agent, 1 if args.seat == "x" else 2, stdin.readline, write, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
