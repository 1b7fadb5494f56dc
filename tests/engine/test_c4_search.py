"""Connect Four search agents from seeds 002 and 004: minimax, expectiminimax and the planner.

Positions are checked against a brute-force "win within n plies" search written here (plain
Python ints, nothing shared with the agents), and the seeds' worked examples are reproduced.
"""

from __future__ import annotations

import pickle
import random
import time

import numpy as np
import pytest

from engine.agents import registry
from engine.agents.base import Agent, Budget
from engine.agents.connect4 import evals as c4eval
from engine.agents.connect4.lines import win_cells
from engine.agents.connect4.minimax import C4Expectiminimax, C4Minimax, forced_move
from engine.agents.connect4.onestep import onestep_score
from engine.agents.connect4.planner import (
    PlannerAgent,
    average_score,
    diminishing,
    geometry,
    minimax_score,
    round_half_away,
    score_items,
)
from engine.agents.connect4.search import WIN
from engine.games import c4kernels as kern
from engine.games.c4windows import bit
from engine.games.connect4 import Connect4State
from engine.play import play_game, random_opening
from tests.machine import scaled
from tests.reference import c4eval_reference as ref

EVALS = c4eval.EVALS


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Compile or load every kernel of the search before anything is timed."""
    state = Connect4State.from_moves("4435")
    for name in EVALS:
        C4Minimax(eval=name).choose(state, Budget(depth=2), random.Random(0))
        C4Expectiminimax(eval=name).choose(state, Budget(depth=3), random.Random(0))


# -- brute force ---------------------------------------------------------------------------------


def _children(cur: int, mask: int, rows: int, cols: int) -> list[tuple[int, int]]:
    h = rows + 1
    out = []
    for c in range(cols):
        mv = (mask + (1 << (c * h))) & (((1 << rows) - 1) << (c * h))
        if mv:
            out.append((c, mv))
    return out


def _is_win(bb: int, rows: int, k: int) -> bool:
    for d in (1, rows + 1, rows, rows + 2):
        t = bb
        for _ in range(k - 1):
            t = (t >> d) & bb
        if t:
            return True
    return False


def _wins_within(cur: int, mask: int, rows: int, cols: int, k: int, plies: int) -> bool:
    """The side to move can force a win whose last disc lands within `plies` plies."""
    kids = _children(cur, mask, rows, cols)
    if any(_is_win(cur | mv, rows, k) for _, mv in kids):
        return True
    return plies >= 3 and any(
        _replies_lose(cur ^ mask, mask | mv, rows, cols, k, plies - 1) for _, mv in kids
    )


def _replies_lose(cur: int, mask: int, rows: int, cols: int, k: int, plies: int) -> bool:
    kids = _children(cur, mask, rows, cols)
    return bool(kids) and all(
        not _is_win(cur | mv, rows, k)
        and _wins_within(cur ^ mask, mask | mv, rows, cols, k, plies - 1)
        for _, mv in kids
    )


def winning_moves_within(state: Connect4State, plies: int) -> set[int]:
    """Every first move that forces a win within `plies` plies (brute force)."""
    cur, mask, rows, cols, k = state.current, state.mask, state.rows, state.cols, state.k
    return {
        c
        for c, mv in _children(cur, mask, rows, cols)
        if _is_win(cur | mv, rows, k)
        or (plies >= 3 and _replies_lose(cur ^ mask, mask | mv, rows, cols, k, plies - 1))
    }


def grid(lines: list[str]) -> tuple[int, int, int, int]:
    """(x discs, o discs, rows, cols) of a board drawn top row first with X, O and blanks."""
    rows, cols = len(lines), len(lines[0])
    x = o = 0
    for i, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch == "X":
                x |= 1 << bit(c, rows - 1 - i, rows)
            elif ch == "O":
                o |= 1 << bit(c, rows - 1 - i, rows)
    return x, o, rows, cols


def raw_state(me: int, other: int, rows: int, cols: int, k: int = 4) -> Connect4State:
    """A state with `me` to move, built from bitboards (the turn order is not checked)."""
    return Connect4State(rows, cols, k, me, me | other, ())


def all_agents(depth_agents: bool = True) -> list[Agent]:
    agents: list[Agent] = [C4Minimax(eval=e) for e in EVALS]
    agents += [C4Expectiminimax(eval=e) for e in EVALS]
    agents += [PlannerAgent(search=s) for s in ("average", "minimax")]
    return agents


# (moves, winning first columns): found by a seeded random search, verified below.
WIN_IN_3 = [("121745414174652", {4}), ("5374235425355233", {3, 5}), ("346155267", {3})]
WIN_IN_5 = [("7412616333144751", {4}), ("2363256171465455", {1, 3}), ("56773411324547", {2, 3})]


# -- seed examples and evaluations ---------------------------------------------------------------


def test_seed002_remaining_checkers_example() -> None:
    """Seed 002's worked example (6 columns, 5 rows), results 1-based as the seed prints them.

    For O all four directions match the seed: vertical (2,2), horizontal (1,2), diagonalUp
    (1,5), diagonalDown (3,2). The board already holds O O O O in the second row (columns 1-4):
    like the seed we only count windows that still need a disc, so the next best horizontal
    window (row 3, columns 2-5, one disc short at column 2) gives (1,2). Tie-breaks (documented
    in `ref.remaining_checkers`): the first window in scan order (leftmost, then lowest) -
    so vertical picks column 2 over the equal columns 3 and 4 - and inside a window the column
    needing the most discs: diagonalDown's window (col 1 row 5, col 2 row 4, O, O) needs one
    disc in column 1 but two in column 2 (the overhead checker), hence column 2 as in the seed.

    For X, horizontal (1,6) matches. We differ where the seed prints sentinels:
    * vertical: the seed says (5,6). Column 6 is empty and holds a window of 4 cells with no
      filler needed, so our count is (4,6); the seed's 5 looks like an off-by-one sentinel.
    * diagonalUp and diagonalDown: no window is possible for X (every diagonal holds an O); the
      seed prints (4,2), we print `no_window(4)` = 8 and no column (None).
    """
    x, o, rows, cols = grid(["      ", "X     ", "X OOO ", "OOOOX ", "XOXXX "])

    def one_based(res: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
        return [(n, None if c is None else c + 1) for n, c in res]

    assert one_based(ref.remaining_checkers(o, x, rows, cols, 4)) == [
        (2, 2),
        (1, 2),
        (1, 5),
        (3, 2),
    ]
    assert one_based(ref.remaining_checkers(x, o, rows, cols, 4)) == [
        (4, 6),
        (1, 6),
        (8, None),
        (8, None),
    ]


def test_seed002_numba_kernel_agrees_with_reference() -> None:
    rng = random.Random(3)
    for rows, cols, k in ((6, 7, 4), (5, 6, 4), (7, 8, 5)):
        wmask, wbelow, bounds = c4eval.tables(rows, cols, k)
        board = int(kern.board_mask(rows, cols))
        for _ in range(40):
            state = random_opening(Connect4State.new(rows, cols, k), rng.randrange(30), rng)
            me, opp = state.current, state.opponent
            ref_me = [n for n, _ in ref.remaining_checkers(me, opp, rows, cols, k)]
            ref_opp = [n for n, _ in ref.remaining_checkers(opp, me, rows, cols, k)]
            empty = np.uint64(board & ~state.mask)
            args = (k, wmask, wbelow, bounds)
            got = c4eval.remaining_by_direction(np.uint64(me), np.uint64(opp), empty, *args)
            assert list(got) == ref_me
            score = c4eval.checkers_score(np.uint64(me), np.uint64(opp), empty, *args)
            assert score == sum(ref_opp) - sum(ref_me)


def test_seed000_marked_chip_has_eight_stripes() -> None:
    """Seed 000's example board (7 wide, 5 rows shown): the marked O has 8 open stripes."""
    x, o, rows, cols = grid(["       ", "       ", "       ", "X  O OO", "X OX OX"])
    assert ref.stripes_through(o, x, bit(3, 1, rows), rows, cols, 4) == 8
    # The board value sums the stripes of every chip: each window counts once per own disc.
    per_chip_o = sum(ref.stripes_through(o, x, b, rows, cols, 4) for b in range(64) if o >> b & 1)
    per_chip_x = sum(ref.stripes_through(x, o, b, rows, cols, 4) for b in range(64) if x >> b & 1)
    assert ref.board_value(o, x, rows, cols, 4) == per_chip_o - per_chip_x
    won = o | (1 << bit(2, 1, rows)) | (1 << bit(1, 1, rows))  # hypothetical: O holds a row
    assert ref.board_value(won | (1 << bit(4, 1, rows)), x, rows, cols, 4) == 10_000


