"""Matches in play: each live match's position (cached), its lock, and every step of it as ONE
transaction (a move with its forced passes, a finish with its ratings and learning); a person's
move, a resignation, a stop, an end nobody can see. What comes after a step (the agent's turn)
is the lobby's (`lobby.core`); starting a match is `lobby.starting`'s."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Literal

from db import errors as dberr
from db.matches import AUTO, Deadline
from db.models import Finish, Match, NewMove, Result
from db.store import Store
from engine.games import new_game
from engine.games.base import GameState, IllegalMoveError, Move, NotationError
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.errors import (
    BadMove,
    BadRequest,
    MatchNotFound,
    MatchOver,
    NotInMatch,
    NotYourTurn,
    StaleAction,
)
from lobby.outbox import LEARN
from lobby.people import People
from lobby.ratings import rating_fn
from lobby.records import (
    TRANSIENT,
    Cached,
    LobbyConfig,
    MatchLock,
    Person,
    Seat,
    Snapshot,
    Where,
)


class Matches:
    """The live matches of this process: positions, locks, steps whose answer was lost."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        clock: Callable[[], float],
        people: People,
        announce: Announcer,
        kick_learning: Callable[[], None],
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._people = people
        self._announce = announce
        self._kick_learning = kick_learning  # a finished match left learning in the outbox
        self._locks: dict[int, MatchLock] = {}
        self._states: dict[int, Cached] = {}
        #: Matches whose last write failed in a way that may have stored it (a lost answer to
        #: the commit): what is shown may be older than what is stored until they are re-read.
        self._unsure: set[int] = set()
        self._ended: list[Callable[[int], None]] = []

    def when_ended(self, callback: Callable[[int], None]) -> None:
        """Call `callback(match_id)` whenever a step ends a match (its caches go)."""
        self._ended.append(callback)

    def unsure(self, match_id: int) -> bool:
        """Whether the match's last step may be stored though its answer was lost."""
        return match_id in self._unsure

    def unsure_ids(self) -> list[int]:
        return list(self._unsure)

    def cache(self, match_id: int, cached: Cached) -> None:
        """The position of a match just stored (a new one)."""
        self._states[match_id] = cached

    # ------------------------------------------------------------------ reading

    @boundary
    async def snapshot(self, match_id: int) -> Snapshot:
        match = await self._store.matches.get(match_id)
        if match is None:
            raise MatchNotFound(f"there is no match #{match_id}")
        return await self._snapshot(match)

    async def _snapshot(self, match: Match) -> Snapshot:
        cached = self._states.get(match.id)
        if cached is None or cached.state.ply != match.ply:
            cached = await self._replay(match)
            if cached.state.ply > match.ply:  # a step stored between the two reads: read again
                match = await self._store.matches.get(match.id) or match
            if cached.state.ply != match.ply:  # play on from the wrong ply: never
                raise dberr.CorruptRowError(
                    "matches",
                    f"id={match.id}",
                    "ply",
                    f"says {match.ply} but {cached.state.ply} moves are stored",
                )
            if match.status == "live":
                self._states[match.id] = cached
        seats = await self._people.seats(match)
        return Snapshot(match, cached.state, seats, cached.last_move)

    async def _replay(self, match: Match) -> Cached:
        """Rebuild a match's position from its stored moves (after a restart)."""
        state = new_game(match.game, match.variant)
        last: Move | None = None
        for row in await self._store.matches.moves(match.id):
            try:
                last = state.parse_move(row.move)
                state = state.play(last)
            except (NotationError, IllegalMoveError) as exc:
                raise dberr.CorruptRowError(
                    "moves", f"match {match.id} ply {row.ply}", "move", f"does not replay: {exc}"
                ) from exc
        return Cached(state, last)

    @boundary
    async def live_matches_of(self, person: Person, channel_id: int | None = None) -> list[Match]:
        player = await self._people.known(person)  # asking creates no player
        if player is None:
            return []
        matches = await self._store.matches.live(player.id)
        if channel_id is not None:
            matches = [m for m in matches if m.channel_id == channel_id]
        return matches

    # ------------------------------------------------------------------ moves

    @contextlib.asynccontextmanager
    async def lock(self, match_id: int) -> AsyncIterator[None]:
        """The match's lock; its entry lives only while someone holds or awaits it, so forged
        ids and ended matches leave nothing behind."""
        entry = self._locks.get(match_id)
        if entry is None:
            entry = self._locks[match_id] = MatchLock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(match_id) is entry:
                del self._locks[match_id]

    @boundary
    async def play(
        self,
        match_id: int,
        person: Person,
        move: str | Move,
        expected_ply: int | None = None,
        via: Where | None = None,
    ) -> Snapshot:
        """A person's move: theirs, their turn, legal, match live; stored before returning.

        `via`: where the request came from (a board message): it must be this match's. The
        agent's reply, if an agent is to move next, starts in the background.
        """
        snap = await self.snapshot(match_id)  # no such match: refused before anything else
        check_origin(snap.match, via)
        player = await self._people.known(person)
        if player is None or snap.seat_index(player.id) is None:
            raise NotInMatch(f"match #{match_id} is not yours")
        async with self.lock(match_id):
            snap = await self.snapshot(match_id)
            seat = snap.seat_index(player.id)
            if seat is None:
                raise NotInMatch(f"match #{match_id} is not yours")
            if not snap.live:
                raise MatchOver(f"match #{match_id} is over")
            if expected_ply is not None and expected_ply != snap.match.ply:
                raise StaleAction("that board is out of date; use the latest one")
            if snap.state.to_move() != seat:
                raise NotYourTurn(f"it is {snap.seat_to_move.name}'s turn")
            if isinstance(move, str):
                try:
                    move = snap.state.parse_move(move)
                except NotationError as exc:
                    raise BadMove(str(exc)) from None
            if move not in snap.state.legal_moves():
                try:
                    snap.state.play(move)
                except IllegalMoveError as exc:
                    raise BadMove(str(exc)) from None
                raise BadMove(f"{snap.state.move_to_str(move)} is not legal here")
            snap = await self.commit(snap, [move])
        await self._announce.match(snap)
        return snap

    async def commit(
        self,
        snap: Snapshot,
        moves: list[Move],
        think_ms: int | None = None,
        fallback: str | None = None,
    ) -> Snapshot:
        """Store `moves` (with the forced passes after them) and, if the game ended, its
        finish, ratings and learning, all in ONE transaction. Called with the match lock held.

        `moves` may be empty: then only the forced passes and the finish (a resume mending a
        match a kill interrupted under an older version).
        """
        state, match = snap.state, snap.match
        new: list[NewMove] = []
        for i, move in enumerate(moves):
            pid = snap.seats[state.to_move()].player.id
            new.append(
                NewMove(
                    state.move_to_str(move),
                    pid,
                    think_ms if i == 0 else None,
                    fallback if i == 0 else None,
                )
            )
            state = state.play(move)
        last = moves[-1] if moves else snap.last_move
        while not state.is_over() and only_pass(state):
            only = state.legal_moves()[0]
            new.append(NewMove(state.move_to_str(only), snap.seats[state.to_move()].player.id))
            state = state.play(only)
            last = only
        outcome = state.outcome()
        finish = None
        outbox: list[tuple[str, dict[str, Any]]] = []
        deadline: Deadline = None
        if outcome is not None:
            finish, outbox = self._finish_of(
                match, snap.seats, "finished", result_of(outcome.winner), outcome.termination.value
            )
        elif not snap.seats[state.to_move()].is_agent:
            # AUTO: the store's now at the write plus the turn, so a process stopped between
            # the click and the write still leaves the next person their whole turn
            timed = match.turn_seconds is not None
            deadline = AUTO if timed else self._clock() + self._config.turn_seconds
        try:
            stored = await self._store.matches.commit_step(
                match.id, match.ply, new, turn_deadline=deadline, finish=finish, outbox=outbox
            )
        except TRANSIENT:
            self._unsure.add(match.id)  # it may be stored all the same: re-read before showing
            raise
        except dberr.StaleMoveError:
            raise StaleAction("someone moved first; use the latest board") from None
        except dberr.MatchNotLiveError:
            raise MatchOver(f"match #{match.id} is over") from None
        self._after_commit(stored, Cached(state, last), bool(outbox))
        return Snapshot(stored, state, snap.seats, last)

    def _finish_of(
        self,
        match: Match,
        seats: tuple[Seat, Seat],
        status: Literal["finished", "abandoned"],
        result: Result | None,
        termination: str,
    ) -> tuple[Finish, list[tuple[str, dict[str, Any]]]]:
        """How a match ends: its Finish (with the rating function of a rated result) and the
        outbox row of its learning, if an agent seat learns from it."""
        ratings = None
        if match.rated and result is not None:
            score0 = 0.5 if result == "draw" else (1.0 if result == "0" else 0.0)
            ratings = rating_fn(match.game, match.player0_id, match.player1_id, score0)
        outbox: list[tuple[str, dict[str, Any]]] = []
        learners = [s.spec for s in seats if self._people.may_learn(match.game, s.spec)]
        if status == "finished" and result is not None and learners:
            outbox.append((LEARN, {}))
        return Finish(status, result, termination, ratings), outbox

    def _after_commit(self, match: Match, cached: Cached, learns: bool) -> None:
        self._unsure.discard(match.id)  # the answer came: what follows shows the stored state
        if match.status == "live":
            self._states[match.id] = cached
            return
        # An ended match is read again from the store if anyone asks; its caches go.
        self._states.pop(match.id, None)
        for ended in self._ended:
            ended(match.id)
        if learns:
            self._kick_learning()

    async def finish(
        self,
        snap: Snapshot,
        status: Literal["finished", "abandoned"],
        result: Result | None,
        termination: str,
        expected_ply: int | None = None,
    ) -> Snapshot:
        """End a live match (resignation, time, stop) in one transaction. Lock held."""
        finish, outbox = self._finish_of(snap.match, snap.seats, status, result, termination)
        try:
            stored = await self._store.matches.commit_step(
                snap.id, expected_ply, (), finish=finish, outbox=outbox
            )
        except TRANSIENT:
            self._unsure.add(snap.id)
            raise
        self._after_commit(stored, Cached(snap.state, snap.last_move), bool(outbox))
        return replace(snap, match=stored)

    @boundary
    async def resign(self, match_id: int, person: Person, via: Where | None = None) -> Snapshot:
        check_origin((await self.snapshot(match_id)).match, via)
        player = await self._people.known(person)
        if player is None:
            raise NotInMatch(f"match #{match_id} is not yours")
        async with self.lock(match_id):
            snap = await self.snapshot(match_id)
            seat = snap.seat_index(player.id)
            if seat is None:
                raise NotInMatch(f"match #{match_id} is not yours")
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            try:
                snap = await self.finish(snap, "finished", result_of(1 - seat), "resign")
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match_id} is already over") from None
        await self._announce.match(snap)
        return snap

    @boundary
    async def stop(
        self, match_id: int, termination: str = "stopped", via: Where | None = None
    ) -> Snapshot:
        """Stop a spectated agent match (the front end checks who may)."""
        check_origin((await self.snapshot(match_id)).match, via)
        async with self.lock(match_id):
            snap = await self.snapshot(match_id)
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            if snap.match.kind != "eve":
                raise BadRequest("only bot matches can be stopped; players can resign")
            try:
                snap = await self.finish(snap, "abandoned", None, termination)
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match_id} is already over") from None
        await self._announce.match(snap)
        return snap

    @boundary
    async def abandon(self, match_id: int, termination: str = "unreachable") -> Snapshot:
        """End a live match of any kind unrated, with no result: the front end can no longer
        show it (its board or channel is gone, the bot left the server), which is nobody's
        fault. A match already over is returned as it is."""
        async with self.lock(match_id):
            snap = await self.snapshot(match_id)
            if not snap.live:
                return snap
            try:
                snap = await self.finish(snap, "abandoned", None, termination)
            except dberr.MatchNotLiveError:
                return await self.snapshot(match_id)
        await self._announce.match(snap)
        return snap

    async def converge(self, match_id: int) -> Snapshot:
        """The match as stored, after a write whose answer was lost: a person to move gets
        at least the resume grace from now (their board did not show their turn), and the
        match is no longer unsure. The caller shows the snapshot."""
        async with self.lock(match_id):
            self._states.pop(match_id, None)  # the cache may hold the state before the write
            snap = await self.snapshot(match_id)
            grace_until = self._clock() + self._config.resume_grace
            deadline = snap.match.turn_deadline
            if (
                snap.live
                and not snap.seat_to_move.is_agent
                and deadline is not None
                and deadline < grace_until
            ):
                snap = replace(
                    snap, match=await self._store.matches.set_turn_deadline(match_id, grace_until)
                )
            self._unsure.discard(match_id)
            return snap


def check_origin(match: Match, via: Where | None) -> None:
    """A component belongs to its match's message and server: a click relayed from any other
    message (a forged custom id) is refused."""
    if via is None:
        return
    other_message = via.message_id is not None and match.message_id is not None
    if (other_message and via.message_id != match.message_id) or (
        match.guild_id is not None and via.guild_id != match.guild_id
    ):
        raise BadRequest(f"that is not the board of match #{match.id}")


def result_of(winner: int | None) -> Result:
    if winner is None:
        return "draw"
    return "0" if winner == 0 else "1"


def only_pass(state: GameState) -> bool:
    moves = state.legal_moves()
    return len(moves) == 1 and state.move_to_str(moves[0]) == "pass"
