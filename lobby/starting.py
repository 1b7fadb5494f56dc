"""Starting matches: who plays whom (a person against an opponent, two people, two agents for
spectators), within the limits on what a member may have running, each stored with the message
that shows it. The match's life after that is `lobby.matches`'."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from db.matches import AUTO, Deadline
from db.store import Store
from engine.agents import registry
from engine.agents.base import Budget
from engine.games import new_game
from engine.games.catalog import Offer, offer
from lobby.boundary import boundary
from lobby.errors import BadRequest, LimitReached
from lobby.matches import Matches
from lobby.people import People
from lobby.records import Cached, LobbyConfig, Person, Seat, Snapshot, Where


@dataclass(frozen=True, slots=True)
class Table:
    """A match a tournament starts (`lobby.tournaments`): its mark in the match's options and
    its clock. The limits on what a member may start do not apply: the tournament started it."""

    mark: Mapping[str, Any]
    turn_seconds: float | None = None


class Starts:
    """New matches. The agent's turn of a new match in which an agent moves first is the
    caller's to start (`lobby.core`)."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        clock: Callable[[], float],
        rng: random.Random,
        people: People,
        matches: Matches,
        config_at: Callable[[Where], Awaitable[LobbyConfig]] | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._rng = rng
        self._people = people
        self._matches = matches
        #: The settings where a match starts: the clock and limits of its server.
        self._config_at = config_at

    @boundary
    async def start_pve(
        self,
        person: Person,
        game: str,
        level: str,
        first: str = "me",
        where: Where = Where(),
        *,
        raw_ok: bool = False,
        table: Table | None = None,
    ) -> Snapshot:
        """A person against an opponent: a level or a curated agent by name (any agent spec
        with `raw_ok`). `game`: one of the offers (a game, or a variant of one)."""
        chosen = offer_named(game)
        if first not in ("me", "bot", "random"):
            raise BadRequest("first must be me, bot or random")
        choice = self._people.agent_choice(chosen.game, level, raw_ok)
        config = await self._config_for(where, table)
        if table is None:
            await self._limit_bot_games(person, config)
        human = Seat(await self._people.player_for(person))
        bot = await self._people.agent_seat(choice)
        if first == "random":
            first = self._rng.choice(["me", "bot"])
        seats = (human, bot) if first == "me" else (bot, human)
        extra = None if table is None else dict(table.mark)
        return await self._create(chosen, "pve", seats, where, True, extra, config=config)

    @boundary
    async def start_pvp(
        self,
        first: Person,
        second: Person,
        game: str,
        where: Where = Where(),
        *,
        accepts: int | None = None,
        table: Table | None = None,
    ) -> Snapshot:
        """Two people; `first` moves first (the front end decides who, e.g. the challenger).
        `accepts`: the challenge this match answers (accepted in the same transaction)."""
        chosen = offer_named(game)
        if first.kind == second.kind and first.ident == second.ident:
            raise BadRequest("you cannot challenge yourself")
        a, b = await self._people.player_for(first), await self._people.player_for(second)
        rated = await self._pair_may_be_rated(a.id, b.id)
        seats = (Seat(a), Seat(b))
        config = await self._config_for(where, table)
        extra = None if table is None else dict(table.mark)
        return await self._create(chosen, "pvp", seats, where, rated, extra, accepts, config)

    @boundary
    async def start_eve(
        self,
        game: str,
        first: str,
        second: str,
        where: Where = Where(),
        delay: float | None = None,
        starter: Person | None = None,
        *,
        raw_ok: bool = False,
        table: Table | None = None,
    ) -> Snapshot:
        """Two agents, for spectators. Unrated unless the config says otherwise."""
        chosen = offer_named(game)
        delay = self._config.botmatch_delay if delay is None else delay
        if not (math.isfinite(delay) and 0 <= delay <= 60):
            raise BadRequest("delay must be between 0 and 60 seconds")
        choices = [self._people.agent_choice(chosen.game, text, raw_ok) for text in (first, second)]
        config = await self._config_for(where, table)
        if table is None:
            await self._limit_botmatches(starter, where, config)
        seats = (
            await self._people.agent_seat(choices[0]),
            await self._people.agent_seat(choices[1]),
        )
        rated = self._config.rate_botmatches and seats[0].player.id != seats[1].player.id
        extra: dict[str, Any] = {"delay": delay, **(table.mark if table is not None else {})}
        if starter is not None:
            extra["starter"] = {"kind": starter.kind, "ident": starter.ident}
        return await self._create(
            chosen, "eve", seats, where, rated=rated, extra=extra, config=config
        )

    # ------------------------------------------------------------------ limits

    async def _config_for(self, where: Where, table: Table | None = None) -> LobbyConfig:
        config = self._config if self._config_at is None else await self._config_at(where)
        if table is not None and table.turn_seconds is not None:  # the tournament's clock
            config = dataclasses.replace(config, turn_seconds=table.turn_seconds)
        return config

    async def _limit_bot_games(self, person: Person, config: LobbyConfig) -> None:
        cap = config.max_bot_games
        if cap is None or person.kind != "user":
            return
        player = await self._people.known(person)
        if (
            player is not None
            and await self._store.matches.count_live("pve", player_id=player.id) >= cap
        ):
            raise LimitReached(
                f"you already have {cap} games against the bot in progress (the limit): "
                "finish or resign one, then start another"
            )

    async def _limit_botmatches(
        self, starter: Person | None, where: Where, config: LobbyConfig
    ) -> None:
        if starter is None or starter.kind != "user":
            return
        cap = config.max_botmatches
        if (
            cap is not None
            and await self._store.matches.count_live("eve", starter=starter.ident) >= cap
        ):
            raise LimitReached(
                f"you already have {cap} bot matches running (the limit): stop one or wait "
                "until one ends"
            )
        cap = config.max_guild_botmatches
        guild = where.guild_id if isinstance(where, Where) else None
        if (
            cap is not None
            and guild is not None
            and (await self._store.matches.count_live("eve", guild_id=guild) >= cap)
        ):
            raise LimitReached(
                f"this server already has {cap} bot matches running (the limit): try "
                "again when one ends"
            )

    async def _create(
        self,
        chosen: Offer,
        kind: Literal["pve", "pvp", "eve"],
        seats: tuple[Seat, Seat],
        where: Where,
        rated: bool,
        extra: dict[str, Any] | None = None,
        accepts: int | None = None,
        config: LobbyConfig | None = None,
    ) -> Snapshot:
        """Store a new match (with the message that shows it, if the front end has one
        already). The agent's turn, if an agent moves first, is the caller's to start."""
        game = chosen.game
        state = new_game(game, chosen.variant)
        if where.show is not None:  # the request is valid: the front end may show it now
            where = Where(where.guild_id, where.channel_id, await where.show())
        options: dict[str, Any] = {"seats": [seat_options(s) for s in seats], **(extra or {})}
        turn_seconds = (config or self._config).turn_seconds  # the server's clock
        # AUTO: from the store's now at the write (a stop before it does not shorten the turn)
        deadline: Deadline = None if seats[0].is_agent else AUTO
        match = await self._store.matches.create(
            game,
            kind,
            seats[0].player.id,
            seats[1].player.id,
            variant=state.variant,
            rated=rated,
            guild_id=where.guild_id,
            channel_id=where.channel_id,
            message_id=where.message_id,
            turn_seconds=turn_seconds,
            turn_deadline=deadline,
            options=options,
            accepts=accepts,
        )
        self._matches.cache(match.id, Cached(state, None))
        return Snapshot(match, state, seats)

    async def _pair_may_be_rated(self, a: int, b: int) -> bool:
        since = self._clock() - 86400
        played = await self._store.matches.count_rated_between(a, b, since)
        return played < self._config.pair_daily_rated_cap

    @boundary
    async def attach_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int
    ) -> None:
        """Remember which message shows the match, so later moves can edit it."""
        await self._store.matches.set_message(match_id, guild_id, channel_id, message_id)


def game_named(game: str) -> str:
    """A game by its name; BadRequest for any other."""
    if game not in registry.GAMES:
        raise BadRequest(f"unknown game {game!r}: choose one of {', '.join(registry.GAMES)}")
    return game


def offer_named(text: str) -> Offer:
    """One of the offers (a game, or a variant of one) by its key; BadRequest for any other."""
    try:
        return offer(text)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def seat_options(seat: Seat) -> dict[str, Any] | None:
    if seat.spec is None:
        return None
    budget = seat.budget or Budget()
    return {
        "agent": seat.spec.name,
        "params": dict(seat.spec.params),
        "budget": {k: getattr(budget, k) for k in ("time", "nodes", "depth")},
        "level": seat.level,
    }
