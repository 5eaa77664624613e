"""Play a trained agent in the terminal, or pit it against another player, on its own board.

    python -m lab.play CHECKPOINT [--seat x|o]               you against the agent
    python -m lab.play CHECKPOINT --vs perfect --games 1000  the agent against an opponent

Every checkpoint plays on the board it trained on (3x3, or the m,n,k board of the `game` group).
The board is drawn with each empty cell's number, 1 (top left) to m * n (bottom right) row by
row, and you type the number of an empty cell; `q` or end of input (Ctrl-D) quits. The agent plays
its greedy policy, tied best moves drawn at random (--seed).

A net agent (mc_vfa, q_net) trained against a fixed opponent knows only its seat (`player`), so
you take the other seat by default (an agent trained as X moves first); a --seat that puts it in
the seat it never trained in gets a one-line note, and is played. A self-play agent, and those
that record no seat (tabular, alphazero), play either seat; you are X by default.

--vs OPPONENT plays the agent --games games in each seat it trained in against random, onestep,
block, mcts (--simulations playouts a move), perfect (on the boards the lab solves, at most 16
cells) or another CHECKPOINT of the same board, and prints the tallies; the header says which seat
is left out. The games are played side by side, one batch of moves at a time; the bots are
lab.game.bots'.

--start BOARD begins every game from a given position (write-up 004 played from openings): the
board's cells row by row, each x, o or . (or -), such as `x...o....` on 3x3. --show-values prints
the agent's score of each legal move before it moves (higher is better for it), in your games
only: not with --vs.
"""

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

from lab import agents, cli
from lab.game import bitboards, bots, engine, solver


SEATS = {"x": 1, "o": 2}
"""--seat's values: the person's seat, 1 (X, moves first) or 2 (O)."""


class Quit(Exception):
    """The person typed q or closed standard input."""


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


def _grid(cells: list[str], m: int) -> str:
    """Cells (row by row, m a row) drawn as a grid, each right-aligned to the widest."""
    width = max(map(len, cells))
    rows = [" " + " | ".join(cell.rjust(width) for cell in cells[r:r + m]) for r in range(0, len(cells), m)]
    return f"\n{'+'.join(['-' * (width + 2)] * m)}\n".join(rows)


def _taken(x: int, o: int, cell: int) -> bool:
    return bool((x | o) >> cell & 1)


def draw(board: bitboards.Board, x: int, o: int) -> str:
    """The board with X's stones x and O's o; an empty cell shows the number you type to play there."""
    cells = ["X" if x >> c & 1 else "O" if o >> c & 1 else str(c + 1) for c in range(board.m * board.n)]
    return _grid(cells, board.m)


def ask_move(board: bitboards.Board, x: int, o: int, read, write) -> int:
    """The person's move as a cell index, asked again until it is an empty cell."""
    cells = board.m * board.n
    empty = [c + 1 for c in range(cells) if not _taken(x, o, c)]
    while True:
        line = ask(f"your move (1-{cells}, q quits): ", read, write)
        if not line.isdigit() or not 1 <= int(line) <= cells:
            write(f"'{line}' is not a cell: type one of the empty cells {empty}, or q\n")
        elif _taken(x, o, int(line) - 1):
            write(f"cell {line} is taken: choose one of the empty cells {empty}\n")
        else:
            return int(line) - 1


def reachable(board: bitboards.Board, x: int, o: int) -> bool:
    """Whether a game reaches X's stones x and O's o: X moved first, the players alternated, and
    nobody played on after a win (so a winner's last stone completed every line it has)."""
    turns = x.bit_count() - o.bit_count()
    x_line, o_line = bitboards.has_line(board, x), bitboards.has_line(board, o)
    if x & o or turns not in (0, 1) or x_line and o_line:
        return False
    if not (x_line or o_line):
        return True
    winner = x if x_line else o
    return turns == x_line and any(winner >> c & 1 and not bitboards.has_line(board, winner & ~(1 << c))
                                   for c in range(board.m * board.n))


def parse_board(text: str, board: bitboards.Board) -> tuple[int, int]:
    """(x, o) of a position written as the board's cells of x, o or . (or -), row by row;
    ValueError unless a game can reach it and it is not over."""
    cells, size = text.strip().lower(), board.m * board.n
    if len(cells) != size or set(cells) - set("xo.-"):
        example = ("x...o" + "." * size)[:size]
        raise ValueError(f"--start {text!r}: a board of this agent is {size} cells of x, o or . (or -), "
                         f"row by row, such as {example}")
    x, o = (sum(1 << c for c, mark in enumerate(cells) if mark == side) for side in "xo")
    if not reachable(board, x, o):
        raise ValueError(f"--start {text!r}: no game reaches this board (X moves first, then "
                         "the players alternate, and nobody plays on after a win)")
    if bitboards.over(board, x, o):
        raise ValueError(f"--start {text!r}: the game is already over on this board")
    return x, o