def test_window_eval_is_seed003_score() -> None:
    """The "window" evaluation at the root player's node equals seed 003's board score."""
    rng = random.Random(5)
    wmask, wbelow, bounds = c4eval.tables(6, 7, 4)
    board = kern.board_mask(6, 7)
    for _ in range(30):
        state = random_opening(Connect4State.new(), rng.randrange(1, 25), rng)
        col = rng.choice(state.legal_moves())
        after = state.play(col)
        if after.is_over():
            continue
        expected = onestep_score(state.current, state.mask, 6, 7, 4, col)
        # After the move the opponent is to move (odd ply): the value is negated.
        cur, mask = np.uint64(after.current), np.uint64(after.mask)
        value = c4eval.evaluate(c4eval.WINDOW, cur, mask, board, 4, 1, wmask, wbelow, bounds)
        assert -value == expected


def test_win_cells_matches_brute_force() -> None:
    rng = random.Random(11)
    for rows, cols, k in ((6, 7, 4), (5, 6, 4), (7, 8, 5), (4, 4, 3)):
        board = int(kern.board_mask(rows, cols))
        for _ in range(30):
            state = random_opening(Connect4State.new(rows, cols, k), rng.randrange(40), rng)
            for bb in (state.current, state.opponent):
                expected = 0
                for cell in range(64):
                    empty = board >> cell & 1 and not state.mask >> cell & 1
                    if empty and _is_win(bb | 1 << cell, rows, k):
                        expected |= 1 << cell
                got = win_cells(np.uint64(bb), np.uint64(state.mask), board, rows, k)
                assert int(got) == expected


