"""Logging in to Discord at the start, tried again while Discord cannot be reached."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger("boardbot")


async def log_in(bot: BoardBot, token: str, stop: asyncio.Event) -> None:
    """Log in, trying again with a growing pause while Discord cannot be reached (a network
    down at boot is common for a service); one line each time, no traceback."""
    import aiohttp  # installed with discord.py
    import discord

    pause = 5.0
    while not bot.is_closed():
        try:
            await bot.login(token)
            return
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.warning("cannot reach Discord (%s); trying again in %.0f s", exc, pause)
        except discord.HTTPException as exc:
            if exc.status < 500:
                raise
            log.warning("Discord answered %s; trying again in %.0f s", exc.status, pause)
        with contextlib.suppress(TimeoutError):  # a stop signal ends the pause at once
            await asyncio.wait_for(stop.wait(), pause)
        pause = min(pause * 2, 300.0)
