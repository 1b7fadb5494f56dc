"""Keeps every board message showing its match's stored state.

The lobby announces every committed change here. A click's response shows it when it can;
everything else is edited in with the bot token through the channel (waiting for a response in
flight, coalesced, paced per board, channel and bot; never again on a board gone 403/404, whose
match then ends unrated), so a committed move is never hidden by a failed or slow response. The
rules and the Discord limits behind them: docs/architecture.md, "Keeping boards current: the
editor" and "Discord limits".
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import discord

from cogs.render import board_message
from lobby.core import Lobby, Snapshot
from lobby.errors import LobbyError

log = logging.getLogger(__name__)

#: Pauses before retrying an edit that failed with a 5xx or a rate limit.
RETRY_PAUSES = (1.0, 2.0, 5.0, 15.0, 30.0)


def _moment(snap: Snapshot) -> tuple[int, bool, int]:
    """How far a snapshot is in its match (a finish beats a move at the same ply, and a hint,
    which changes the footer, beats the board before it)."""
    return (snap.match.ply, not snap.live, int(snap.match.options.get("hints") or 0))


class Bucket:
    """A token bucket: `rate` requests a second on average, bursts of `burst`. Waiters are
    served in order, urgent ones first: a board a person waits for is not stuck behind the
    old ends a restart re-shows."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()
        self._queue: list[tuple[int, int]] = []  # (0 urgent / 1 not, arrival): a heap
        self._arrivals = itertools.count()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, urgent: bool = True) -> None:
        me = (0 if urgent else 1, next(self._arrivals))
        heapq.heappush(self._queue, me)
        try:
            while True:
                self._refill()
                if self._queue[0] == me and self.tokens >= 1:
                    heapq.heappop(self._queue)
                    self.tokens -= 1
                    return
                # the first in line sleeps until its token; the others look again soon
                first = self._queue[0] == me
                await asyncio.sleep((1 - self.tokens) / self.rate if first else 0.05)
        except BaseException:
            if me in self._queue:
                self._queue.remove(me)
                heapq.heapify(self._queue)
            raise


@dataclass(slots=True)
class _Board:
    channel_id: int
    message_id: int
    kind: str
    guild_id: int | None = None
    shown: tuple[int, bool, int] | None = None  # the moment the message is known to show
    latest: Snapshot | None = None  # the newest snapshot seen from any source
    force: bool = False  # edit `latest` even if `shown` says it is there (order unknown)
    editing: bool = False
    dead: bool = False
    last_edit: float = 0.0
    task: asyncio.Task[None] | None = None
    #: first seen ended (a restart showing an old end again): its edits go after the others
    old_end: bool = False

    def behind(self) -> bool:
        """Whether the message may not show the newest snapshot."""
        if self.latest is None:
            return False
        return self.force or self.shown is None or _moment(self.latest) > self.shown


class Shown:
    """Handed to a response: call it with the snapshot the response did show."""

    def __init__(self, editor: BoardEditor) -> None:
        self._editor = editor

    def __call__(self, snap: Snapshot) -> None:
        self._editor._mark_shown(snap)


