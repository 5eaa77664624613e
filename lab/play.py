"""Play a trained agent in the terminal, or pit it against another player.

    python -m lab.play CHECKPOINT [--seat x|o]            you against the agent
    python -m lab.play CHECKPOINT --vs perfect --games 1000  the agent against an opponent

You type the number of an empty cell, 1 (top left) to 9 (bottom right), as drawn on the board;
`q` or end of input (Ctrl-D) quits. With --vs the agent plays N games in each seat against a
fixed opponent (random, onestep, block, perfect) or another checkpoint, and the tallies are
printed. Both players' greedy moves are move tables (lab.game), so thousands of games take
well under a second.

A bigger board's checkpoint (the `game` group) is played the same way, you against it, its cells
numbered 1 to m * n (lab.mnk_play), and --vs pits it against a bot of lab.mnk_bots (random,
onestep, block, mcts with --simulations playouts a move, perfect where the lab solves the board),
its games compiled; --start, --show-values and --vs CHECKPOINT are 3x3's only, for now.

--start BOARD begins every game from a given position (write-up 004 played from openings): nine
cells, row by row, each x, o or . (or -), such as `x...o....`. --show-values prints the agent's
score of each legal move before it moves (higher is better for it).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from lab import agents, cli, game, mnk_bots, mnk_exact, mnk_play, opponents
from lab.knobs import TTT
from lab.terminal import Quit, ask

MARKS = {1: "X", -1: "O"}


def draw(board) -> str:
    """The board as three rows; an empty cell shows the number you type to play there."""
    cells = [MARKS.get(int(v), str(i + 1)) for i, v in enumerate(board)]
    rows = [" " + " | ".join(cells[r:r + 3]) for r in (0, 3, 6)]
    return "\n---+---+---\n".join(rows)


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


def parse_board(text: str) -> int:
    """The code of a position written as nine cells of x, o or . (or -), row by row; raises
    ValueError unless a game can reach it and it is not over."""
    cells = text.strip().lower()
    if len(cells) != 9 or set(cells) - set("xo.-"):
        raise ValueError(f"--start {text!r}: a board is nine cells of x, o or . (or -), row by row, "
                         "such as x...o....")
    code = game.encode([{"x": 1, "o": -1}.get(c, 0) for c in cells])
    if not game.REACHABLE[code]:
        raise ValueError(f"--start {text!r}: no game reaches this board (X moves first, then "
                         "the players alternate, and nobody plays on after a win)")
    if game.TERMINAL[code]:
        raise ValueError(f"--start {text!r}: the game is already over on this board")
    return code


def values(agent, code: int) -> str:
    """The agent's score of each legal move at `code`, drawn on the board (higher is better for
    the agent; '.' where the cell is taken)."""
    scores = agent.scores(np.array([code]))[0]
    cells = [f"{scores[m]:.3g}" if game.LEGAL[code, m] else "." for m in range(9)]
    width = max(map(len, cells))
    rows = [" " + " | ".join(c.rjust(width) for c in cells[r:r + 3]) for r in (0, 3, 6)]
    return "the agent's scores of its moves:\n" + f"\n{'-' * (width + 2)}+{'-' * (width + 2)}+{'-' * (width + 2)}\n".join(rows)


def one_game(agent, seat: int, read, write, rng, start: int = game.EMPTY,
             show_values: bool = False) -> int:
    """Play one game from position `start`, the person in `seat` (1 = X, 2 = O); the winner (1 X,
    -1 O, 0 draw)."""
    person = 1 if seat == 1 else -1
    code = start
    board = game.decode(code)
    while not game.TERMINAL[code]:
        write("\n" + draw(board) + "\n")
        if game.TO_MOVE[code] == person:
            move = ask_move(board, read, write)
        else:
            if show_values:
                write(values(agent, code) + "\n")
            move = agent.act(board, rng)
            write(f"the agent ({MARKS[-person]}) plays {move + 1}\n")
        code = int(game.AFTER[code, move])
        board = game.decode(code)
    write("\n" + draw(board) + "\n")
    return int(game.WINNER[code])


def play_person(agent, seat: int, read, write, rng, start: int = game.EMPTY,
                show_values: bool = False, play_one=one_game) -> dict:
    """Games from `start` until the person stops; the running score, from the person's side.
    `play_one` plays one game (lab.mnk_play.one_game on a bigger board)."""
    person = 1 if seat == 1 else -1
    score = {"you": 0, "agent": 0, "draws": 0}
    first = "you move first" if game.TO_MOVE[start] == person else "the agent moves first"
    write(f"You play {MARKS[person]}; {first}.\n")
    try:
        while True:
            winner = play_one(agent, seat, read, write, rng, start, show_values)
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


def load_checkpoint(path, board: bool = False):
    """The agent in a checkpoint; ValueError with what went wrong. A bigger board's agent only
    with `board` (you against it, or against a bot)."""
    try:
        agent = agents.load(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"cannot load a checkpoint: {exc}") from None
    if agents.game_of(agent) != TTT and not board:
        raise ValueError(f"{path}: its agent plays m, n, k = {agents.game_of(agent)}; --start, "
                         "--show-values and --vs CHECKPOINT are 3x3's only, for now (--vs takes "
                         f"a bot there: {', '.join(mnk_bots.NAMES)})")
    return agent


def board_bot(agent, name: str, simulations: int) -> mnk_bots.Bot:
    """The bot of lab.mnk_bots called `name` that a bigger board's agent plays with --vs;
    ValueError in one line if there is none."""
    if name not in mnk_bots.NAMES:
        raise ValueError(f"--vs {name!r}: on an m,n,k board the agent plays a bot, one of "
                         f"{', '.join(mnk_bots.NAMES)} (a checkpoint against another is 3x3's only, for now)")
    m, n, _ = agent.shape
    if name == "perfect" and m * n > mnk_exact.MAX_CELLS:
        raise ValueError(f"--vs perfect: the lab solves boards of at most {mnk_exact.MAX_CELLS} cells; "
                         f"this one has {m * n} (mcts plays well there)")
    return mnk_bots.bot(name, simulations if name == "mcts" else None)


def board_tallies(agent, bot: mnk_bots.Bot, games: int, seed: int) -> dict:
    """{seat: (wins, draws, losses)} of a bigger board's agent over `games` games in each seat
    against `bot`."""
    out = {}
    for seat in (1, 2):
        x_wins, o_wins, draws = (int(count) for count in agent.play(bot, seat, games, seed))
        out[seat] = (x_wins, draws, o_wins) if seat == 1 else (o_wins, draws, x_wins)
    return out


def opponent_table(name: str) -> np.ndarray:
    """The move table of a fixed opponent by name, or of the agent in a checkpoint file."""
    if name in opponents.NAMES:
        return opponents.table(name)
    if not Path(name).is_file():
        raise ValueError(f"--vs {name!r} is neither an opponent ({', '.join(opponents.NAMES)}) "
                         "nor a checkpoint file")
    return load_checkpoint(name).move_table()


def forced_to(start: int, moves: np.ndarray) -> np.ndarray:
    """`moves` with the positions between the empty board and `start` replaced by the move that
    leads on to `start`, so that every game of two such tables passes through `start` (no later
    position can be one of them: each holds fewer marks than `start`)."""
    moves = moves.copy()
    target = game.BOARDS[start]
    code = game.EMPTY
    while code != start:
        side = game.TO_MOVE[code]
        move = next(m for m in range(9) if game.BOARDS[code, m] == 0 and target[m] == side)
        moves[code] = np.eye(9)[move]
        code = int(game.AFTER[code, move])
    return moves


def tallies(agent_moves: np.ndarray, other_moves: np.ndarray, games: int,
            start: int = game.EMPTY) -> dict:
    """{seat: (wins, draws, losses)} of the agent over `games` games in each seat from `start`."""
    agent_moves, other_moves = forced_to(start, agent_moves), forced_to(start, other_moves)
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
    parser = cli.ArgumentParser(prog="python -m lab.play", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a trained agent: RESULTS_DIR/_checkpoints/<run_id>.npz")
    parser.add_argument("--seat", choices=("x", "o"), default="x",
                        help="your seat: x moves first (default), o moves second")
    parser.add_argument("--vs", metavar="OPPONENT",
                        help=f"play the agent against {', '.join(opponents.NAMES)} or another CHECKPOINT")
    parser.add_argument("--games", type=cli.positive_int, default=1000, help="games in each seat with --vs (default 1000)")
    parser.add_argument("--seed", type=int, help="seed of the random tie-breaks and opponents")
    parser.add_argument("--simulations", type=cli.positive_int, default=100,
                        help="MCTS playouts per move with --vs mcts, on a bigger board (default 100)")
    parser.add_argument("--start", metavar="BOARD", help="begin every game here: nine cells of x, o "
                        "or ., row by row (e.g. x...o....)")
    parser.add_argument("--show-values", action="store_true",
                        help="print the agent's score of each legal move before it moves")
    args = parser.parse_args(argv)
    try:
        start = parse_board(args.start) if args.start else game.EMPTY
    except ValueError as exc:
        parser.error(str(exc))
    try:
        agent = load_checkpoint(args.checkpoint, board=not (args.start or args.show_values))
        on_board = agents.game_of(agent) != TTT  # a bigger board: its bots, lab.mnk_play
        if args.vs and on_board:
            other = board_bot(agent, args.vs, args.simulations)
        else:
            other = opponent_table(args.vs) if args.vs else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    if args.vs:
        if args.games < 1:
            parser.error("--games must be a positive integer")
        seed = int(rng.integers(2**31))
        if on_board:
            result = board_tallies(agent, other, args.games, seed)
        else:
            game.seed_kernels(seed)
            result = tallies(agent.move_table(), other, args.games, start)
        where = f" from {args.start}" if args.start else ""
        print(format_tallies(result, args.games, args.vs + where), file=stdout)
        return 0

    def write(text):
        stdout.write(text)
        stdout.flush()

    play_person(agent, 1 if args.seat == "x" else 2, stdin.readline, write, rng, start,
                args.show_values, mnk_play.one_game if on_board else one_game)
    return 0


if __name__ == "__main__":
    sys.exit(main())