def agent_moves(agent, x, o, rng) -> np.ndarray:
    """The agent's greedy cells at the positions with X's stones x and O's o (arrays of bit
    masks), its tied best moves drawn with rng."""
    policy = agent.policy(engine.positions_of(engine.of(agent.shape), x, o))
    cumulative = policy.cumsum(axis=1)
    return np.argmax(cumulative > rng.random((len(policy), 1)) * cumulative[:, -1:], axis=1)


def values(agent, board: bitboards.Board, x: int, o: int) -> str:
    """The agent's score of each legal move at (x, o), drawn on the board (higher is better for
    the agent; '.' where the cell is taken)."""
    scores = agent.scores(engine.positions_of(engine.of(agent.shape), [x], [o]))[0]
    cells = ["." if _taken(x, o, c) else f"{scores[c]:.3g}" for c in range(board.m * board.n)]
    return "the agent's scores of its moves:\n" + _grid(cells, board.m)


def one_game(agent, seat: int, read, write, rng, start, show_values: bool) -> int:
    """Play one game from `start` (x, o), the person in `seat` (1 = X, 2 = O); the side that won
    (0 X, 1 O) or bots.DRAW."""
    board = bitboards.board(*agents.game_of(agent))
    stones = list(start)
    side = stones[0].bit_count() - stones[1].bit_count()
    while not bitboards.over(board, *stones):
        write("\n" + draw(board, *stones) + "\n")
        if side + 1 == seat:
            cell = ask_move(board, *stones, read, write)
        else:
            if show_values:
                write(values(agent, board, *stones) + "\n")
            cell = int(agent_moves(agent, [stones[0]], [stones[1]], rng)[0])
            write(f"the agent ({'XO'[side]}) plays {cell + 1}\n")
        stones[side] |= 1 << cell
        side = 1 - side
    write("\n" + draw(board, *stones) + "\n")
    return 1 - side if bitboards.has_line(board, stones[1 - side]) else bots.DRAW


def person_seat(agent, asked: str | None, write) -> int:
    """The person's seat: `asked` (x or o), else the seat the agent did not train in (X when it
    trained in both); a note when the agent is put in a seat it never trained in."""
    seats = agent.seats
    if asked is None:
        return 2 if seats == (1,) else 1
    seat = SEATS[asked]
    if 3 - seat not in seats:
        write(f"note: the agent trained as {'XO'[seats[0] - 1]} only; as {'XO'[2 - seat]} "
              "it plays moves it never learned\n")
    return seat


def play_person(agent, seat: int, read, write, rng, start=(0, 0), show_values: bool = False) -> dict:
    """Games from `start` until the person stops; the running score, from the person's side."""
    score = {"you": 0, "agent": 0, "draws": 0}
    mover = start[0].bit_count() - start[1].bit_count() + 1
    first = "you move first" if mover == seat else "the agent moves first"
    write(f"You play {'XO'[seat - 1]}; {first}.\n")
    try:
        while True:
            winner = one_game(agent, seat, read, write, rng, start, show_values)
            key = "draws" if winner == bots.DRAW else "you" if winner + 1 == seat else "agent"
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


def load_checkpoint(path):
    """The agent in a checkpoint; ValueError with what went wrong."""
    try:
        return agents.load(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"cannot load a checkpoint: {exc}") from None


def opponent(agent, name: str, simulations: int):
    """The player that --vs names, as moves(x, o, rng) -> cells: a bot of lab.game.bots, or the
    agent in a checkpoint of the same board; ValueError in one line if there is none."""
    shape = agents.game_of(agent)
    board = bitboards.board(*shape)
    if name in bots.NAMES:
        if name == "perfect" and board.m * board.n > solver.MAX_CELLS:
            raise ValueError(f"--vs perfect: the lab solves boards of at most {solver.MAX_CELLS} cells; "
                             f"this one has {board.m * board.n} (mcts plays well there)")
        bot = bots.bot(name, simulations if name == "mcts" else None)
        return lambda x, o, rng: bots.moves(board, bot, x, o, int(rng.integers(2**31)))
    if not Path(name).is_file():
        raise ValueError(f"--vs {name!r} is neither an opponent ({', '.join(bots.NAMES)}) "
                         f"nor a checkpoint file{cli.did_you_mean(name, bots.NAMES)}")
    other = load_checkpoint(name)
    if agents.game_of(other) != shape:
        raise ValueError(f"--vs {name}: its agent plays m, n, k = {agents.game_of(other)}, this one "
                         f"{shape}: a checkpoint plays another of the same board")
    return functools.partial(agent_moves, other)


