"""The store's puzzles (``store.puzzles``) on both backends: a player's first answer kept with
the score and rating computed in its transaction, a later one writing nothing; the queue of
one's own positions (each queued once, served once); the analysed matches a queue is filled
from; the daily post claimed once per server, game and day; rows that do not decode set aside
with one warning."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from db import PlayerNotFoundError, Store
from db.models import MatchKind
from db.puzzles import PuzzleRating, PuzzleScore, Scorer
from tests.stores import finish_match, people, postgres


def _scorer(pid: int, pzl: str, mu: float, solved: bool) -> Scorer:
    """The player's mu set to `mu`, the puzzle's to 30 - mu."""

    def score(
        before: PuzzleScore | None, rating: PuzzleRating | None
    ) -> tuple[PuzzleScore, PuzzleRating]:
        base = before or PuzzleScore(pid, "connect4", 25.0, 8.0)
        held = rating or PuzzleRating(pzl, "connect4", 20.0, 4.0)
        return (
            replace(base, mu=mu, attempts=base.attempts + 1, solved=base.solved + solved),
            replace(held, mu=30.0 - mu, attempts=held.attempts + 1),
        )

    return score


async def test_a_first_answer_is_kept_with_its_score_and_a_later_one_writes_nothing(
    store_target: str,
) -> None:
    async with Store.open(store_target) as s:
        alice, bob, _ = await people(s)
        assert await s.puzzles.score(alice.id, "connect4") is None
        done = await s.puzzles.record(
            alice.id,
            "connect4",
            "c4-aa",
            "4",
            True,
            daily="2026-11-27",
            score=_scorer(alice.id, "c4-aa", 27.0, True),
        )
        assert done.first and done.before is None and done.attempt.rated
        assert done.after is not None and done.after.mu == 27.0 and done.after.solved == 1
        assert done.rating is not None and done.rating.mu == 3.0
        again = await s.puzzles.record(
            alice.id, "connect4", "c4-aa", "5", False, score=_scorer(alice.id, "c4-aa", 1.0, False)
        )
        assert not again.first and again.attempt.move == "4" and again.attempt.solved
        assert again.attempt.daily == "2026-11-27"
        unrated = await s.puzzles.record(bob.id, "connect4", "c4-bb", "2", False)
        assert unrated.first and not unrated.attempt.rated and unrated.after is None
        with pytest.raises(PlayerNotFoundError):
            await s.puzzles.record(999, "connect4", "c4-aa", "4", True)
    async with Store.open(store_target) as s:
        score = await s.puzzles.score(alice.id, "connect4")
        assert score is not None and (score.mu, score.attempts, score.solved) == (27.0, 1, 1)
        assert await s.puzzles.scores(alice.id) == [score]
        assert await s.puzzles.scores(bob.id) == []
        rating = (await s.puzzles.ratings("connect4"))["c4-aa"]
        assert (rating.mu, rating.sigma, rating.attempts) == (3.0, 4.0, 1)
        assert await s.puzzles.ratings("othello") == {}
        assert await s.puzzles.rating("c4-aa") == rating
        assert await s.puzzles.rating("c4-bb") is None  # answered unrated: no rating moved
        assert await s.puzzles.answered(alice.id, "connect4") == {"c4-aa"}
        assert await s.puzzles.answered(bob.id, "connect4") == {"c4-bb"}
        kept = await s.puzzles.attempt(alice.id, "c4-aa")
        assert kept is not None and kept.move == "4" and kept.solved
        assert await s.puzzles.attempt(alice.id, "c4-bb") is None
        assert await s.puzzles.unrated(bob.id) == {"connect4": (1, 0)}
        assert await s.puzzles.unrated(alice.id) == {}


async def test_the_queue_serves_each_position_once_oldest_first(store_target: str) -> None:
    async with Store.open(store_target) as s:
        alice, bob, _ = await people(s)
        m = await s.matches.create("connect4", "pvp", alice.id, bob.id)
        assert await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.4", m.id, 4)]) == 1
        added = await s.puzzles.enqueue(
            alice.id, "connect4", [(f"m{m.id}.4", m.id, 4), (f"m{m.id}.8", m.id, 8)]
        )
        assert added == 1  # the one queued before is not queued again
        assert await s.puzzles.waiting(alice.id) == {"connect4": 2}
        assert await s.puzzles.take(alice.id, "othello") is None
        first = await s.puzzles.take(alice.id, "connect4")
        assert first is not None and (first.item, first.match_id, first.ply) == (
            f"m{m.id}.4",
            m.id,
            4,
        )
        # Answering the other one serves it too.
        await s.puzzles.record(alice.id, "connect4", f"m{m.id}.8", "1", True)
        assert await s.puzzles.take(alice.id, "connect4") is None
        assert await s.puzzles.waiting(alice.id) == {}
        assert await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.4", m.id, 4)]) == 0
        assert await s.puzzles.take(bob.id, "connect4") is None


async def test_the_analysed_matches_of_a_player(store_target: str) -> None:
    async with Store.open(store_target) as s:
        alice, bob, bot = await people(s)
        ids = []
        for first, second in ((alice, bob), (bob, alice), (alice, bot)):
            kind: MatchKind = "pve" if second is bot else "pvp"
            m = await s.matches.create("connect4", kind, first.id, second.id)
            await s.matches.append_move(m.id, 0, "4", first.id)
            await finish_match(s, m.id, "finished", "0", "resign")
            ids.append(m.id)
        live = await s.matches.create("connect4", "pvp", alice.id, bob.id)
        for n in (*ids, live.id):
            await s.analyses.put(n, 3, {"moves": [n]})
        await s.analyses.put(ids[2], 2, {"moves": []})  # by another analyser's version
        found = await s.puzzles.analysed(alice.id, "connect4", 3)
        assert found == [(ids[1], 1, {"moves": [ids[1]]}), (ids[0], 0, {"moves": [ids[0]]})]
        assert await s.puzzles.analysed(alice.id, "connect4", 3, limit=1) == [found[0]]
        assert await s.puzzles.analysed(alice.id, "othello", 3) == []
        assert [n for n, _, _ in await s.puzzles.analysed(bob.id, "connect4", 3)] == ids[1::-1]


async def test_the_daily_post_is_claimed_once_per_server_game_and_day(store_target: str) -> None:
    async with Store.open(store_target) as s:
        assert await s.puzzles.claim_post(5, "connect4", "2026-11-27")
        assert not await s.puzzles.claim_post(5, "connect4", "2026-11-27")
        assert await s.puzzles.claim_post(5, "othello", "2026-11-27")
        assert await s.puzzles.claim_post(6, "connect4", "2026-11-27")
        assert await s.puzzles.claim_post(5, "connect4", "2026-11-28")
    async with Store.open(store_target) as s:  # another process, or after a restart
        assert not await s.puzzles.claim_post(5, "connect4", "2026-11-27")


async def test_rows_that_do_not_decode_are_set_aside_with_one_warning(
    store_target: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with Store.open(store_target) as s:
        alice, bob, _ = await people(s)
        await s.puzzles.record(
            bob.id, "connect4", "c4-aa", "4", True, score=_scorer(bob.id, "c4-aa", 26.0, True)
        )
        m = await s.matches.create("connect4", "pvp", alice.id, bob.id)
        await finish_match(s, m.id, "finished", "0", "resign")
        await s.analyses.put(m.id, 3, {"moves": []})
    planted = [
        # A game PostgreSQL takes and the store does not: set aside, bob's row kept.
        f"INSERT INTO puzzle_scores VALUES ({alice.id}, 'connect4', 25, 8, 1, 1, 0, 0, 0, 0,"
        " NULL, 0)",
        f"UPDATE analyses SET data = '[1, 2]' WHERE match_id = {m.id}",
    ]
    if postgres(store_target):
        import asyncpg

        conn = await asyncpg.connect(store_target)
        for sql in planted:
            await conn.execute(sql)
        await conn.execute(f"UPDATE puzzle_scores SET last_daily = '' WHERE player_id = {alice.id}")
        await conn.close()
    else:
        with sqlite3.connect(store_target) as raw:
            for sql in planted:
                raw.execute(sql)
            raw.execute(f"UPDATE puzzle_scores SET mu = 'lots' WHERE player_id = {alice.id}")
        raw.close()
    caplog.set_level(logging.WARNING, logger="db.rows")
    async with Store.open(store_target) as s:
        if postgres(store_target):  # PostgreSQL keeps its types: the row decodes
            assert len(await s.puzzles.scores(alice.id)) == 1
        else:
            assert await s.puzzles.scores(alice.id) == []
            assert await s.puzzles.score(alice.id, "connect4") is None
        bob_score = await s.puzzles.score(bob.id, "connect4")
        assert bob_score is not None and bob_score.mu == 26.0
        assert await s.puzzles.analysed(alice.id, "connect4", 3) == []
        assert await s.puzzles.analysed(alice.id, "connect4", 3) == []  # again: no new warning
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("analyses" in w for w in warnings) == 1, warnings
    assert sum("puzzle_scores" in w for w in warnings) == (0 if postgres(store_target) else 1)


async def test_a_corrupt_score_is_written_anew_by_the_next_answer(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    async with Store.open(db) as s:
        alice, _, _ = await people(s)
        await s.puzzles.record(
            alice.id, "connect4", "c4-aa", "4", True, score=_scorer(alice.id, "c4-aa", 26.0, True)
        )
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE puzzle_scores SET streak = 'x'")
        raw.execute("UPDATE puzzle_ratings SET mu = 'x'")
    raw.close()
    async with Store.open(db) as s:
        assert await s.puzzles.score(alice.id, "connect4") is None
        done = await s.puzzles.record(
            alice.id, "connect4", "c4-bb", "4", True, score=_scorer(alice.id, "c4-bb", 24.0, True)
        )
        assert done.before is None and done.after is not None
        score = await s.puzzles.score(alice.id, "connect4")
        assert score is not None and score.mu == 24.0


async def test_a_queue_item_that_does_not_decode_is_passed_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "bot.db"
    async with Store.open(db) as s:
        alice, bob, _ = await people(s)
        m = await s.matches.create("connect4", "pvp", alice.id, bob.id)
        await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.2", m.id, 2)])
        await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.4", m.id, 4)])
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE puzzle_queue SET ply = 'two' WHERE ply = 2")
    raw.close()
    caplog.set_level(logging.WARNING, logger="db.rows")
    async with Store.open(db) as s:
        item = await s.puzzles.take(alice.id, "connect4")
        assert item is not None and item.ply == 4  # the one that decodes
        assert await s.puzzles.take(alice.id, "connect4") is None  # the other was set aside
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "puzzle_queue" in warnings[0], warnings


async def test_asking_again_with_nothing_new_writes_nothing(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Store.open(store_target) as s:
        alice, bob, _ = await people(s)
        m = await s.matches.create("connect4", "pvp", alice.id, bob.id)
        await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.4", m.id, 4)])
        assert await s.puzzles.take(alice.id, "connect4") is not None
        writes: list[str] = []
        write = s.connection.write

        def counted(op: str) -> Any:
            writes.append(op)
            return write(op)

        monkeypatch.setattr(s.connection, "write", counted)
        assert await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.4", m.id, 4)]) == 0
        assert await s.puzzles.take(alice.id, "connect4") is None
        assert await s.puzzles.take(bob.id, "othello") is None
        assert writes == []
        assert await s.puzzles.enqueue(alice.id, "connect4", [(f"m{m.id}.6", m.id, 6)]) == 1
        assert writes == ["enqueue_puzzles"]
