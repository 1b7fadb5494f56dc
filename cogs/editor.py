"""Edits board messages when the lobby announces a change the clicker's response did not show.

Agent moves, bot-match moves, timeouts and resignations by `/resign` arrive here. Edits to one
message are serialised and coalesced: if moves come faster than the interval (a bot match with a
short delay), only the newest board is sent, so a channel sees about one edit per second at most
(DESIGN.md section 3: error 30046 and rate limits otherwise).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import discord

from cogs.render import board_embed, board_view
from lobby.core import Snapshot

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Message:
    pending: Snapshot | None = None
    last_edit: float = 0.0
    task: asyncio.Task[None] | None = None
    done: bool = False  # the final board was sent; later (stale) snapshots are dropped


@dataclass(slots=True)
class BoardEditor:
    bot: BoardBot
    spectate_interval: float = 1.0  # bot matches: about one edit per second
    play_interval: float = 0.25  # people's matches move at human pace; keep them snappy
    _messages: dict[int, _Message] = field(default_factory=dict)

    async def submit(self, snap: Snapshot) -> None:
        m = snap.match
        if m.message_id is None or m.channel_id is None or m.id in self.bot.rendering:
            return
        slot = self._messages.setdefault(m.message_id, _Message())
        if slot.done:
            return
        if slot.pending is None or _newer(snap, slot.pending):
            slot.pending = snap
        if slot.task is None or slot.task.done():
            slot.task = asyncio.create_task(self._flush(m.message_id, slot))

    async def _flush(self, message_id: int, slot: _Message) -> None:
        while slot.pending is not None:
            snap = slot.pending
            interval = self.spectate_interval if snap.match.kind == "eve" else self.play_interval
            wait = slot.last_edit + interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                snap = slot.pending or snap
            slot.pending = None
            slot.last_edit = time.monotonic()
            await self._edit(snap)
            if not snap.live:
                slot.done = True
                self._messages.pop(message_id, None)
                return

    async def _edit(self, snap: Snapshot) -> None:
        m = snap.match
        assert m.channel_id is not None and m.message_id is not None
        message = self.bot.get_partial_messageable(m.channel_id).get_partial_message(m.message_id)
        try:
            await message.edit(embed=board_embed(snap), view=board_view(snap))
        except discord.HTTPException as exc:
            log.warning("could not edit the board of match %s: %s", m.id, exc)


def _newer(a: Snapshot, b: Snapshot) -> bool:
    """Whether `a` shows a later moment of the match than `b` (a finish beats a move)."""
    return (a.match.ply, not a.live) >= (b.match.ply, not b.live)
