"""Plain-Python statements of the compiled learners' algorithms, which tests/test_fast_paths.py
checks the kernels against: the sequential ones (q_table, td_value, negamax_q) draw from
`Stream` what their kernels draw from numba's stream, so they agree step by step; mc_vfa's
draws its games from numpy's stream, so it agrees in distribution. Read these to learn an
algorithm; read the kernel to see how it is made fast.
"""

import numpy as np

from lab import game
from lab.game import opponents
from lab.agents.mc_vfa import FOLD, PRECISIONS, Config, targets
from lab.agents.negamax_q import shaped_reward
from lab.knobs import RunConfig, side
from lab.nets import MLP


def tally(winners: np.ndarray) -> np.ndarray:
    """[X wins, O wins, draws] of an array of game results."""
    return np.array([(winners == 1).sum(), (winners == -1).sum(), (winners == 0).sum()])


class Stream:
    """The compiled helpers' random draws in plain Python, for the references below: numba's np.random is numpy's legacy RandomState, seeded the same way, so the same
    draws in the same order play exactly the games a kernel plays after seed_kernels(seed)."""

    def __init__(self, seed: int):
        self._state = np.random.RandomState(seed)

    def random(self) -> float:
        """A float in [0, 1): the kernels' np.random.random()."""
        return self._state.random_sample()

    def sample_move(self, probs: np.ndarray) -> int:
        """A move drawn from one row of a move table (as lab.game.sample_move)."""
        u = self.random()
        moves = np.flatnonzero(probs > 0)
        for m in moves:
            u -= probs[m]
            if u < 0:
                return int(m)
        return int(moves[-1])

    def random_move(self, legal: np.ndarray) -> int:
        """A uniformly random legal move (as lab.game.random_move)."""
        return self.sample_move(legal / legal.sum())

    def best_move(self, scores: np.ndarray, legal: np.ndarray) -> int:
        """A best-scoring legal move; the k-th tied move seen replaces the choice with chance 1/k
        (one draw per extra tie), which leaves each tied move equally likely."""
        choice, ties = -1, 0
        for m in np.flatnonzero(legal):
            if choice < 0 or scores[m] > scores[choice]:
                choice, ties = int(m), 1
            elif scores[m] == scores[choice]:
                ties += 1
                if self.random() * ties < 1:
                    choice = int(m)
        return choice

    def epsilon_greedy(self, scores: np.ndarray, legal: np.ndarray, epsilon: float):
        """(move, explored) as lab.game.engine.epsilon_greedy."""
        if self.random() < epsilon:
            return self.random_move(legal), True
        return self.best_move(scores, legal), False


def mc_vfa(knobs: Config, run: RunConfig, iterations: int) -> MLP:
    """mc_vfa's Learner as plainly as possible: one game at a time in Python, the net asked
    about each decision's afterstates, returns G = r + gamma G walked back through the game,
    running means with step 1/N, one full-batch gradient step per iteration. Returns the net.

    It starts from the Learner's net (same seed) but draws its games from numpy's stream, not the
    kernel's, so the two agree in distribution, not game by game: the tests compare what they
    learn across seeds."""
    rng = np.random.default_rng(run.seed)
    net = MLP([9] + [knobs.neurons] * knobs.layers + [1], rng, dtype=PRECISIONS[knobs.precision])
    opponent, me = opponents.table(run.opponent), side(run.player)
    alpha, epsilon = knobs.alpha, knobs.epsilon
    fold = FOLD if knobs.symmetry else np.arange(game.N_CODES)
    means, counts = {}, {}  # per afterstate: the mean of its returns, their number
    for _ in range(iterations):
        for _ in range(run.episodes_per_update):
            code, afterstates = game.EMPTY, []
            while not game.TERMINAL[code]:
                moves = np.flatnonzero(game.LEGAL[code])
                if game.TO_MOVE[code] != me:
                    move = rng.choice(9, p=opponent[code])
                elif epsilon > 0 and rng.random() < epsilon:
                    move = rng.choice(moves)
                else:
                    values = net(game.BOARDS[fold[game.AFTER[code, moves]]])[:, 0]
                    move = rng.choice(moves[values == values.max()])
                code = game.AFTER[code, move]
                if game.TO_MOVE[code] != me:  # the agent just moved: an afterstate of its own
                    afterstates.append(fold[code])
            reward, g = targets(me * game.WINNER[code], knobs.loss_reward), 0.0
            for k, afterstate in enumerate(reversed(afterstates)):
                g = (reward if k == 0 else 0.0) + knobs.gamma * g
                counts[afterstate] = counts.get(afterstate, 0) + 1
                mean = means.get(afterstate, 0.0)
                means[afterstate] = mean + (g - mean) / counts[afterstate]
        seen = sorted(means)
        net.fit_step(game.BOARDS[seen], np.array([means[c] for c in seen]), alpha)
        if knobs.memory == "clear":
            means, counts = {}, {}
        alpha *= knobs.alpha_decay_per_update
        epsilon *= knobs.epsilon_decay_per_update
    return net


