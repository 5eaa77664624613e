"""Negamax Q learning: one mover-relative Q table for both sides, shaped rewards, ensembles
(write-up 004).

Q(s, a) scores move a at position s for whoever is to move there, so one (3^9, 9) table plays both
seats. The position after a move belongs to the opponent, whose best reply is bad for the mover:
the update subtracts it,

    Q(s, a) += alpha (reward - gamma max_a' Q(s', a') - Q(s, a))    (max over legal a'; 0 if s'
                                                                     ends the game)

Each episode is played to the end with epsilon-greedy moves on the table, then every move of the
episode is updated, from the last to the first (so the end's news reaches the opening in one
pass), with the write-up's shaped rewards, counting k moves back from the end (k = 0 the last move):

- a win: the winning move gets 1 and the loser's last move (k = 1, which let the win happen)
  gets loss_reward, a large negative that rules it out at once; earlier moves get a decaying
  share reward_decay^(k-1), positive for the winner's moves and negative for the loser's;
- a draw: the last two moves get draw_reward, earlier ones draw_reward * reward_decay^(k-1).

In self-play (opponent=self) both sides play the table. Against a fixed opponent the agent
plays the table in seat `player`, and the table still learns from both sides' moves: its
negamax targets need the opponent's positions too.

`ensemble` K > 1 trains K independent tables in the run (game g trains table g mod K; the run's
seed fixes them all), and the agent plays their sum: a move few members consider bad scores
best. The run's episodes are split between the members (its rows count each once). The episodes
run one after another in a compiled loop, `train`, against lab.game.engine: K dense tables on 3x3
(K x 3**9 x 9); on bigger boards one table of the positions played (lab.game.sparse) with the K
members' Q values side by side in a row. tests/learner_references.py has the 3x3 loop in plain
Python.
"""

from collections import namedtuple
from dataclasses import astuple, dataclass

import numpy as np
from numba import njit

from lab import game
from lab.evaluation import evaluate
from lab.game import engine, sparse
from lab.agents import base, tabular
from lab.knobs import TTT, Knobs, RunConfig, require


@dataclass(frozen=True)
class Config(Knobs):
    alpha: float
    """Q step size (the write-up's lr)"""
    gamma: float
    """discount of the opponent's best Q at the next position (the write-up's df)"""
    epsilon: float
    """probability of a random move, for every move the table makes in training"""
    loss_reward: float
    """reward of the loser's last move (the seed: -1e10)"""
    draw_reward: float
    """reward of the last two moves of a draw"""
    reward_decay: float
    """share of the final reward given to each earlier move, per move back from the end"""
    ensemble: int
    """number of independent tables trained in the run; the agent plays their sum"""

    def check(self):
        require(self.loss_reward < 0, "loss_reward", self.loss_reward, "negative")
        require(0 <= self.reward_decay <= 1, "reward_decay", self.reward_decay, "in [0, 1]")
        require(self.ensemble >= 1, "ensemble", self.ensemble, "a positive integer")


class Agent(tabular.Agent):
    """Plays the move of highest Q (summed over the ensemble) for whichever side is to move. An
    ensemble's agent keeps its members for `by_size`: on 3x3 their tables (`members`, K x N_CODES
    x 9), elsewhere the table's rows side by side."""

    algorithm = "negamax_q"

    def __init__(self, table, shape=TTT, reading=None, members: np.ndarray | None = None):
        super().__init__(table, shape, reading)
        self.members = members

    def arrays(self):
        return {**super().arrays(), **({} if self.members is None else {"members": self.members})}

    @classmethod
    def from_arrays(cls, arrays):
        agent = super().from_arrays(arrays)
        members = arrays.get("members")
        agent.members = None if members is None else np.asarray(members, dtype=float)
        return agent


def by_size(agent: Agent, games: int = 9600, seed: int = 0) -> list[dict]:
    """Write-up 004's question, how many members an ensemble needs: the agent of the first k
    members for every k from 1 to K, in each seat, measured as a run's evaluation is (exactly on
    every board the lab solves, elsewhere by `games` games against random and onestep drawn with
    `seed`). One dict per (k, seat): members, seat and the measures."""
    if not agent.dense:
        firsts = [Agent(agent.table, agent.shape, agent.reading._replace(members=k))
                  for k in range(1, agent.reading.members + 1)]
    else:
        members = [agent.table] if agent.members is None else agent.members
        firsts = [Agent(np.sum(members[:k], axis=0)) for k in range(1, len(members) + 1)]
    return [{"members": k, "seat": seat, **_measures(first, seat, games, seed)}
            for k, first in enumerate(firsts, 1) for seat in (1, 2)]


