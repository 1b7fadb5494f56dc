"""`store.tournaments` on both databases: entrants join while a tournament is open and not
full, a round is written whole and once, a game's outcome once, a match a kill left unlinked
is found by its mark, and a row that does not decode is set aside with one warning."""

from __future__ import annotations

import logging

import pytest

from db.errors import TournamentClosedError
from db.store import Store
from db.tournaments import NewGame


async def test_a_tournament_from_entry_to_its_end(store_target: str) -> None:
    async with Store.open(store_target) as store:
        alice = await store.players.get_or_create_user(1, "alice")
        bob = await store.players.get_or_create_user(2, "bob")
        bot = await store.players.get_or_create_agent("easy", "easy")
        t = await store.tournaments.create(
            guild_id=5, channel_id=50, game="connect4", format="swiss", rounds=None,
            turn_seconds=60.0, starts_at=None, creator_id=alice.id,
        )  # fmt: skip
        assert t.status == "open" and t.round == 0 and t.active
        await store.tournaments.join(t.id, alice.id, None, 2)
        with pytest.raises(TournamentClosedError) as already:
            await store.tournaments.join(t.id, alice.id, None, 2)
        assert already.value.why == "joined"
        await store.tournaments.join(t.id, bot.id, "easy", 2)
        with pytest.raises(TournamentClosedError) as full:
            await store.tournaments.join(t.id, bob.id, None, 2)
        assert full.value.why == "full"
        assert await store.tournaments.leave(t.id, bot.id)  # before the start: the entry goes
        await store.tournaments.join(t.id, bob.id, None, 2)
        assert [e.seed for e in await store.tournaments.entrants(t.id)] == [0, 1]
        started = await store.tournaments.start(t.id, 1)
        assert started.status == "running" and started.rounds == 1
        with pytest.raises(TournamentClosedError):
            await store.tournaments.join(t.id, bot.id, "easy", 9)
        assert await store.tournaments.add_round(t.id, 1, [NewGame(0, alice.id, bob.id)])
        assert not await store.tournaments.add_round(t.id, 1, [NewGame(0, bob.id, alice.id)])
        match = await store.matches.create(
            "connect4", "pvp", alice.id, bob.id, options={"tournament": [t.id, 1, 0]}
        )
        assert await store.tournaments.tagged_match(t.id, 1, 0, started.updated_at) == match.id
        assert await store.tournaments.tagged_match(t.id, 1, 1, started.updated_at) is None
        await store.tournaments.link(t.id, 1, 0, match.id)
        assert (await store.tournaments.game_of(match.id)) is not None
        assert await store.tournaments.set_outcome(t.id, 1, 0, "first")
        assert not await store.tournaments.set_outcome(t.id, 1, 0, "second")
        assert await store.tournaments.leave(t.id, bob.id)  # after the start: marked as left
        [game] = await store.tournaments.games(t.id)
        assert (game.outcome, game.match_id) == ("first", match.id)
        ended = await store.tournaments.end(t.id, "finished", alice.id)
        assert ended is not None and ended.winner_id == alice.id and not ended.active
        assert await store.tournaments.end(t.id, "cancelled", None) is None
        assert [x.id for x in await store.tournaments.unannounced()] == [t.id]
        await store.tournaments.announced(t.id)
        assert await store.tournaments.unannounced() == []
        assert await store.tournaments.active() == []


async def test_a_row_that_does_not_decode_is_set_aside_with_one_warning(
    tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    async with Store.open(f"{tmp_path}/t.db") as store:
        alice = await store.players.get_or_create_user(1, "alice")
        made = [
            await store.tournaments.create(
                guild_id=5,
                channel_id=50 + i,
                game="othello",
                format="knockout",
                rounds=None,
                turn_seconds=None,
                starts_at=None,
                creator_id=alice.id,
            )
            for i in range(2)
        ]
        async with store.connection.write("test") as conn:
            await conn.execute("UPDATE tournaments SET round = 'two' WHERE id = ?", (made[0].id,))
        with caplog.at_level(logging.WARNING, logger="db.rows"):
            for _ in range(3):
                assert [t.id for t in await store.tournaments.active(5)] == [made[1].id]
        assert len([r for r in caplog.records if "tournaments" in r.getMessage()]) == 1
