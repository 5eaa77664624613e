"""Every pairing of the fixed bots on 4x4 and 5x5 with four in a row (lab.game.bots): X's win,
draw and loss shares with their 95% Wilson intervals, sampled by games, and games per second.

    python analysis/bots_table.py [--games N] [--mcts-games N] [--seed N]

A pairing of two rule bots plays --games games (default 9,600: every interval at most 2 points
wide, lab.stats.games_needed); one with an MCTS bot, --mcts-games (default 1,000: intervals up
to 6 points wide), MCTS at 1,000 simulations being some 1,000 times slower per game.
"""

import argparse
import time

from lab import cli, stats
from lab.game import bitboards
from lab.game.bots import bot, play_match
from lab.evaluation.evaluate import outcome_rates

BOARDS = ((4, 4, 4), (5, 5, 4))
"""(m, n, k): issue 26's boards"""
BOTS = (bot("random"), bot("onestep"), bot("block"), bot("mcts", 100), bot("mcts", 1_000))


def share(rates: dict, key: str) -> str:
    """A share and its interval in percent: 53.1 [52.1, 54.1]"""
    return f"{100 * rates[key]:5.1f} [{100 * rates[f'{key}_low']:5.1f}, {100 * rates[f'{key}_high']:5.1f}]"


def board_table(m: int, n: int, k: int, games: int, mcts_games: int, seed: int) -> str:
    shape = bitboards.board(m, n, k)
    play_match(shape, bot("mcts", 10), bot("random"), 1, seed)  # compile before timing
    lines = [f"{m}x{n} k{k}: X's results in %, 95% Wilson intervals (evaluation: games)",
             f"{'X':<10} {'O':<10} {'games':>6}  {'X wins':<20} {'draws':<20} {'O wins':<20} {'games/s':>9}"]
    for x_bot in BOTS:
        for o_bot in BOTS:
            played = mcts_games if "mcts" in (x_bot.name, o_bot.name) else games
            start = time.perf_counter()
            rates = outcome_rates(play_match(shape, x_bot, o_bot, played, seed), 1)
            per_second = played / (time.perf_counter() - start)
            lines.append(f"{str(x_bot):<10} {str(o_bot):<10} {played:>6}  {share(rates, 'win'):<20} "
                         f"{share(rates, 'draw'):<20} {share(rates, 'loss'):<20} {per_second:>9,.0f}")
    return "\n".join(lines)


@cli.one_line()
def main() -> None:
    parser = cli.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=stats.games_needed(0.02),
                        help="games per pairing of rule bots (default: 2-point intervals)")
    parser.add_argument("--mcts-games", type=int, default=1_000, help="games per pairing with an MCTS bot")
    parser.add_argument("--seed", type=int, default=0, help="every pairing's seed")
    args = parser.parse_args()
    for m, n, k in BOARDS:
        print(board_table(m, n, k, args.games, args.mcts_games, args.seed), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
