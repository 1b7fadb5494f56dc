"""Tournaments, as front ends ask for them: create one in a channel, join or enter an agent,
leave (forfeiting the games left), start, cancel, see the standings; taken up again after a
restart, and swept by the clock (scheduled starts, steps a busy database postponed).

Front ends call this part directly (`lobby.tournaments`); every request is a `boundary`.
A channel has at most one open or running tournament; a server at most
`LobbyConfig.max_tournaments`, each of at most `LobbyConfig.max_tournament_players`
entrants. The rounds themselves are `lobby.tournament_rounds`'; the pairing rules are
`lobby.pairing`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import cast

from db import errors as dberr
from db.models import Player
from db.store import Store
from db.tournaments import Tournament
from lobby.boundary import boundary, front_end
from lobby.errors import BadRequest, LimitReached, LobbyError
from lobby.matches import Matches
from lobby.pairing import FORMATS, Format, planned_rounds
from lobby.people import People
from lobby.records import TRANSIENT, LobbyConfig, Person, Where
from lobby.settings import Settings
from lobby.starting import Starts, offer_named
from lobby.tasks import Tasks
from lobby.tournament_rounds import (
    BoardMaker,
    Rounds,
    TournamentListener,
    TournamentNews,
    TournamentView,
)
from lobby.turns import Turns

log = logging.getLogger(__name__)

#: Swiss rounds one may ask for; a person's clock per move (seconds); a scheduled start
#: (minutes from now).
MAX_ROUNDS = 12
MIN_CLOCK, MAX_CLOCK = 30.0, 86400.0
MAX_START_MINUTES = 7 * 24 * 60
#: Seconds between the clock's sweeps of running tournaments (scheduled starts, postponed
#: steps); every `FULL_SWEEP`th sweep looks at every running tournament.
SWEEP_SECONDS = 5.0
FULL_SWEEP = 12


class TournamentClosed(LobbyError):
    """A tournament that cannot take this request (started, over, full, ...)."""


class Tournaments:
    """Tournaments of every server (the module's docstring)."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        clock: Callable[[], float],
        people: People,
        settings: Settings,
        starts: Starts,
        matches: Matches,
        turns: Turns,
        tasks: Tasks,
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._people = people
        self._settings = settings
        self._matches = matches
        self._tasks = tasks
        #: Front ends listen to every change of a tournament (its standings, new boards).
        self.listeners: list[TournamentListener] = []
        self.rounds = Rounds(store, starts, matches, turns, tasks.spawn)
        self.rounds.on_news = self._announce

    def show_boards(self, maker: BoardMaker) -> None:
        """The front end makes each game's message before its match is stored (`BoardMaker`)."""
        self.rounds.show = maker

    async def _announce(self, news: TournamentNews) -> None:
        for listener in list(self.listeners):
            try:
                with front_end():
                    await listener(news)
            except Exception:
                log.exception("a tournament listener failed")

    # ------------------------------------------------------------------ finding one

    async def _here(self, where: Where) -> Tournament:
        """The open or running tournament of this channel."""
        found = await self._in_channel(where)
        if found is None:
            raise BadRequest(
                "there is no tournament in this channel: /tournament create starts one"
            )
        return found

    async def _in_channel(self, where: Where) -> Tournament | None:
        for t in await self._store.tournaments.active(where.guild_id):
            if t.guild_id == where.guild_id and t.channel_id == where.channel_id:
                return t
        return None

    async def _may_run(self, t: Tournament, by: Person, admin: bool) -> None:
        """The creator, or (the front end says) someone who manages the server."""
        player = await self._people.known(by)
        if not admin and (player is None or player.id != t.creator_id):
            raise BadRequest("only the tournament's creator or a server manager can do that")

    # ------------------------------------------------------------------ requests

    @boundary
    async def create(
        self,
        by: Person,
        where: Where,
        game: str,
        fmt: str,
        rounds: int | None = None,
        clock: float | None = None,
        start_minutes: float | None = None,
    ) -> TournamentView:
        """A new tournament in this channel, open for entrants. `rounds`: Swiss only (by
        default enough for one winner); `clock`: a person's seconds per move (the server's
        by default); `start_minutes`: it starts by itself then (else on /tournament start)."""
        if where.guild_id is None:
            raise BadRequest("tournaments are held in a server's channels")
        if fmt not in FORMATS:
            raise BadRequest(f"format must be one of {', '.join(FORMATS)}")
        # The types too: a forged request can carry any value where a number goes.
        if rounds is not None and (
            fmt != "swiss" or type(rounds) is not int or not 1 <= rounds <= MAX_ROUNDS
        ):
            raise BadRequest(f"rounds: 1 to {MAX_ROUNDS}, for a Swiss tournament only")
        if clock is not None and not (_number(clock) and MIN_CLOCK <= clock <= MAX_CLOCK):
            raise BadRequest(f"clock: {MIN_CLOCK:g} to {MAX_CLOCK:g} seconds a move")
        if start_minutes is not None and not (
            _number(start_minutes) and 1 <= start_minutes <= MAX_START_MINUTES
        ):
            raise BadRequest(f"start: 1 to {MAX_START_MINUTES} minutes from now")
        game = offer_named(game).key  # stored by its key, not an alias
        await self._settings.check_start(where, game)
        if await self._in_channel(where) is not None:
            raise BadRequest("this channel has a tournament already: one at a time")
        cap = self._config.max_tournaments
        if (
            where.guild_id is not None
            and len(await self._store.tournaments.active(where.guild_id)) >= cap
        ):
            raise LimitReached(f"this server already has {cap} tournaments (the limit)")
        creator = await self._people.player_for(by)
        starts_at = None if start_minutes is None else self._clock() + 60 * start_minutes
        t = await self._store.tournaments.create(
            guild_id=where.guild_id,
            channel_id=where.channel_id,
            game=game,
            format=fmt,
            rounds=rounds,
            turn_seconds=clock,
            starts_at=starts_at,
            creator_id=creator.id,
        )
        log.info("tournament %s created by %s: %s %s", t.id, by.name, fmt, game)
        return await self.rounds.view(t.id)

    @boundary
    async def join(self, person: Person, where: Where) -> TournamentView:
        """The person enters this channel's tournament (before it starts)."""
        t = await self._here(where)
        _still_open(t)
        await self._has_room(t, await self._people.known(person))
        player = await self._people.player_for(person)
        await self._join(t, player.id, None)
        return await self._changed(t.id)

    @boundary
    async def enter(self, name: str, where: Where, by: Person, admin: bool) -> TournamentView:
        """One of the bot's players, by name (a level, or an agent such as a learning one),
        enters this channel's tournament: the creator's or a server manager's to do."""
        t = await self._here(where)
        await self._may_run(t, by, admin)
        await self._settings.check_start(where, t.game, [name])
        game = offer_named(t.game).game
        choice = self._people.agent_choice(game, name, self._config.raw_specs)
        _still_open(t)
        await self._has_room(t, None)
        seat = await self._people.agent_seat(choice)
        await self._join(t, seat.player.id, name.strip())
        return await self._changed(t.id)

    async def _has_room(self, t: Tournament, known: Player | None) -> None:
        """Refuse a full tournament before anything is stored for the one who would enter (a
        refusal changes nothing); the store checks again as it enters them."""
        most = self._config.max_tournament_players
        ids = [e.player_id for e in await self._store.tournaments.entrants(t.id)]
        if len(ids) >= most and (known is None or known.id not in ids):
            raise TournamentClosed(_closed("full", most))

    async def _join(self, t: Tournament, player_id: int, opponent: str | None) -> None:
        most = self._config.max_tournament_players
        try:
            await self._store.tournaments.join(t.id, player_id, opponent, most)
        except dberr.TournamentClosedError as exc:
            raise TournamentClosed(_closed(exc.why, most)) from None

    @boundary
    async def leave(self, person: Person, where: Where) -> TournamentView:
        """The person leaves this channel's tournament: before the start their entry goes;
        after it they forfeit the game they play and every game left."""
        t = await self._here(where)
        player = await self._people.known(person)
        try:
            out = player is not None and await self._store.tournaments.leave(t.id, player.id)
        except dberr.TournamentClosedError as exc:
            raise TournamentClosed(_closed(exc.why, 0)) from None
        if not out or player is None:
            raise BadRequest("you are not in this tournament")
        if t.status == "running":
            for g in await self._store.tournaments.games(t.id):
                if (
                    g.match_id is not None
                    and g.outcome is None
                    and player.id in (g.first_id, g.second_id)
                ):
                    with contextlib.suppress(LobbyError):  # it ended meanwhile
                        await self.rounds.forfeit(g.match_id, player.id)
            await self.rounds.step(t.id)
        return await self._changed(t.id)

    @boundary
    async def start(self, where: Where, by: Person, admin: bool) -> TournamentView:
        """Start this channel's tournament: its first round's games begin."""
        t = await self._here(where)
        await self._may_run(t, by, admin)
        await self._start(t)
        return await self.rounds.view(t.id)

    async def _start(self, t: Tournament) -> None:
        entrants = await self._store.tournaments.entrants(t.id)
        if len(entrants) < 2:
            raise BadRequest("a tournament needs at least 2 players to start")
        rounds = planned_rounds(cast(Format, t.format), len(entrants), t.rounds)
        try:
            await self._store.tournaments.start(t.id, rounds)
        except dberr.TournamentClosedError as exc:
            raise TournamentClosed(_closed(exc.why, 0)) from None
        log.info("tournament %s started: %d players, %d rounds", t.id, len(entrants), rounds)
        await self.rounds.step(t.id)

    @boundary
    async def cancel(self, where: Where, by: Person, admin: bool) -> TournamentView:
        """Cancel this channel's tournament: its live games end unrated, nobody wins."""
        t = await self._here(where)
        await self._may_run(t, by, admin)
        await self._cancel(t)
        return await self._changed(t.id)

    async def _cancel(self, t: Tournament) -> None:
        async with self.rounds.lock(t.id):
            await self._store.tournaments.end(t.id, "cancelled", None)
        for g in await self._store.tournaments.games(t.id):
            if g.match_id is not None and g.outcome is None:
                with contextlib.suppress(LobbyError):
                    await self._matches.abandon(g.match_id, "stopped")
        log.info("tournament %s cancelled", t.id)

    @boundary
    async def standings(self, where: Where) -> TournamentView:
        """This channel's tournament as it stands."""
        return await self.rounds.view((await self._here(where)).id)

    @boundary
    async def view(self, tournament_id: int) -> TournamentView:
        return await self.rounds.view(tournament_id)

    @boundary
    async def shown(self, tournament_id: int, message_id: int) -> None:
        """The message that shows a tournament's standings (edited at every change)."""
        await self._store.tournaments.set_message(tournament_id, message_id)

    @boundary
    async def announced(self, tournament_id: int) -> None:
        """A front end announced the end of a tournament (a restart need not again)."""
        try:
            await self._store.tournaments.announced(tournament_id)
        except TRANSIENT as exc:
            log.warning("tournament %s: cannot note its end is announced: %s", tournament_id, exc)

    async def _changed(self, tournament_id: int) -> TournamentView:
        """Announce a tournament's new state (an entrant came or went, it was cancelled)."""
        view = await self.rounds.view(tournament_id)
        await self._announce(TournamentNews(view))
        return view

    # ------------------------------------------------------------------ restarts and the clock

    @boundary
    async def resume(self) -> None:
        """After a restart: every running tournament goes on from where the store has it
        (games a kill left unstarted start, rounds a kill left unpaired are paired, live
        games without a board are shown), and ends nobody announced are announced."""
        for t in await self._store.tournaments.active():
            if t.status != "running":
                continue
            try:
                news = await self.rounds.advance(t.id, show_all=True)
            except TRANSIENT as exc:
                self.rounds.pending.add(t.id)
                log.warning("tournament %s not resumed yet: %s", t.id, exc)
                continue
            except Exception:
                log.exception("tournament %s cannot be resumed", t.id)
                continue
            if news is not None:
                await self._announce(news)
        for t in await self._store.tournaments.unannounced():
            await self._announce(TournamentNews(await self.rounds.view(t.id)))

    async def sweep(self, everything: bool = False) -> None:
        """One pass of the clock's: start tournaments whose time came (cancelled if fewer
        than 2 joined), and take up the steps a busy database postponed (`everything`:
        every running tournament)."""
        now = self._clock()
        for t in await self._store.tournaments.active():
            if t.status == "open" and t.starts_at is not None and t.starts_at <= now:
                try:
                    await self._start(t)
                except BadRequest:
                    await self._cancel(t)
                await self._announce(TournamentNews(await self.rounds.view(t.id)))
            elif t.status == "running" and (everything or t.id in self.rounds.pending):
                await self.rounds.step(t.id)

    async def run(self, interval: float = SWEEP_SECONDS) -> None:
        """Sweep forever (the bot's clock starts it beside its own)."""
        passes = 0
        while not self._tasks.closing:
            await asyncio.sleep(interval)
            passes += 1
            try:
                await self.sweep(everything=passes % FULL_SWEEP == 0)
            except TRANSIENT as exc:
                log.warning("tournaments: sweep postponed: %s", exc)
            except Exception:
                log.exception("tournaments: sweep failed")


def _still_open(t: Tournament) -> None:
    """Refuse a tournament that started before a request to join it stores anything (a new
    player); the store checks again as it writes the entry."""
    if t.status != "open":
        raise TournamentClosed(_closed(t.status, 0))


def _number(value: object) -> bool:
    """A finite int or float (not a bool, a string or anything else)."""
    return type(value) in (int, float) and math.isfinite(cast(float, value))


def _closed(why: str, most: int) -> str:
    return {
        "running": "that tournament has started: joining and leaving are closed",
        "finished": "that tournament is over",
        "cancelled": "that tournament was cancelled",
        "full": f"that tournament is full ({most} players, the limit)",
        "joined": "already in that tournament",
        "open": "that tournament has not started",
    }.get(why, "there is no such tournament")