def test_unknown_eval_names_the_choices() -> None:
    with pytest.raises(ValueError, match="checkers, opportunities, window"):
        C4Minimax(eval="nope")
    with pytest.raises(ValueError, match="checkers"):
        registry.build(registry.resolve("minimax:eval=nope", "connect4")[0], "connect4")


# -- minimax and expectiminimax ------------------------------------------------------------------


@pytest.mark.parametrize(("moves", "wins"), WIN_IN_3 + WIN_IN_5)
def test_fixture_positions_are_what_they_claim(moves: str, wins: set[int]) -> None:
    state = Connect4State.from_moves(moves)
    plies = 3 if (moves, wins) in WIN_IN_3 else 5
    assert not state.winning_moves()
    assert winning_moves_within(state, plies) == wins
    assert not winning_moves_within(state, plies - 2)


def test_win_in_one_and_block_are_immediate() -> None:
    win = Connect4State.from_moves("121212")  # X: three in column 1, O: three in column 2
    block = Connect4State.from_moves("12121")  # O to move must stop column 1
    for agent in all_agents():
        assert agent.choose(win, Budget(depth=3), random.Random(0)).move == 0
        decision = agent.choose(block, Budget(depth=3), random.Random(0))
        assert decision.move == 0
        assert decision.info["line"] in ("win", "block")
    assert forced_move(win) == (0, "win")
    assert forced_move(block) == (0, "block")