def q_table(q, epsilon, opponent_moves, n, params, stream: Stream):
    """q_table.train in plain Python, drawing from `stream` what the kernel draws from numba's random
    stream: from the same seed it plays the same games and leaves the same q, epsilon and tally."""
    winners, mark = [], 1 if params.side == 0 else -1
    for _ in range(n):
        epsilon *= params.epsilon_decay_per_game
        code = game.EMPTY
        if mark == -1:  # the opponent opens
            code = game.AFTER[code, stream.sample_move(opponent_moves[code])]
        previous = None  # the agent's previous (position, move) in this game
        while True:
            move, _ = stream.epsilon_greedy(q[code], game.LEGAL[code], epsilon)
            after_move = game.AFTER[code, move]
            if game.TERMINAL[after_move]:  # the agent's move ended the game: a certain result
                q[code, move] = game.WINNER[after_move] * mark
                end = after_move
            else:
                end = game.AFTER[after_move, stream.sample_move(opponent_moves[after_move])]
                if game.TERMINAL[end]:  # the opponent's reply ended it: one sample of the result
                    q[code, move] += params.alpha * (game.WINNER[end] * mark - q[code, move])
            if previous is not None:  # on-policy TD: the previous pair moves towards this one
                q[previous] += params.alpha * (q[code, move] - q[previous])
            if game.TERMINAL[end]:
                break
            previous, code = (code, move), end
        winners.append(game.WINNER[end])
    return epsilon, tally(np.array(winners))


def td_value(v, opponent_moves, n, params, stream: Stream):
    """td_value.train in plain Python, drawing from `stream` what the kernel draws from numba's random
    stream: from the same seed it plays the same games and leaves the same values and tally."""
    learns = {1: params.x_learns, -1: params.o_learns}  # by side: X 1, O -1
    winners = []
    for _ in range(n):
        last = {1: None, -1: None}  # each side's latest afterstate
        visited = {1: [], -1: []}  # each side's afterstates in this game (end_of_game)
        code = game.EMPTY
        while not game.TERMINAL[code]:
            mover = game.TO_MOVE[code]
            if not learns[mover]:
                code = game.AFTER[code, stream.sample_move(opponent_moves[code])]
                continue
            legal = game.LEGAL[code]
            move, explored = stream.epsilon_greedy(np.where(legal, v[game.AFTER[code]], 0.0), legal,
                                                   params.epsilon)
            code = game.AFTER[code, move]
            if not params.end_of_game and not explored and last[mover] is not None:
                v[last[mover]] += params.alpha * (v[code] - v[last[mover]])  # TD, greedy moves only
            last[mover] = code
            visited[mover].append(code)
        if params.end_of_game:  # write-up 003: every afterstate of the game moves by +-1/len(visited)
            for side, states in visited.items():
                won = game.WINNER[code] == side
                for state in states:
                    if not game.TERMINAL[state]:
                        v[state] += (1.0 if won else -1.0) / len(states)
        else:
            other = -mover  # did not make the final move: its last afterstate led to a loss or draw
            if learns[other] and last[other] is not None:
                result = 0.0 if game.WINNER[code] != 0 else params.draw_value
                v[last[other]] += params.alpha * (result - v[last[other]])
        winners.append(game.WINNER[code])
    return tally(np.array(winners))


def negamax_q(ensemble_q, first_game, opponent_moves, n, params, stream: Stream):
    """negamax_q.train in plain Python, drawing from `stream` what the kernel draws from numba's random
    stream: from the same seed it plays the same games and leaves the same tables and tally.
    (The rewards are `shaped_reward`'s, called from Python.)"""
    plays_table = {1: params.x_plays_table, -1: params.o_plays_table}  # by side: X 1, O -1
    winners = []
    for g in range(first_game, first_game + n):
        q = ensemble_q[g % len(ensemble_q)]
        code, history = game.EMPTY, []  # every (position, move) of the game, both sides'
        while not game.TERMINAL[code]:
            if plays_table[game.TO_MOVE[code]]:
                move, _ = stream.epsilon_greedy(q[code], game.LEGAL[code], params.epsilon)
            else:
                move = stream.sample_move(opponent_moves[code])
            history.append((code, move))
            code = game.AFTER[code, move]
        won = game.WINNER[code] != 0
        for k, (s, a) in enumerate(reversed(history)):  # from the last move to the first
            nxt = game.AFTER[s, a]  # the opponent's position: its best reply counts against a
            best_reply = 0.0 if game.TERMINAL[nxt] else q[nxt][game.LEGAL[nxt]].max()
            q[s, a] += params.alpha * (shaped_reward(k, won, params) - params.gamma * best_reply
                                       - q[s, a])
        winners.append(game.WINNER[code])
    return tally(np.array(winners))