def _measures(agent: Agent, seat: int, games: int, seed: int) -> dict:
    if agent.dense:
        return evaluate.exact(agent, seat)
    m, n, k = agent.shape
    run = RunConfig(algorithm="negamax_q", opponent="onestep", player=seat, episodes_per_update=1, iterations=1,
                    seed=seed, eval_every=1, m=m, n=n, k=k, mcts_simulations=1, eval_games=games)
    prefix = evaluate.column(seat, "")
    return {key[len(prefix):]: value for key, value in evaluate.evaluation(agent, run).items()
            if key.startswith(prefix)}


Params = namedtuple("Params", ("x_plays_table", "o_plays_table", "per_game", *Config.names()))
"""`train`'s numbers, read by name: whether X and O play the table (both in self-play; else that
side plays the opponent), the most positions one game adds to a table of visited positions, then
the knobs."""


@njit(cache=True)
def shaped_reward(k, won, params):
    """The write-up's reward for the move k moves back from the end of a game (k = 0 the last)."""
    if not won:
        return params.draw_reward if k < 2 else params.draw_reward * params.reward_decay ** (k - 1)
    if k == 0:
        return 1.0  # the winning move
    if k == 1:
        return params.loss_reward  # the loser's last move, which let the win happen
    share = params.reward_decay ** (k - 1)
    return share if k % 2 == 0 else -share  # the winner's earlier moves gain, the loser's lose


@njit(cache=True)
def train(g, table, opponent, first_game, n, params, tally):
    """`tabular.Learner.train_on`'s n episodes on the game g, game number i (from first_game)
    training member i % K: a side that plays the table moves epsilon-greedy on that member."""
    cells, alpha, gamma = engine.cells(g), params.alpha, params.gamma
    scores = np.empty(cells)
    positions, moves = engine.history(g, cells), np.empty(cells, np.int64)
    for number in range(first_game, first_game + n):
        if not engine.room(table, params.per_game):
            return number - first_game
        member = number % params.ensemble
        pos, plies, result = engine.start(g), 0, engine.DRAW
        while True:
            side = plies % 2
            if not (params.x_plays_table if side == 0 else params.o_plays_table):
                move = engine.opponent_move(g, opponent, pos, side)
            elif np.random.random() < params.epsilon:
                move = engine.random_cell(g, pos)
            else:
                move = engine.best_cell(g, engine.q_scores(table, g, pos, member, scores), pos)
            engine.keep(positions, plies, pos)
            moves[plies] = move
            plies += 1
            pos, won, over = engine.play(g, pos, move, side)
            if over:
                result = side if won else engine.DRAW
                break
        for k in range(plies):  # k moves back from the end
            i = plies - 1 - k
            before = engine.kept(positions, i)
            slot = engine.row(table, before)
            best_reply = 0.0  # the opponent's best at the position after the move (none after the last)
            if k > 0:
                after, _, _ = engine.play(g, before, moves[i], i % 2)
                best_reply = engine.best_q(table, g, after, member)
            target = shaped_reward(k, result != engine.DRAW, params) - gamma * best_reply
            engine.q_step(table, g, slot, member, moves[i], target, alpha)
        tally[result] += 1
    return n


class Learner(tabular.Learner):
    TABLE_NAME = "q"

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        # a Q table per ensemble member, or their rows side by side
        self.q = (np.zeros((knobs.ensemble, game.N_CODES, 9)) if self.dense()
                  else sparse.Table(knobs.ensemble * run.m * run.n, 0.0))
        self.params = Params(1 in run.seats, 2 in run.seats, run.m * run.n, *astuple(knobs))
        self.games = 0

    @classmethod
    def check_run(cls, knobs: Config, run: RunConfig) -> None:
        if run.bigger_board:
            sparse.check_fits(run, "negamax_q", range(run.m * run.n), knobs.ensemble * run.m * run.n)

    def train_on(self, table, episodes: int, tally) -> int:
        played = train(self.game, table, self.opponent, self.games, episodes, self.params, tally)
        self.games += played
        return played

    def agent(self) -> Agent:
        if isinstance(self.q, np.ndarray):
            return Agent(self.q.sum(axis=0), members=self.q.copy() if len(self.q) > 1 else None)
        reading = tabular.Reading(False, 0.0, self.knobs.ensemble)
        return Agent(self.q.copy(), self.run.game, reading)


ALGORITHM = base.Algorithm("negamax_q", Config, Learner, Agent, self_play=True)
