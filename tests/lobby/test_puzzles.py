"""Puzzles in the lobby: the next puzzle (one's own blunders first, then the shipped puzzle
nearest one's rating not yet answered), an answer judged against the proven one and rated once
(openskill: the player against the puzzle), streaks, the daily puzzle (the same for everyone,
one per UTC day and game; its post in the announcement channel claimed once), the stats."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from db.store import Store
from engine.puzzles.pool import Puzzle, load_pool
from lobby.core import Lobby, LobbyConfig, Person
from lobby.errors import BadMove, BadRequest, NotInMatch
from lobby.pool import EnginePool
from lobby.puzzle import (
    PUZZLE_SIGMA,
    current_daily_streak,
    daily_of,
    day_of,
    nearest,
    position,
    prompt_lines,
    stats_lines,
    verdict_lines,
)
from lobby.ratings import DEFAULT_MU
from tests.clock import Clock
from tests.lobby.test_retry import GAME, LATE, played, warm_solvers

ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")
DAY = 86_400.0


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "puzzles.db", clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=7, analysis_seconds=1.0), clock=clock)
    try:
        yield lobby
    finally:
        await lobby.close()
        await store.close()


def wrong_move(p: Puzzle) -> str:
    state, _ = position(p.game, p.moves)
    return next(t for m in state.legal_moves() if (t := state.move_to_str(m)) != p.answer)


def test_shipped_puzzles_are_legal_positions_with_a_legal_answer_in_our_notation() -> None:
    for game in ("connect4", "othello"):
        pool = load_pool(game)
        assert pool, game
        for p in pool[:50]:  # what the lobby reads of them (the pool's own tests prove them)
            state, _ = position(game, p.moves)
            legal = [state.move_to_str(m) for m in state.legal_moves()]
            assert p.answer in legal and p.line[0] == p.answer, p.id


def test_the_daily_puzzle_is_the_same_for_everyone_and_changes_with_the_day() -> None:
    pool = load_pool("connect4")[:6]
    days = [day_of(1_800_000_000 + k * DAY) for k in range(30)]
    picks = [daily_of(pool, "connect4", d) for d in days]
    assert picks == [daily_of(tuple(reversed(pool)), "connect4", d) for d in days]  # any order
    ids = [p.id for p in picks if p is not None]
    assert len(set(ids[: len(pool)])) == len(pool)  # none comes back before all were shown
    assert ids[len(pool)] == ids[0]
    assert daily_of((), "connect4", days[0]) is None
    midnight = 1_800_000_000 // DAY * DAY  # UTC days
    assert day_of(midnight) == day_of(midnight + DAY - 1) == "2027-01-15"
    assert day_of(midnight - 1) == "2027-01-14" and day_of(midnight + DAY) == "2027-01-16"


def test_the_next_puzzle_is_near_the_rating_and_not_answered() -> None:
    pool = load_pool("othello")
    ordered = sorted(pool, key=lambda p: (abs(p.rating - 30.0), p.id))  # ties: by id
    assert nearest(pool, {}, set(), 30.0)[0] == ordered[0]
    assert ordered[0] not in nearest(pool, {}, {ordered[0].id}, 30.0)
    assert nearest(pool, {}, {p.id for p in pool}, 30.0) == []


async def test_an_answer_is_rated_once_and_moves_the_streak(lobby: Lobby) -> None:
    a, b = load_pool("connect4")[:2]
    shown = await lobby.puzzles.show(a.id, ANN)
    assert shown.kind == "win" and shown.plies == a.plies and shown.rating == a.rating
    assert prompt_lines(shown)[0] == (
        f"🔴 to play and win in {(a.plies + 1) // 2} of your moves ({a.plies} plies)."
        if shown.seat == 0
        else f"🟡 to play and win in {(a.plies + 1) // 2} of your moves ({a.plies} plies)."
    )
    right = await lobby.puzzles.answer(a.id, a.answer, ANN)
    assert right.solved and right.first and right.before is None and right.after is not None
    assert right.after.mu > DEFAULT_MU and right.after.streak == 1 and right.line == a.line
    assert verdict_lines(right)[0] == f"✅ Column {a.answer} is right."
    assert verdict_lines(right)[1].startswith(f"The solver's line: {' '.join(a.line)} (")
    assert "Your puzzle rating: " in verdict_lines(right)[2]
    rating = (await lobby.store.puzzles.ratings("connect4"))[a.id]
    assert rating.mu < a.rating and rating.sigma < PUZZLE_SIGMA  # the puzzle lost a game

    again = await lobby.puzzles.answer(a.id, wrong_move(a), ANN)  # a second answer: not rated
    assert not again.solved and not again.first and again.earlier == (a.answer, True)
    assert "this answer is not rated" in verdict_lines(again)[-1]
    score = await lobby.store.puzzles.score((await lobby.player_for(ANN)).id, "connect4")
    assert score == right.after

    wrong = await lobby.puzzles.answer(b.id, wrong_move(b), ANN)
    assert wrong.solved is False and wrong.after is not None
    assert wrong.after.mu < right.after.mu and wrong.after.streak == 0
    assert wrong.after.best_streak == 1 and (wrong.after.attempts, wrong.after.solved) == (2, 1)
    assert verdict_lines(wrong)[0].startswith(f"❌ Column {wrong_move(b)} is not it: the answer")

    with pytest.raises(BadMove):
        await lobby.puzzles.answer(b.id, "9", BEN)
    with pytest.raises(BadMove):
        await lobby.puzzles.answer(b.id, 40, BEN)
    with pytest.raises(BadRequest, match="there is no such puzzle"):
        await lobby.puzzles.answer("c4-000000000000", "4", BEN)
    with pytest.raises(BadRequest, match="there are puzzles of connect4 and othello"):
        await lobby.puzzles.next("chess", BEN)
    assert await lobby.store.players.find_local("ben") is None  # refusals create nobody


async def test_an_othello_answer_and_its_value(lobby: Lobby) -> None:
    p = load_pool("othello")[0]
    v = await lobby.puzzles.answer(p.id, p.answer.upper(), BEN)  # notation is case-blind
    assert v.solved and v.value == p.value
    assert verdict_lines(v)[0] == f"✅ Square {p.answer} is right."
    ends = "level" if p.value == 0 else f"{abs(p.value)} discs"
    assert ends in verdict_lines(v)[1] and "with best play" in verdict_lines(v)[1]


async def test_next_serves_every_puzzle_once_nearest_the_rating(lobby: Lobby) -> None:
    pool = load_pool("connect4")[:6]  # a pool of six (the shipped one may be large)
    lobby.puzzles.pool = lambda game: pool if game == "connect4" else load_pool(game)
    seen = []
    for _ in pool:
        shown = await lobby.puzzles.next("connect4", ANN)
        assert shown.key not in seen
        seen.append(shown.key)
        p = next(q for q in pool if q.id == shown.key)
        await lobby.puzzles.answer(p.id, p.answer, ANN)
    with pytest.raises(BadRequest, match=f"you have answered all {len(pool)} connect4 puzzles"):
        await lobby.puzzles.next("connect4", ANN)
    assert (await lobby.puzzles.next("connect4", BEN)).key in seen  # someone else's are left
    stats = await lobby.puzzles.stats(ANN)
    [score] = stats.scores
    assert (score.attempts, score.solved, score.streak) == (len(pool), len(pool), len(pool))
    assert stats_lines(stats)[0] == "Puzzles of ann"
    assert stats_lines(stats)[1].startswith(f"Connect Four: rating {score.mu:.1f} (±")
    assert f"{len(pool)} of {len(pool)} solved · streak {len(pool)}" in stats_lines(stats)[1]
    empty = await lobby.puzzles.stats(Person("local", "new", "new"))
    assert stats_lines(empty) == [
        "Puzzles of new",
        "No puzzles answered yet.",
    ]


async def test_the_daily_puzzle_and_its_streak(lobby: Lobby, clock: Clock) -> None:
    streaks = []
    for day in range(3):
        shown, post = await lobby.puzzles.daily("connect4")
        assert post is None and shown.daily == day_of(clock())
        assert (await lobby.puzzles.daily("connect4"))[0] == shown  # the same for everyone
        p = next(q for q in load_pool("connect4") if q.id == shown.key)
        v = await lobby.puzzles.answer(p.id, p.answer, Person("local", f"p{day}", "p"))
        assert v.after is not None and v.after.daily_streak == 1  # their first daily
        v = await lobby.puzzles.answer(p.id, p.answer, ANN)
        assert v.after is not None
        streaks.append(v.after.daily_streak)
        clock.now += DAY
    assert streaks == [1, 2, 3]
    [score] = (await lobby.puzzles.stats(ANN)).scores
    assert current_daily_streak(score, day_of(clock())) == score.daily_streak  # yesterday's
    clock.now += DAY
    assert current_daily_streak(score, day_of(clock())) == 0  # a day was missed


async def test_the_daily_post_is_claimed_once_and_the_servers_games_hold(lobby: Lobby) -> None:
    assert (await lobby.puzzles.daily("connect4", 5))[1] is None  # no channel set
    await lobby.change_settings(5, ANN, {"announcements": 555})
    assert (await lobby.puzzles.daily("connect4", 5))[1] == 555
    assert (await lobby.puzzles.daily("connect4", 5))[1] is None  # once a day
    assert (await lobby.puzzles.daily("othello", 5))[1] == 555  # per game
    assert (await lobby.puzzles.daily("othello", None))[1] is None
    await lobby.change_settings(5, ANN, {"games": ["connect4"]})
    with pytest.raises(BadRequest, match="this server offers connect4 only"):
        await lobby.puzzles.daily("othello", 5)
    with pytest.raises(BadRequest, match="this server offers connect4 only"):
        await lobby.puzzles.next("othello", ANN, 5)
    assert (await lobby.puzzles.next("othello", ANN, 6)).game == "othello"  # another server
    assert (await lobby.puzzles.next("connect4", ANN, 5)).game == "connect4"


@pytest.fixture(scope="module")
def _solvers_warm() -> None:
    warm_solvers()


@pytest.mark.usefixtures("_solvers_warm")
async def test_ones_own_blunders_come_first_once_each(lobby: Lobby) -> None:
    n = await played(lobby, ANN, BEN, GAME)
    first = await lobby.puzzles.next("connect4", ANN)
    assert first.kind != "own"  # no analysis yet: nothing of one's own
    _, analysis, _ = await lobby.coach.analysis(n, ANN)
    blunders = [r.ply for r in analysis.moves if r.player == 0 and r.verdict == "blunder"]
    assert LATE in blunders
    served = []
    for _ in blunders:
        shown = await lobby.puzzles.next("connect4", ANN)
        assert shown.kind == "own" and shown.step is not None and shown.rating is None
        served.append(shown.step.ply)
    assert sorted(served) == sorted(blunders)
    assert (await lobby.puzzles.next("connect4", ANN)).kind == "win"  # each is served once
    assert (await lobby.puzzles.stats(ANN)).waiting == {}

    key = f"m{n}.{LATE}"
    shown = await lobby.puzzles.show(key, ANN)
    assert prompt_lines(shown)[:2] == [
        f"From your match #{n}, move {LATE + 1}: 🔴 **ann** to play.",
        "You played column 7 here: a BLUNDER.",
    ]
    missed = await lobby.puzzles.answer(key, "7", ANN)
    assert missed.solved is False and missed.first and missed.after is None  # not rated
    assert verdict_lines(missed)[0].startswith("Column 7 does not hold: win -> loss")
    assert verdict_lines(missed)[1].startswith("The best move was column 1")
    again = await lobby.puzzles.answer(key, 0, ANN)  # column 1: it holds, and is kept apart
    assert again.solved and not again.first and again.earlier == ("7", False)
    assert await lobby.store.puzzles.scores((await lobby.player_for(ANN)).id) == []
    stats = await lobby.puzzles.stats(ANN)
    assert stats.own == {"connect4": (1, 0)}  # the first answer is the one kept
    assert "Connect Four: 0 of 1 of your own blunders put right" in stats_lines(stats)
    with pytest.raises(NotInMatch):
        await lobby.puzzles.answer(key, "1", BEN)  # not ben's mistake
    with pytest.raises(BadRequest):
        await lobby.puzzles.show(f"m{n}.200", ANN)  # not one of ann's mistakes

    # Ben's blunders come to Ben only.
    ben = await lobby.puzzles.next("connect4", BEN)
    assert ben.kind == "own" and ben.step is not None and ben.step.seat == 1
