"""Challenges between people: sent within limits, answered once (accepting starts the match in
the same transaction), expired by the clock."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Literal

from db import errors as dberr
from db.store import Store
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.errors import BadRequest, ChallengeOver, LimitReached, NotInMatch
from lobby.models import Challenge
from lobby.people import People
from lobby.records import LobbyConfig, Person, Snapshot, Where
from lobby.starting import Starts, offer_named


class Challenges:
    """The lobby's challenges. Accepting one starts a match between people: no agent turn to
    start after it."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        clock: Callable[[], float],
        people: People,
        starts: Starts,
        announce: Announcer,
        config_at: Callable[[Where], Awaitable[LobbyConfig]] | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._people = people
        self._starts = starts
        self._announce = announce
        #: The settings where a challenge is made: the limits of its server.
        self._config_at = config_at

    @boundary
    async def challenge(
        self, challenger: Person, opponent: Person, game: str, where: Where = Where()
    ) -> Challenge:
        """A challenge from one person to another, expiring after `challenge_seconds`;
        refused past the limits (pending challenges per person, a pause per pair). The
        challenge keeps the offer's key (a game, or a variant of one)."""
        game = offer_named(game).key
        if challenger.kind == opponent.kind and challenger.ident == opponent.ident:
            raise BadRequest("you cannot challenge yourself")
        now = self._clock()
        a, b = await self._people.known(challenger), await self._people.known(opponent)
        if a is not None and b is not None and challenger.kind == "user":
            last = await self._store.challenges.last_between(a.id, b.id)
            if last is not None and last.status == "withdrawn" and last.message_id is None:
                last = None  # never shown (its message failed): it asked nobody anything
            wait = 0.0 if last is None else last.created_at + self._config.challenge_cooldown - now
            if wait > 0:
                raise LimitReached(
                    f"you challenged {opponent.name} a moment ago: you can challenge them "
                    f"again in {math.ceil(wait)} s"
                )
        config = self._config if self._config_at is None else await self._config_at(where)
        cap = config.max_pending_challenges
        if (
            a is not None
            and cap is not None
            and challenger.kind == "user"
            and len(await self._store.challenges.pending(challenger_id=a.id)) >= cap
        ):
            raise LimitReached(
                f"you have {cap} challenges waiting for an answer (the limit): wait until "
                "one is answered or expires"
            )
        a, b = await self._people.player_for(challenger), await self._people.player_for(opponent)
        return await self._store.challenges.add(
            game,
            a.id,
            b.id,
            now + self._config.challenge_seconds,
            guild_id=where.guild_id,
            channel_id=where.channel_id,
        )

    @boundary
    async def get_challenge(self, challenge_id: int) -> Challenge | None:
        return await self._store.challenges.get(challenge_id)

    @boundary
    async def challenge_shown(self, challenge_id: int, message_id: int) -> None:
        """The message that shows a challenge (its buttons; greyed when it expires)."""
        await self._store.challenges.set_message(challenge_id, message_id)

    @boundary
    async def answer_challenge(
        self, challenge_id: int, person: Person, accept: bool, where: Where = Where()
    ) -> tuple[Challenge, Snapshot | None]:
        """Accept (the challenged person: the match starts, the challenger moves first),
        decline (the challenged) or withdraw (the challenger); one answer wins, every other
        click is told how it was answered."""
        found = await self._store.challenges.get(challenge_id)
        if found is None:
            raise BadRequest("there is no such challenge")
        check_origin_challenge(found, where)
        player = await self._people.known(person)
        ids = (found.challenger_id, found.opponent_id)
        if player is None or player.id not in ids:
            raise NotInMatch("this challenge is not for you")
        seat = ids.index(player.id)
        if found.status != "pending" or found.expires_at <= self._clock():
            raise ChallengeOver(challenge_state(found, self._clock()))
        if not accept:
            status: Literal["declined", "withdrawn"] = "withdrawn" if seat == 0 else "declined"
            try:
                return await self._store.challenges.close(challenge_id, status), None
            except dberr.ChallengeClosedError as exc:
                raise ChallengeOver(f"this challenge was already {exc.status}") from None
        if seat != 1:
            raise NotInMatch("only the challenged player can accept")
        challenger = (await self._store.players.get_many([found.challenger_id]))[
            found.challenger_id
        ]
        if challenger.discord_id is not None:
            first = Person("user", challenger.discord_id, challenger.display_name)
        else:
            first = Person("local", str(challenger.local_name), challenger.display_name)
        place = Where(where.guild_id, where.channel_id, where.message_id or found.message_id)
        try:
            snap = await self._starts.start_pvp(
                first, person, found.game, place, accepts=challenge_id
            )
        except dberr.ChallengeClosedError as exc:
            raise ChallengeOver(f"this challenge was already {exc.status}") from None
        answered = await self._store.challenges.get(challenge_id)
        assert answered is not None
        return answered, snap

    @boundary
    async def expire_challenges(self) -> list[Challenge]:
        """Expire every challenge whose time is up and announce each (greyed out)."""
        expired = await self._store.challenges.expire(self._clock())
        for challenge in expired:
            await self._announce.challenge(challenge)
        return expired


def check_origin_challenge(challenge: Challenge, via: Where) -> None:
    other_message = via.message_id is not None and challenge.message_id is not None
    if (other_message and via.message_id != challenge.message_id) or (
        challenge.guild_id is not None and via.guild_id != challenge.guild_id
    ):
        raise BadRequest("that is not this challenge's message")


def challenge_state(challenge: Challenge, now: float) -> str:
    if challenge.status == "pending" and challenge.expires_at <= now:
        return "this challenge has expired"
    return f"this challenge was already {challenge.status}"