@pytest.mark.parametrize("eval_name", EVALS)
@pytest.mark.parametrize(("moves", "wins"), WIN_IN_3)
def test_minimax_finds_win_in_3(eval_name: str, moves: str, wins: set[int]) -> None:
    state = Connect4State.from_moves(moves)
    decision = C4Minimax(eval=eval_name).choose(state, Budget(depth=3), random.Random(0))
    assert decision.move in wins
    assert decision.score is not None and decision.score > c4eval.WON_BOARD
    exp = C4Expectiminimax(eval=eval_name).choose(state, Budget(depth=3), random.Random(0))
    assert exp.move in wins and exp.info["line"] == "minimax"
    assert "force_random_reply" not in exp.info


@pytest.mark.parametrize("eval_name", EVALS)
@pytest.mark.parametrize(("moves", "wins"), WIN_IN_5)
def test_minimax_finds_win_in_5(eval_name: str, moves: str, wins: set[int]) -> None:
    state = Connect4State.from_moves(moves)
    assert C4Minimax(eval=eval_name).choose(state, Budget(depth=5), random.Random(0)).move in wins
    exp = C4Expectiminimax(eval=eval_name).choose(state, Budget(depth=5), random.Random(0))
    assert exp.move in wins and exp.info["line"] == "minimax"
    # With a time budget (and no depth) the search deepens until it proves the win (the
    # tactical checks at the leaves see the last two plies, so depth 3 may already do).
    timed = C4Minimax(eval=eval_name).choose(state, Budget(time=0.3), random.Random(0))
    assert timed.move in wins and timed.score == WIN - 5


def test_minimax_never_plays_under_an_opponent_win() -> None:
    """Row 2 holds O O O and an empty cell above the empty column 4 (the centre): playing
    there hands O the win, so every agent goes elsewhere even though it loves the centre."""
    x, o, rows, cols = grid(["       ", "       ", "       ", "       ", "OOO    ", "XOX  X "])
    state = raw_state(x, o, rows, cols)
    assert winning_moves_within(state, 1) == set()
    for agent in all_agents():
        assert agent.choose(state, Budget(depth=3), random.Random(0)).move != 3


def test_expectiminimax_reports_its_line() -> None:
    rng = random.Random(2)
    seen = set()
    for _ in range(12):
        state = random_opening(Connect4State.new(), rng.randrange(0, 12), rng)
        decision = C4Expectiminimax().choose(state, Budget(depth=3), random.Random(0))
        line = decision.info["line"]
        seen.add(line)
        assert line in ("chance", "minimax", "win", "block")
        assert decision.info.get("force_random_reply", False) == (line == "chance")
        if line == "chance":
            assert decision.info["chance_value"] > decision.info["minimax_value"]
            assert decision.move == decision.info["chance_move"]
    assert "chance" in seen


def test_chance_plies_zero_is_plain_minimax() -> None:
    state = Connect4State.from_moves("4453")
    decision = C4Expectiminimax(chance_plies=0).choose(state, Budget(depth=4), random.Random(0))
    plain = C4Minimax().choose(state, Budget(depth=4), random.Random(0))
    assert decision.info["chance_value"] == plain.score
    assert decision.info["line"] == "minimax" and decision.move == plain.move


def test_deterministic_for_a_fixed_seed() -> None:
    for agent_a, agent_b in zip(all_agents(), all_agents(), strict=True):
        records = [
            play_game(
                Connect4State.new(),
                (agent, C4Minimax(eval="window")),
                (Budget(depth=3), Budget(depth=2)),
                random.Random(9),
            ).moves
            for agent in (agent_a, agent_b)
        ]
        assert records[0] == records[1]


