"""Small words people read are right: no brackets inside brackets in a hint, "1 move" and not
"1 moves", and an unplayed match is never called rated."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from db.store import Store
from engine.analysis import Analysis, Side, summary
from engine.games.connect4 import Connect4State
from engine.hints import hint
from lobby.core import Lobby, Person
from lobby.errors import LobbyError
from lobby.pool import EnginePool
from lobby.present import hint_line, history
from tests.clock import Clock

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "words.db")
    lob = Lobby(store, pool, clock=clock)
    yield lob
    await lob.close()
    await store.close()


def nested(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c == "("
        if depth > 1:
            return True
        depth -= c == ")"
    return False


async def test_a_hint_line_has_no_brackets_inside_brackets(lobby: Lobby) -> None:
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("33445"):  # Alice's open three on the bottom row: Bob is lost
        snap = await lobby.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    found = hint(Connect4State.from_moves("33445"), seconds=5.0)
    assert "lose" in found.outcome
    line = hint_line(found, snap, 3)
    assert not nested(line), line


def test_one_judged_move_is_one_move() -> None:
    one, two = Side(judged=1, accuracy=1.0), Side(judged=2, accuracy=1.0)
    lines = summary(Analysis("connect4", None, [], players=[one, two]), ("Ann", "Bob"))
    assert "accuracy 100% over 1 move," in lines[0] and "over 2 moves," in lines[1]


async def test_a_match_abandoned_before_a_move_is_not_called_rated(
    lobby: Lobby, clock: Clock
) -> None:
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    assert snap.match.rated
    clock.now += 10_000  # the clock ran out before a move
    [ended] = await lobby.expire_turns()
    assert ended.match.status == "abandoned"
    _, rows = await lobby.history(ALICE)
    [line] = history("Alice", rows).lines
    assert line.endswith("0 moves, unrated"), line


async def test_the_bots_players_have_stats_and_history_by_level_or_name(lobby: Lobby) -> None:
    for game in ("connect4", "othello"):
        snap = await lobby.start_pve(ALICE, game, "easy")
        await lobby.resign(snap.id, ALICE)
    for name in ("easy", "Bot (easy)"):
        label, stats = await lobby.bot_stats(name)
        assert label == "Bot (easy)"
        assert sorted((s.game, s.played, s.wins) for s in stats) == [
            ("connect4", 1, 1),
            ("othello", 1, 1),
        ]
        label, rows = await lobby.bot_history(name)
        assert len(rows) == 2 and all(h.outcome == "win" for h in rows)
    with pytest.raises(LobbyError, match="no player called"):
        await lobby.bot_stats("nosuch")
