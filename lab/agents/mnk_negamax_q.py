"""negamax_q on bigger m,n,k boards: one mover-relative Q table for both sides, shaped rewards,
ensembles, on a table of visited positions.

The algorithm is lab.agents.negamax_q's (its knobs, its `Config`, its update): Q(s, a) scores move
a at position s for whoever is to move there; each game is played to the end with epsilon-greedy
moves on the table, then every move of the game is updated from the last to the first,

    Q(s, a) += alpha (reward - gamma max_a' Q(s', a') - Q(s, a))    (0 if s' ends the game)

with the write-up's shaped rewards (lab.agents.negamax_q.shaped_reward: 1 for the winning move,
loss_reward for the loser's last, reward_decay shares before; draw_reward for a draw). Against a
fixed opponent the table still learns from both sides' moves. `ensemble` K > 1 trains K tables,
game g training table g mod K, and the agent plays their sum.

Here positions are lab.mnk bitboards; one lab.mnk_table table holds every position of the games
played, each row the K members' Q values side by side (cells values each), and a fixed opponent
is a lab.mnk_bots bot, all in one compiled loop, `train`. Not yet: 3x3's per-size measure of an
ensemble (negamax_q.by_size), whose agents keep their members apart.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, mnk, mnk_bots, mnk_table
from lab.agents import base, mnk_tabular, negamax_q
from lab.knobs import RunConfig
from lab.mnk import empty_mask, random_move
from lab.mnk_table import full, insert


class Agent(mnk_tabular.Agent):
    """Plays the move of highest Q (summed over the ensemble) for whichever side is to move."""

    algorithm = "negamax_q"


class Params(NamedTuple):
    """The numbers `train` uses, as one argument (by name: no two can be swapped); the reward
    knobs are negamax_q.Params' (shaped_reward reads them)."""

    shaping: negamax_q.Params
    """alpha, gamma, epsilon and the reward knobs (its seats are unused here: kinds say who plays)"""
    members: int
    """the ensemble's tables"""
    per_game: int
    """the most positions one game adds to the table: every move's"""


def depths(run: RunConfig) -> range:
    """The table's positions: every position a move is played from, by either side."""
    return range(run.m * run.n)


@njit(cache=True)
def _best_reply(t, x, o, empty, member, cells):
    """The highest Q of member `member` over the empty cells at (x, o): 0 if never visited."""
    slot = mnk_table.find(t, x, o)
    if slot < 0:
        return t.default
    best = -np.inf
    for cell in range(cells):
        if empty & (np.uint64(1) << np.uint64(cell)):
            best = max(best, t.values[slot, member * cells + cell])
    return best


@njit(cache=True)
def train(board, t, tree, kinds, simulations, first_game, n, params, tally):
    """Play up to n games, game g (counted from first_game) training member g % K; a side of
    kind TABLE plays epsilon-greedy on that member, the other its bot. Stops before a game that
    could take t over half full. Adds the results to tally; returns the games played."""
    cells, p = board.m * board.n, params.shaping
    reading = mnk_tabular.Reading(False, 0.0, params.members)
    scores = np.empty(cells)
    xs, os, moves = np.empty(cells, np.uint64), np.empty(cells, np.uint64), np.empty(cells, np.int64)
    for g in range(first_game, first_game + n):
        if full(t, params.per_game):
            return g - first_game
        member = g % params.members
        x, o, result, plies = np.uint64(0), np.uint64(0), mnk_bots.DRAW, 0
        for ply in range(cells):
            side = ply % 2
            empty = empty_mask(board, x, o)
            if kinds[side] != mnk_tabular.TABLE:
                cell = mnk_bots.bot_move(board, tree, kinds[side], simulations[side], x, o, side)
            elif np.random.random() < p.epsilon:
                cell = random_move(empty, cells - ply)
            else:
                mnk_tabular.scores_at(board, t, reading, x, o, side, member, scores)
                cell = mnk_tabular.best_cell(scores, empty, cells)
            xs[ply], os[ply], moves[ply] = x, o, cell
            x, o, won = mnk_tabular.place(board, x, o, side, cell)
            plies = ply + 1
            if won:
                result = side
                break
        for k in range(plies):  # k moves back from the end
            i = plies - 1 - k
            slot = insert(t, xs[i], os[i])
            column = member * cells + moves[i]
            best_reply = 0.0
            if k > 0:  # the opponent's position after the move: only the last move ends the game
                after_x, after_o, _ = mnk_tabular.place(board, xs[i], os[i], i % 2, moves[i])
                best_reply = _best_reply(t, after_x, after_o, empty_mask(board, after_x, after_o),
                                         member, cells)
            reward = negamax_q.shaped_reward(k, result != mnk_bots.DRAW, p)
            t.values[slot, column] += p.alpha * (reward - p.gamma * best_reply - t.values[slot, column])
        tally[result] += 1
    return n


class Learner(base.Learner):
    DERIVED = ("board", "kinds", "simulations", "tree")

    def __init__(self, knobs: negamax_q.Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.board = mnk.board(*run.game)
        self.table = mnk_table.Table(knobs.ensemble * run.m * run.n, 0.0)
        self.params = Params(negamax_q.Params.of(knobs, run), knobs.ensemble, len(depths(run)))
        self.kinds, self.simulations, self.tree = mnk_tabular.opponents(run)
        self.games = 0

    @classmethod
    def check_run(cls, knobs: negamax_q.Config, run: RunConfig) -> None:
        mnk_table.check_fits(run, "negamax_q", depths(run), knobs.ensemble * run.m * run.n)

    def iterate(self) -> np.ndarray:
        tally = np.zeros(3, np.int64)

        def play(view, games):
            played = train(self.board, view, self.tree, self.kinds, self.simulations, self.games,
                           games, self.params, tally)
            self.games += played
            return played
        mnk_tabular.in_batches(self.table, self.params.per_game, self.run.episodes_per_update, play)
        return tally

    def memory(self) -> dict:
        return self.table.columns()

    def agent(self) -> Agent:
        reading = mnk_tabular.Reading(False, 0.0, self.knobs.ensemble)
        return Agent(self.table.copy(), self.run.game, reading)


ALGORITHM = base.Algorithm("negamax_q", negamax_q.Config, Learner, Agent, self_play=True)