@dataclass(slots=True)
class BoardEditor:
    #: The Discord client whose token edits the boards, and the lobby whose matches they show.
    client: discord.Client
    lobby: Lobby
    spectate_interval: float = 1.0  # bot matches: about one edit per second per board
    play_interval: float = 0.25  # people's matches move at human pace; keep them snappy
    #: Edits a second per channel (bursts of 5) and for the whole bot; None: unpaced (tests).
    channel_rate: float | None = 1.0
    global_rate: float | None = 25.0
    _boards: dict[int, _Board] = field(default_factory=dict)
    _responding: dict[int, int] = field(default_factory=dict)  # match id -> responses in flight
    _channels: dict[int, Bucket] = field(default_factory=dict)
    _global: Bucket | None = None
    #: Guilds the bot left and channels deleted: their boards are never edited again.
    _gone_guilds: set[int] = field(default_factory=set)
    _gone_channels: set[int] = field(default_factory=set)
    #: Counters for tests and the chaos run: edits sent, failed, boards given up.
    edits: int = 0
    failures: int = 0
    dead_boards: int = 0

    # ------------------------------------------------------------------ inputs

    async def submit(self, snap: Snapshot) -> None:
        """A committed change (the lobby's listener): edit it in unless a response shows it."""
        slot = self._slot(snap)
        if slot is None:
            return
        if slot.dead:
            if not snap.live:  # nothing can show this end: no restart tries again
                self._final_shown(snap)
                self._forget(snap.id)
            else:  # a board nothing can show (started where the bot lost access): it ends
                self.lobby.spawn(self._board_gone(snap))
            return
        if slot.latest is None or _moment(snap) >= _moment(slot.latest):
            slot.latest = snap
        self._kick(snap.id, slot)

    @contextlib.asynccontextmanager
    async def responding(self, match_id: int) -> AsyncIterator[Shown]:
        """Around an interaction response that shows a match: edits of it wait until the
        response is done; then whatever it did not show is edited in."""
        self._responding[match_id] = self._responding.get(match_id, 0) + 1
        try:
            yield Shown(self)
        finally:
            left = self._responding[match_id] - 1
            if left:
                self._responding[match_id] = left
            else:
                del self._responding[match_id]
            slot = self._boards.get(match_id)
            if slot is not None:
                self._kick(match_id, slot)

    def _mark_shown(self, snap: Snapshot) -> None:
        slot = self._slot(snap)
        if slot is None:
            return
        # Edits wait while a response is sent, so the response landed last: the board shows
        # exactly this (unless an edit was already in flight: then the order is unknown).
        slot.shown = _moment(snap)
        if slot.latest is None or _moment(snap) >= _moment(slot.latest):
            slot.latest = snap
        if slot.editing:
            slot.force = True
        elif not snap.live:
            self._final_shown(snap)

    # ------------------------------------------------------------------ the edit loop

    def gone(self, *, guild_id: int | None = None, channel_id: int | None = None) -> None:
        """The bot left a guild, or a channel was deleted: no board there is edited again
        (each edit would be one more invalid request counted against the bot)."""
        for where, ident in ((self._gone_guilds, guild_id), (self._gone_channels, channel_id)):
            if ident is not None:
                if len(where) >= 10_000:  # bounded: a long-running bot sees many come and go
                    where.clear()
                where.add(ident)
        for slot in self._boards.values():
            if self._is_gone(slot.guild_id, slot.channel_id):
                slot.dead = True

    def _is_gone(self, guild_id: int | None, channel_id: int) -> bool:
        return channel_id in self._gone_channels or guild_id in self._gone_guilds

    def _slot(self, snap: Snapshot) -> _Board | None:
        m = snap.match
        slot = self._boards.get(m.id)
        if slot is None:
            if m.message_id is None or m.channel_id is None:
                return None
            slot = self._boards[m.id] = _Board(
                m.channel_id,
                m.message_id,
                m.kind,
                guild_id=m.guild_id,
                old_end=m.status != "live",
                dead=self._is_gone(m.guild_id, m.channel_id),
            )
        elif m.message_id is not None and m.message_id != slot.message_id:
            slot.message_id, slot.shown, slot.dead = m.message_id, None, False  # a new board
        return slot

    def _kick(self, match_id: int, slot: _Board) -> None:
        if match_id in self._responding or slot.dead:
            return
        if not slot.behind():
            if slot.shown is not None and slot.shown[1] and not slot.editing:
                self._forget(match_id)  # the final board is shown: nothing more to edit
            return
        if slot.task is None or slot.task.done():
            slot.task = asyncio.create_task(self._flush(match_id, slot))

    async def _flush(self, match_id: int, slot: _Board) -> None:
        retries = 0
        while slot.behind() and match_id not in self._responding and not slot.dead:
            interval = self.spectate_interval if slot.kind == "eve" else self.play_interval
            wait = slot.last_edit + interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self._pace(slot.channel_id, urgent=not slot.old_end)
            if not slot.behind() or match_id in self._responding or slot.latest is None:
                break
            snap, slot.force = slot.latest, False
            slot.last_edit = time.monotonic()
            slot.editing = True
            try:
                ok = await self._edit(slot, snap)
            finally:
                slot.editing = False
            if ok:
                retries = 0
                if not slot.force:  # no response overlapped: the board shows this edit
                    slot.shown = _moment(snap)
                    if not snap.live:
                        self._final_shown(snap)
            elif slot.dead:
                if not snap.live:  # nothing can show this end: no start tries again
                    self._final_shown(snap)
                await self._board_gone(snap)
                if slot.channel_id in self._gone_channels:  # and every other match shown there
                    await self.lobby.abandon_in(channel_id=slot.channel_id)
                return
            elif retries < len(RETRY_PAUSES):
                await asyncio.sleep(RETRY_PAUSES[retries])
                retries += 1
            else:
                log.warning("giving up on the board of match %s until its next change", match_id)
                slot.shown = _moment(snap)  # do not retry this one forever
                if not snap.live:
                    self._forget(match_id)
                return
        self._kick(match_id, slot)

    async def _pace(self, channel_id: int, urgent: bool = True) -> None:
        if self.global_rate is not None:
            if self._global is None:
                self._global = Bucket(self.global_rate, self.global_rate)
            await self._global.take(urgent)
        if self.channel_rate is not None:
            bucket = self._channels.get(channel_id)
            if bucket is None:
                bucket = self._channels[channel_id] = Bucket(self.channel_rate, 5)
            await bucket.take(urgent)

    async def _edit(self, slot: _Board, snap: Snapshot) -> bool:
        """Edit the board; False if it failed (`slot.dead` set when it never can succeed)."""
        channel = self.client.get_partial_messageable(slot.channel_id)
        message = channel.get_partial_message(slot.message_id)
        try:
            await message.edit(
                **await board_message(self.lobby, snap),
                allowed_mentions=discord.AllowedMentions.none(),
            )
        except (discord.NotFound, discord.Forbidden) as exc:
            self.failures += 1
            self.dead_boards += 1
            slot.dead = True
            log.warning("the board of match %s is gone (%s); no more edits", snap.id, exc)
            if isinstance(exc, discord.Forbidden):  # the bot lost the channel: all its boards
                self.gone(channel_id=slot.channel_id)
            return False
        except discord.HTTPException as exc:
            self.failures += 1
            if exc.status < 500 and exc.status != 429:
                slot.dead = True  # Discord refuses this edit as such: retrying cannot help
                log.error("Discord refused the board of match %s: %s", snap.id, exc)
                return False
            log.warning("could not edit the board of match %s: %s", snap.id, exc)
            return False
        except (OSError, RuntimeError, AttributeError) as exc:  # no connection (closing)
            self.failures += 1
            log.warning("could not edit the board of match %s: %r", snap.id, exc)
            return False
        self.edits += 1
        return True

    async def _board_gone(self, snap: Snapshot) -> None:
        """A match whose board can never be edited again ends unrated (`unreachable`): its
        players cannot see the bot's moves or the clock, so it must not end by time."""
        with contextlib.suppress(LobbyError):
            current = await self.lobby.snapshot(snap.id)
            if current.live:
                await self.lobby.abandon(snap.id, "unreachable")

    def _forget(self, match_id: int) -> None:
        slot = self._boards.get(match_id)
        if slot is not None and not slot.editing and match_id not in self._responding:
            del self._boards[match_id]

    def _final_shown(self, snap: Snapshot) -> None:
        """Record that the end is shown, so a restart does not edit this board again."""
        if snap.match.status != "live":
            self.lobby.spawn(self.lobby.final_shown(snap.id))

    async def close(self) -> None:
        """Stop editing (the bot is closing): the next start edits every live board anyway."""
        tasks = [slot.task for slot in self._boards.values() if slot.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def tracked(self) -> int:
        """How many boards the editor remembers (finished ones are forgotten)."""
        return len(self._boards)
