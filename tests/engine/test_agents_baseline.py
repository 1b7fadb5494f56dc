"""The baseline agents: random, seed 003's one-step lookahead, seed 001's greedy strategies."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.agents import registry
from engine.agents.base import AgentSpec, Budget
from engine.agents.connect4.onestep import onestep_score
from engine.agents.othello.greedy import greedy_move
from engine.games.connect4 import Connect4State
from engine.games.othello import PASS, OthelloState


def seed003_score(grid: np.ndarray, col: int, k: int) -> float:
    """Seed 003's OneStep_Player.score_valid_move, transcribed (grid row 0 = top, 1 = me)."""
    rows, cols = grid.shape
    nxt = grid.copy()
    for row in range(rows - 1, -1, -1):
        if nxt[row][col] == 0:
            break
    nxt[row][col] = 1

    def check(window: list[int], discs: int, piece: int) -> bool:
        return window.count(piece) == discs and window.count(0) == k - discs

    def count(discs: int, piece: int) -> int:
        n = 0
        for r in range(rows):
            for c in range(cols - (k - 1)):
                n += check(list(nxt[r, c : c + k]), discs, piece)
        for r in range(rows - (k - 1)):
            for c in range(cols):
                n += check(list(nxt[r : r + k, c]), discs, piece)
        for r in range(rows - (k - 1)):
            for c in range(cols - (k - 1)):
                n += check(list(nxt[range(r, r + k), range(c, c + k)]), discs, piece)
        for r in range(k - 1, rows):
            for c in range(cols - (k - 1)):
                n += check(list(nxt[range(r, r - k, -1), range(c, c + k)]), discs, piece)
        return n

    return count(k - 1, 1) - 1e3 * count(k - 1, -1) + 1e6 * count(k, 1)


def mover_grid(state: Connect4State) -> np.ndarray:
    """The board as seed 003 sees it: 1 = side to move, -1 = opponent, row 0 on top."""
    board = state.board().astype(int)
    me = 1 + state.to_move()
    return np.where(board == 0, 0, np.where(board == me, 1, -1))


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([(6, 7, 4), (5, 6, 3), (7, 8, 5)]),
    st.lists(st.integers(0, 100), max_size=25),
)
def test_onestep_matches_seed_003_transcription(size, picks):
    rows, cols, k = size
    state = Connect4State.new(rows=rows, cols=cols, k=k)
    for pick in picks:
        moves = state.legal_moves()
        if not moves:
            break
        nxt = state.play(moves[pick % len(moves)])
        if nxt.is_over():
            break
        state = nxt
    grid = mover_grid(state)
    for col in state.legal_moves():
        ours = onestep_score(state.current, state.mask, rows, cols, k, col)
        assert ours == seed003_score(grid, col, k)


def choose(name: str, state, seed: int = 0):
    spec, budget = registry.resolve(name, state.game)
    return registry.build(spec, state.game).choose(state, budget, random.Random(seed)).move


def test_onestep_takes_a_win_and_blocks():
    # Player 0 has three on the bottom row (columns 4-6) and completes it.
    assert choose("onestep", Connect4State.from_moves("445566")) in (2, 6)
    # The same three, player 1 to move: it must block one end.
    assert choose("onestep", Connect4State.from_moves("44556")) in (2, 6)


def test_random_agent_is_uniform_and_seeded():
    state = Connect4State.new()
    counts = [0] * 7
    rng = random.Random(1)
    agent = registry.build(AgentSpec("random"), "connect4")
    for _ in range(7000):
        counts[agent.choose(state, Budget(), rng).move] += 1
    assert min(counts) > 850 and max(counts) < 1150
    assert choose("random", state, seed=5) == choose("random", state, seed=5)


def brute_greedy(state: OthelloState) -> list[tuple[int, int]]:
    """(flips, square) of every legal move, by the bitboard flips of each."""
    return [(state.flips(m).bit_count(), m) for m in state.legal_moves() if m != PASS]


def test_greedy_tie_breaks_on_a_known_position():
    # From the start every move flips one disc: first = d3 (19), centre ties are all equal
    # distance, edge: all equal too -> the first one found.
    start = OthelloState.new()
    assert greedy_move(start, "first") == (19, 1)
    # A position with several max-flip moves at different distances.
    rng = random.Random(3)
    found = 0
    state = start
    for _ in range(2000):
        if state.is_over():
            state = start
        flips = brute_greedy(state)
        if flips:
            best = max(f for f, _ in flips)
            tied = [m for f, m in flips if f == best]
            assert greedy_move(state, "first")[0] == tied[0]

            def cd(m):
                return (m % 8 - 3.5) ** 2 + (m // 8 - 3.5) ** 2

            def ed(m):
                return min(m % 8, 7 - m % 8, m // 8, 7 - m // 8)

            assert greedy_move(state, "center")[0] == min(tied, key=cd)
            assert greedy_move(state, "edge")[0] == min(tied, key=ed)
            found += len({min(tied, key=cd), min(tied, key=ed), tied[0]}) > 1
        state = state.play(rng.choice(state.legal_moves()))
    assert found > 20  # the tie-breaks really differ on real positions


def test_greedy_passes_when_it_must_and_random_rule_varies():
    rules = set()
    rng = random.Random(0)
    agent = registry.build(registry.resolve("greedy-random", "othello")[0], "othello")
    state = OthelloState.new()
    for _ in range(30):
        rules.add(agent.choose(state, Budget(), rng).info["tie_break"])
    assert rules == {"first", "center", "edge"}


def test_registry_rejects_unknown_agents_and_parameters():
    with pytest.raises(ValueError, match="unknown agent"):
        registry.resolve("nope", "connect4")
    with pytest.raises(ValueError, match="does not play"):
        registry.resolve("onestep", "othello")
    with pytest.raises(ValueError, match="no parameter"):
        registry.resolve("random:colour=red", "connect4")
    with pytest.raises(ValueError, match="positive"):
        registry.resolve("random:time=-1", "connect4")
    spec, budget = registry.resolve("random:time=0.5", "othello")
    assert spec == AgentSpec("random") and budget == Budget(time=0.5)