def match(board: bitboards.Board, players, games: int, start, rng) -> np.ndarray:
    """[X wins, O wins, draws] of `games` games from `start` (x, o), players[0] playing X and
    players[1] O, each as moves(x, o, rng) -> cells for all the open games at once."""
    stones = np.array([[start[0]], [start[1]]], np.uint64).repeat(games, axis=1)
    result = np.full(games, -1)
    windows = np.unique(board.windows)
    side, open_games = start[0].bit_count() - start[1].bit_count(), np.arange(games)
    while len(open_games):
        cells = players[side](stones[0, open_games], stones[1, open_games], rng).astype(np.uint64)
        stones[side, open_games] |= np.uint64(1) << cells
        mine = stones[side, open_games]
        won = ((mine[:, None] & windows) == windows).any(axis=1)
        full = (stones[0, open_games] | stones[1, open_games]) == board.full
        result[open_games[won]] = side
        result[open_games[full & ~won]] = bots.DRAW
        open_games = open_games[~(won | full)]
        side = 1 - side
    return np.bincount(result, minlength=3)


def tallies(agent, other, games: int, start=(0, 0), rng=None, seats=(1, 2)) -> dict:
    """{seat: (wins, draws, losses)} of the agent over `games` games in each of `seats` against
    `other` (moves(x, o, rng) -> cells), from `start`."""
    rng = rng or np.random.default_rng()
    board, me = bitboards.board(*agents.game_of(agent)), functools.partial(agent_moves, agent)
    result = {}
    for seat in seats:
        counts = match(board, (me, other) if seat == 1 else (other, me), games, start, rng)  # X, O, draws
        result[seat] = (int(counts[seat - 1]), int(counts[2]), int(counts[2 - seat]))
    return result


def format_tallies(result: dict, games: int, opponent: str) -> str:
    """The table of `tallies` in the seats the agent trained in; the header names a seat left out."""
    where = "in each seat"
    if len(result) == 1:
        mark, other = ("X", "O") if 1 in result else ("O", "X")
        where = f"as {mark} (the agent trained as {mark} only: {other}'s games are not played)"
    lines = [f"the agent against {opponent}, {games} games {where}:",
             f"{'agent as':<10} {'wins':>7} {'draws':>7} {'losses':>7}   {'win %':>6} {'draw %':>6} {'loss %':>6}"]
    for seat in sorted(result):
        wins, draws, losses = result[seat]
        lines.append(f"{('X (1st)', 'O (2nd)')[seat - 1]:<10} {wins:>7} {draws:>7} {losses:>7}   "
                     f"{100 * wins / games:6.1f} {100 * draws / games:6.1f} {100 * losses / games:6.1f}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(prog="python -m lab.play", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a trained agent: RESULTS_DIR/_checkpoints/<run_id>.npz")
    parser.add_argument("--seat", type=str.lower, choices=tuple(SEATS),
                        help="your seat: x moves first, o second (default: the seat the agent did not "
                        "train in; x if it trained in both)")
    only_one = parser.add_mutually_exclusive_group()  # --show-values is for your games, not --vs's
    only_one.add_argument("--vs", metavar="OPPONENT", help="play the agent, in each seat it trained in, "
                          f"against {', '.join(bots.NAMES)} or another CHECKPOINT")
    parser.add_argument("--games", type=cli.positive_int, default=1000,
                        help="games in each seat the agent plays with --vs (default 1000)")
    parser.add_argument("--seed", type=cli.non_negative_int, help="seed of the random tie-breaks and opponents")
    parser.add_argument("--simulations", type=cli.positive_int, default=100,
                        help="MCTS playouts per move with --vs mcts (default 100)")
    parser.add_argument("--start", metavar="BOARD", help="begin every game here: the board's cells, "
                        "row by row, each x, o or . (e.g. x...o.... on 3x3)")
    only_one.add_argument("--show-values", action="store_true",
                          help="print the agent's score of each legal move before it moves (not with --vs)")
    return parser


@cli.one_line()  # a reader gone (| head) or a full disk: one line, or silence
def main(argv=None, stdin=None, stdout=None) -> int:
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    if args.vs and args.seat:
        parser.error("argument --seat: not allowed with argument --vs (the agent plays each seat it trained in)")
    try:
        agent = load_checkpoint(args.checkpoint)
        start = parse_board(args.start, bitboards.board(*agents.game_of(agent))) if args.start else (0, 0)
        other = opponent(agent, args.vs, args.simulations) if args.vs else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return cli.MISTAKE
    rng = np.random.default_rng(args.seed)
    if other is not None:
        result = tallies(agent, other, args.games, start, rng, agent.seats)
        where = f" from {args.start}" if args.start else ""
        print(format_tallies(result, args.games, args.vs + where), file=stdout)
        return 0

    def write(text):
        stdout.write(text)
        stdout.flush()

    seat = person_seat(agent, args.seat, write)
    play_person(agent, seat, stdin.readline, write, rng, start, args.show_values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
