"""lab.play on a bigger m,n,k board: you against a trained bigger-board agent in the terminal.

The board is drawn with each empty cell's number (1 top left, m * n bottom right, row by row);
the agent plays its greedy policy (its Agent's `policy`), tied best moves drawn at random.
--start and --show-values are 3x3's only (lab.play refuses them here); lab.play --vs pits the
agent against a bot of lab.mnk_bots.
"""

import numpy as np

from lab import mnk
from lab.terminal import ask

MARKS = {1: "X", 2: "O"}


def draw(m: int, n: int, x: int, o: int) -> str:
    """The board as n rows of m cells; an empty cell shows the number you type to play there."""
    width = len(str(m * n))
    cells = ["X" if x >> c & 1 else "O" if o >> c & 1 else str(c + 1) for c in range(m * n)]
    rows = [" " + " | ".join(cell.rjust(width) for cell in cells[r * m:(r + 1) * m]) for r in range(n)]
    return f"\n{'+'.join(['-' * (width + 2)] * m)}\n".join(rows)


def ask_move(m: int, n: int, x: int, o: int, read, write) -> int:
    """The person's move as a cell index, asked again until it is an empty cell."""
    cells = m * n
    while True:
        line = ask(f"your move (1-{cells}, q quits): ", read, write)
        if not line.isdigit() or not 1 <= int(line) <= cells:
            write(f"'{line}' is not a cell: type the number of an empty cell (1-{cells}), or q\n")
        elif (x | o) >> (int(line) - 1) & 1:
            write(f"cell {line} is taken: choose an empty cell\n")
        else:
            return int(line) - 1


def agent_move(agent, x: int, o: int, rng) -> int:
    """The agent's greedy move at (x, o) (its tied best moves drawn with rng)."""
    probabilities = agent.policy(np.array([[x, o]], np.uint64))[0]
    return int(rng.choice(len(probabilities), p=probabilities / probabilities.sum()))


def one_game(agent, seat: int, read, write, rng, *_) -> int:
    """One game from the empty board, the person in `seat` (1 = X, 2 = O); the winner (1 X,
    -1 O, 0 draw). lab.play.play_person's start and show_values are 3x3's (refused here)."""
    m, n, k = agent.shape
    board = mnk.board(m, n, k)
    stones, mover = {1: 0, 2: 0}, 1
    while (stones[1] | stones[2]) != int(board.full):
        write("\n" + draw(m, n, stones[1], stones[2]) + "\n")
        if mover == seat:
            cell = ask_move(m, n, stones[1], stones[2], read, write)
        else:
            cell = agent_move(agent, stones[1], stones[2], rng)
            write(f"the agent ({MARKS[mover]}) plays {cell + 1}\n")
        stones[mover] |= 1 << cell
        if mnk.wins(board, np.uint64(stones[mover]), cell):
            write("\n" + draw(m, n, stones[1], stones[2]) + "\n")
            return 1 if mover == 1 else -1
        mover = 3 - mover
    write("\n" + draw(m, n, stones[1], stones[2]) + "\n")
    return 0
