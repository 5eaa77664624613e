"""Random games on bigger boards (`--boards`, issue 26): the lab's m,n,k engine
(lab/game/bitboards.py) against OpenSpiel's `mnk` game on the same machine, in games per second
after a warm-up.

OpenSpiel is timed two ways: a game played through its Python API (`legal_actions`, a random
choice, `apply_action`), as a user of pyspiel writes it, and a game played in C++ by two of its
uniform random bots (`evaluate_bots`: one call per game), its fastest random-game path that
Python reaches. The ratio is taken against the faster of the two."""

import random
import time

from lab.game import bitboards

BOARDS = ((3, 3, 3), (4, 4, 4), (5, 5, 4))
"""(m, n, k) of the boards compared: tic-tac-toe, then issue 26's 4x4 and 5x5 with four in a row"""
TARGET = 10
"""times OpenSpiel's fastest random games per second that the lab's engine should play (issue 26)"""
INSTALL_NOTE = ("boards: no comparison with OpenSpiel: it needs the boards extra "
                "(pip install 'tictactoe-lab[boards]', or pip install open_spiel)")


def timed(play_batch, seconds: float) -> tuple[float, list[int]]:
    """Games per second of play_batch(seed) -> [X wins, O wins, draws], called with seeds 1, 2, ...
    until `seconds` have passed, after a warm-up call with seed 0; and the tally of the timed games."""
    play_batch(0)
    tally, seed, start = [0, 0, 0], 1, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tally = [a + b for a, b in zip(tally, play_batch(seed))]
        seed += 1
    return sum(tally) / (time.perf_counter() - start), tally


def openspiel_python_batch(spiel_game):
    """200 random games played through OpenSpiel's Python API."""
    def play(seed):
        rng, tally = random.Random(seed), [0, 0, 0]
        for _ in range(200):
            state = spiel_game.new_initial_state()
            while not state.is_terminal():
                state.apply_action(rng.choice(state.legal_actions()))
            tally[result(state.returns()[0])] += 1
        return tally
    return play


def openspiel_bots_batch(spiel_game):
    """200 random games played in C++ by two of OpenSpiel's uniform random bots."""
    import pyspiel  # the boards extra, optional: only this section needs OpenSpiel

    def play(seed):
        bots = [pyspiel.make_uniform_random_bot(player, 2 * seed + player) for player in (0, 1)]
        tally = [0, 0, 0]
        for _ in range(200):
            tally[result(pyspiel.evaluate_bots(spiel_game.new_initial_state(), bots, seed)[0])] += 1
        return tally
    return play


def result(x_return: float) -> int:
    """Index in a tally [X wins, O wins, draws] of a game X ended with this return."""
    return 0 if x_return > 0 else 1 if x_return < 0 else 2


def shares(tally: list[int]) -> str:
    """A tally as whole percentages, X wins/O wins/draws."""
    return "/".join(f"{100 * count / sum(tally):.0f}" for count in tally)


def boards_section(quick: bool) -> None:
    seconds = 0.2 if quick else 3.0
    try:
        import pyspiel  # the boards extra, optional: without it the section says how to install it
    except ImportError:
        print(INSTALL_NOTE)
        return
    print(f"boards: random games per second after warm-up ({seconds:g} s each); X wins/O wins/draws in %")
    print(f"{'board':<9}{'lab engine':>12}{'OpenSpiel Python':>18}{'OpenSpiel C++ bots':>20}"
          f"{'ratio':>8}{'target':>8}   shares lab | OpenSpiel")
    for m, n, k in BOARDS:
        # 20,000 random games of the lab's engine a batch, one compiled call
        rate, tally = timed(lambda seed: bitboards.random_games(m, n, k, 20_000, seed).tolist(), seconds)
        spiel_game = pyspiel.load_game("mnk", {"m": m, "n": n, "k": k})
        python_rate, python_tally = timed(openspiel_python_batch(spiel_game), seconds)
        bots_rate, _ = timed(openspiel_bots_batch(spiel_game), seconds)
        ratio = rate / max(python_rate, bots_rate)
        print(f"{f'{m}x{n} k{k}':<9}{rate:>12,.0f}{python_rate:>18,.0f}{bots_rate:>20,.0f}"
              f"{ratio:>7.1f}x{TARGET:>7}x   {shares(tally)} | {shares(python_tally)}")
