"""What the lobby lists for people: leaderboards, a player's stats and history (a person's, or
one of the bot's players by name), the rating chart, a match's moves, the agents of a game."""

from __future__ import annotations

import asyncio

from db.store import Store
from engine.agents import registry
from lobby.boundary import boundary
from lobby.charts import rating_chart
from lobby.errors import BadRequest
from lobby.memory import LearningMemory
from lobby.models import HistoryEntry, LeaderboardEntry, MoveRow, Player, PlayerStats
from lobby.overview import AgentOverview, agents_overview
from lobby.people import People
from lobby.records import Person
from lobby.starting import game_named


class Listings:
    """Read-only listings from the store."""

    def __init__(self, store: Store, people: People, memory: LearningMemory) -> None:
        self._store = store
        self._people = people
        self._memory = memory  # which agents learn (for the agents' overview)

    @boundary
    async def leaderboard(
        self, game: str, guild_id: int | None = None, limit: int = 10
    ) -> list[LeaderboardEntry]:
        return await self._store.ratings.leaderboard(
            game_named(game), limit=limit, guild_id=guild_id
        )

    @boundary
    async def agents_overview(self, game: str) -> list[AgentOverview]:
        """Every agent of a game: description, levels, ratings and learned memory."""
        return await agents_overview(self._store, self._memory, game_named(game))

    @boundary
    async def stats(self, person: Person) -> tuple[Player, list[PlayerStats]]:
        player = await self._people.player_for(person)
        return player, await self._store.ratings.player_stats(player.id)

    @boundary
    async def bot_stats(self, name: str) -> tuple[str, list[PlayerStats]]:
        """The record of one of the bot's players, by level or agent name (`expert`, `Bot
        (expert)`), over every game it plays: (its name as shown, the stats of each game)."""
        label, players = await self._bot_players(name)
        rows = [row for p in players for row in await self._store.ratings.player_stats(p.id)]
        return label, rows

    @boundary
    async def bot_history(self, name: str, limit: int = 10) -> tuple[str, list[HistoryEntry]]:
        """The last ended matches of one of the bot's players (as `bot_stats`), newest first."""
        label, players = await self._bot_players(name)
        rows = [
            row for p in players for row in await self._store.matches.history(p.id, limit=limit)
        ]
        rows.sort(key=lambda h: (h.match.finished_at or 0.0, h.match.id), reverse=True)
        return label, rows[:limit]

    async def _bot_players(self, name: str) -> tuple[str, list[Player]]:
        text = name.strip()
        if text.casefold().startswith("bot (") and text.endswith(")"):
            text = text[5:-1].strip()
        keys = [f"{game}:{text}" for game in registry.GAMES]
        players = await self._store.players.find_agents(keys)
        if not players:
            raise BadRequest(f"the bot has no player called {name!r} with a finished match yet")
        return players[0].display_name, players

    @boundary
    async def history(self, person: Person, limit: int = 10) -> tuple[Player, list[HistoryEntry]]:
        player = await self._people.player_for(person)
        return player, await self._store.matches.history(player.id, limit=limit)

    @boundary
    async def rating_chart(self, player: Player) -> bytes | None:
        """A PNG of the player's rating over their rated games (None before the first)."""
        points = await self._store.ratings.history(player.id)
        if not points:
            return None
        return await asyncio.to_thread(rating_chart, player.display_name, points)

    @boundary
    async def moves(self, match_id: int) -> list[MoveRow]:
        """The stored moves of a match, in order."""
        return await self._store.matches.moves(match_id)

    @boundary
    async def live_match_ids(self) -> list[int]:
        return await self._store.matches.live_ids()

    async def live_channels_in(self, guild_id: int) -> list[int]:
        return await self._store.matches.live_channels_in(guild_id)

    async def live_guilds(self) -> list[int]:
        return await self._store.matches.live_guilds()