@pytest.mark.parametrize(
    ("agent", "budgets", "moves"),
    [
        (C4Minimax(), (0.1, 0.3), 30),
        (C4Minimax(eval="opportunities"), (0.1,), 10),
        (C4Expectiminimax(), (0.1, 0.3), 16),
        (PlannerAgent(), (0.1,), 10),
        (PlannerAgent(search="minimax"), (0.1,), 6),
    ],
)
def test_time_budget_is_respected(agent: Agent, budgets: tuple[float, ...], moves: int) -> None:
    rng = random.Random(4)
    state = Connect4State.new()
    worst = 0.0
    for i in range(moves):
        if state.is_over():
            state = random_opening(Connect4State.new(), rng.randrange(6), rng)
        limit = budgets[i % len(budgets)]
        t0 = time.perf_counter()
        decision = agent.choose(state, Budget(time=limit), rng)
        worst = max(worst, time.perf_counter() - t0 - limit)
        state = state.play(decision.move)
    assert worst <= scaled(0.2)  # a runaway search, not the machine's load


@pytest.mark.parametrize(("rows", "cols", "k"), [(5, 6, 4), (7, 8, 5)])
def test_variants(rows: int, cols: int, k: int) -> None:
    rng = random.Random(1)
    agents = all_agents()
    for i, agent in enumerate(agents):
        other = agents[(i + 1) % len(agents)]
        record = play_game(
            Connect4State.new(rows, cols, k), (agent, other), (Budget(depth=2),) * 2, rng
        )
        assert record.outcome is not None
    # X has k-1 in the bottom row and is to move (O's column threat comes too late).
    moves = "18283848" if k == 5 else "162636"
    state = Connect4State.from_moves(moves, rows, cols, k)
    for agent in agents:
        assert agent.choose(state, Budget(depth=3), rng).move == (4 if k == 5 else 3)


def test_agents_pickle_and_registry_dispatch() -> None:
    spec, budget = registry.resolve("minimax", "connect4")
    assert budget == Budget(depth=3)
    agent = registry.build(spec, "connect4")
    assert isinstance(agent, C4Minimax) and agent.eval == "checkers"
    spec, _ = registry.resolve("expectiminimax:eval=window:chance_plies=1", "connect4")
    exp = registry.build(spec, "connect4")
    assert isinstance(exp, C4Expectiminimax) and exp.chance_plies == 1
    spec, budget = registry.resolve("planner:search=minimax", "connect4")
    assert isinstance(registry.build(spec, "connect4"), PlannerAgent)
    state = Connect4State.from_moves("4453")
    for a in (agent, exp, PlannerAgent()):
        clone = pickle.loads(pickle.dumps(a))
        assert clone.choose(state, Budget(depth=3), random.Random(0)).move == (
            a.choose(state, Budget(depth=3), random.Random(0)).move
        )


# -- the planner ---------------------------------------------------------------------------------


def test_planner_scoring_table_small_board() -> None:
    """5 columns x 4 rows, X = the planner. Hand count, X to move:

    X X X in row 2 over O O O in row 1 (columns 1-3). X's winning cell is column 4 row 2,
    right above column 4's landing cell: opponent forced hand +25. X: row 2 cols 1-4 is a
    three (+30, its empty cell is not playable), row 2 cols 2-5 a two (+10). O: row 1 cols 1-4
    is an attack (-50: column 4 row 1 is playable), row 1 cols 2-5 a two (-10). No full column
    and no landing cell under an O winning cell: no impossible move. Sum: 5.
    Diminishing (points/10, table order): 2.5; +1*0.75 = 3.25; +3*0.675 = 5.275;
    -1*0.4725 = 4.8025; -5*0.51975 = 2.20375 -> 2.204.
    """
    x, o, rows, cols = grid(["     ", "     ", "XXX  ", "OOO  "])
    geo = geometry(rows, cols, 4)
    forced, items = score_items(x, o, True, geo)
    assert forced == 0
    assert items == [25, 10, 30, -10, -50]
    assert average_score(x, o, True, geo) == 5
    assert minimax_score(x, o, True, geo) == pytest.approx(2.204, abs=6e-4)
    # O to move: O can win at once in column 4, a forced win for O.
    assert average_score(x, o, False, geo) == -125
    assert minimax_score(x, o, False, geo) == -10.0


