"""The lobby front ends use: one object over its parts, plus training, the listings and closing.

Both front ends (Discord cogs and the local console) call it; it knows nothing of Discord. It owns
the whole life of a match (one transaction a step, the agent's turn scheduled after every commit,
matches taken up again after a restart); the rules: docs/architecture.md, "The lobby owns the
life of a match".
"""

from __future__ import annotations

import asyncio
import logging

from engine.agents import opponents, registry
from lobby.boundary import boundary
from lobby.charts import rating_chart
from lobby.coach import AnalysisReport, Coach, ReplayFiles
from lobby.errors import (
    BadRequest,
    TrainingRefused,
)
from lobby.learning import TrainingJob
from lobby.models import HistoryEntry, LeaderboardEntry, MoveRow, Player, PlayerStats
from lobby.overview import AgentOverview, agents_overview
from lobby.records import TRANSIENT, LobbyConfig, Person, Seat, Snapshot, Where
from lobby.warmup import EngineStatus

__all__ = [
    "TRANSIENT",
    "AnalysisReport",
    "Lobby",
    "LobbyConfig",
    "Person",
    "ReplayFiles",
    "Seat",
    "Snapshot",
    "Where",
]

log = logging.getLogger(__name__)


class Lobby(Coach):
    """The lobby front ends use. Its parts, each over the one before: `lobby.matches` (the
    life of a match), `lobby.turns` (agent turns), `lobby.challenges`, `lobby.clocks`
    (clocks and restarts); here training, the listings and closing."""

    # ------------------------------------------------------------------ training

    def train(
        self,
        game: str,
        agent: str,
        games: int,
        opponent: str | None = None,
        seed: int | None = None,
        *,
        raw_ok: bool = False,
    ) -> TrainingJob:
        """Start training a learning agent's memory in the engine pool (in the background).

        `agent` names one of the bot's own learning opponents and `opponent` (optional) any
        opponent, by name; raw specs only with `raw_ok` (the owner), still checked and
        bounded. The front end checks who may; BadRequest if the agent does not learn, a job
        is already running (one at a time in all) or the numbers are off.
        """
        game = self._game(game)
        raw_ok = raw_ok or self.config.raw_specs
        learner = self._agent_choice(game, agent, raw_ok)
        if not raw_ok and not opponents.may_learn(game, learner.spec):
            learning = [o.name for o in opponents.opponents(game) if o.learns]
            raise BadRequest(f"{agent.strip()} does not learn: train {' or '.join(learning)}")
        opp = None
        if opponent:
            choice = self._agent_choice(game, opponent, raw_ok)
            opp = (choice.spec, choice.budget)
        try:
            return self.learning.start_training(
                self.pool,
                game,
                learner.spec,
                learner.budget,
                games,
                opponent=opp,
                seed=seed,
                label=agent.strip(),
            )
        except (ValueError, TrainingRefused) as exc:
            raise BadRequest(str(exc)) from None

    # ------------------------------------------------------------------ the engine

    def engine_status(self) -> EngineStatus:
        """How far the engine's warm-up is: (ready, total) opponents, the ones left, about how
        many seconds they take; `.note()` is the line for someone starting a game meanwhile."""
        return self.pool.status()

    # ------------------------------------------------------------------ closing

    async def close(self, timeout: float = 5.0) -> None:
        """Stop agent turns (a commit in flight completes or rolls back whole), then apply
        the learning still in the outbox (at most `timeout` s; the rest waits for the next
        start)."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.learning.close(timeout)

    # ------------------------------------------------------------------ boards of honour

    @boundary
    async def leaderboard(
        self, game: str, guild_id: int | None = None, limit: int = 10
    ) -> list[LeaderboardEntry]:
        return await self.store.ratings.leaderboard(
            self._game(game), limit=limit, guild_id=guild_id
        )

    @boundary
    async def agents_overview(self, game: str) -> list[AgentOverview]:
        """Every agent of a game: description, levels, ratings and learned memory."""
        return await agents_overview(self.store, self.learning, self._game(game))

    @boundary
    async def stats(self, person: Person) -> tuple[Player, list[PlayerStats]]:
        player = await self.player_for(person)
        return player, await self.store.ratings.player_stats(player.id)

    @boundary
    async def bot_stats(self, name: str) -> tuple[str, list[PlayerStats]]:
        """The record of one of the bot's players, by level or agent name (`expert`, `Bot
        (expert)`), over every game it plays: (its name as shown, the stats of each game)."""
        label, players = await self._bot_players(name)
        rows = [row for p in players for row in await self.store.ratings.player_stats(p.id)]
        return label, rows

    @boundary
    async def bot_history(self, name: str, limit: int = 10) -> tuple[str, list[HistoryEntry]]:
        """The last ended matches of one of the bot's players (as `bot_stats`), newest first."""
        label, players = await self._bot_players(name)
        rows = [row for p in players for row in await self.store.matches.history(p.id, limit=limit)]
        rows.sort(key=lambda h: (h.match.finished_at or 0.0, h.match.id), reverse=True)
        return label, rows[:limit]

    async def _bot_players(self, name: str) -> tuple[str, list[Player]]:
        text = name.strip()
        if text.casefold().startswith("bot (") and text.endswith(")"):
            text = text[5:-1].strip()
        keys = [f"{game}:{text}" for game in registry.GAMES]
        players = await self.store.players.find_agents(keys)
        if not players:
            raise BadRequest(f"the bot has no player called {name!r} with a finished match yet")
        return players[0].display_name, players

    @boundary
    async def history(self, person: Person, limit: int = 10) -> tuple[Player, list[HistoryEntry]]:
        player = await self.player_for(person)
        return player, await self.store.matches.history(player.id, limit=limit)

    @boundary
    async def rating_chart(self, player: Player) -> bytes | None:
        """A PNG of the player's rating over their rated games (None before the first)."""
        points = await self.store.ratings.history(player.id)
        if not points:
            return None
        return await asyncio.to_thread(rating_chart, player.display_name, points)

    @boundary
    async def moves(self, match_id: int) -> list[MoveRow]:
        """The stored moves of a match, in order."""
        return await self.store.matches.moves(match_id)

    @boundary
    async def live_match_ids(self) -> list[int]:
        return await self.store.matches.live_ids()