def test_planner_scoring_two_and_attack() -> None:
    """X X . . . over nothing, O at column 5: X has one two (+10), nothing else: 10 and 1.0.
    Then X X X with O to move: X's single attack (+50) and the two X X . . in cols 2-5 (+10),
    O's column 5 disc makes no line of two: 60; O can block, so it is not a forced win."""
    x, o, rows, cols = grid(["     ", "     ", "     ", "XX  O"])
    geo = geometry(rows, cols, 4)
    assert score_items(x, o, True, geo) == (0, [10])
    assert minimax_score(x, o, True, geo) == 1.0
    x, o, rows, cols = grid(["     ", "     ", "OO   ", "XXX  "])
    assert score_items(x, o, False, geo) == (0, [10, 50, -10])
    # Two separate attacks (both ends of X X X open) are a forced win whoever moves.
    x, o, rows, cols = grid(["      ", "      ", " OOO  ", " XXX  "])
    geo6 = geometry(rows, cols, 4)
    assert average_score(x, o, False, geo6) == 125


def test_planner_diminishing_returns() -> None:
    assert diminishing([]) == 0.0
    assert diminishing([10]) == 1.0
    assert diminishing([-30]) == -3.0
    assert diminishing([50] * 20) < 10
    assert diminishing([200]) == 9.95  # the backup cap
    assert diminishing([-200]) == -9.95


def test_planner_forced_checks() -> None:
    planner = PlannerAgent()
    win = Connect4State.from_moves("121212")
    assert planner.choose(win, Budget(), random.Random(0)).info["line"] == "win"
    block = Connect4State.from_moves("12121")
    decision = planner.choose(block, Budget(), random.Random(0))
    assert (decision.move, decision.info["line"]) == (0, "block")
    # X X in row 1 at columns 3-4 with both sides open: column 2 or 5 makes two threats.
    x, o, rows, cols = grid(["       "] * 4 + ["  OO   ", "  XX   "])
    state = raw_state(x, o, rows, cols)
    decision = planner.choose(state, Budget(), random.Random(0))
    assert decision.info["line"] == "double threat" and decision.move in (1, 4)


@pytest.mark.parametrize("search", ["average", "minimax"])
@pytest.mark.parametrize(("moves", "wins"), WIN_IN_3)
def test_planner_finds_win_in_3(search: str, moves: str, wins: set[int]) -> None:
    state = Connect4State.from_moves(moves)
    decision = PlannerAgent(search=search).choose(state, Budget(depth=3), random.Random(0))
    assert decision.move in wins


def test_planner_average_search_rounds_and_prunes() -> None:
    """At depth 2 the value of a move is round((own + mean(children)) / 2); checked by hand on
    a position where the planner's reply set is small: a 3x3 board with k=3."""
    planner = PlannerAgent()
    geo = geometry(3, 3, 3)
    x, o, rows, _ = grid(["   ", "   ", "XO "])
    # After X plays column 3 (bottom right), O is to move; O's replies: columns 1, 2, 3.
    x2 = x | 1 << bit(2, 0, rows)
    own = average_score(x2, o, False, geo)
    kids = [average_score(x2, o | cell, True, geo) for cell in geo.cells(geo.landing(x2 | o))]
    expected = (own + sum(kids) / len(kids)) / 2
    assert planner._average(x2, o, False, 1, geo) == round_half_away(expected)
    assert round_half_away(2.5) == 3 and round_half_away(-2.5) == -3
