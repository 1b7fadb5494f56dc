"""A console line to what it asks: a command to its handler, a bare move to the current match.

Every bad line gets one `error:` line and changes nothing."""

from __future__ import annotations

import logging

from console import puzzling
from console.commands import parse_command
from console.handlers import HANDLERS
from console.playing import cmd_switch
from console.session import Session
from console.values import UsageError
from lobby.errors import LobbyError

log = logging.getLogger(__name__)


class Console(Session):
    """A console session that handles the lines typed (or read from a script)."""

    async def handle(self, line: str) -> bool:
        """One input line; False when the console should exit."""
        text = line.strip()
        if not text or text.startswith("#"):
            return True
        if not self.interactive:
            self.write(f"> {text}")
        try:
            parsed = parse_command(text)
            if parsed is None:
                await self.move(text)
                return True
            name, options = parsed
            return await HANDLERS[name](self, options) is not False
        except (UsageError, LobbyError) as exc:
            self.error(str(exc) or type(exc).__name__)
        except Exception as exc:  # never a traceback in the terminal; the log has it at DEBUG
            log.debug("console command %r failed", text, exc_info=True)
            self.error(f"{type(exc).__name__}: {exc}")
        return True

    async def move(self, text: str) -> None:
        """A bare move in the current match (`4 match:3`: in match 3, made current), for
        whoever is to move there (see `Session.mover`); a puzzle waiting for the user's
        answer takes it first (`console.puzzling`)."""
        if self.user in self.puzzling:
            await puzzling.answer(self, text)
            return
        words = text.split()
        chosen = [w for w in words if w.lower().startswith("match:")]
        if chosen:  # "4 match:3": a move in match 3, which becomes the current one
            words.remove(chosen[0])
            await cmd_switch(self, {"match": chosen[0].partition(":")[2]})
            text = " ".join(words)
        snap = await self.current(playable=True)
        snap = await self.lobby.play(
            snap.id, self.mover(snap), text.lower(), expected_ply=snap.match.ply
        )
        if snap.live and snap.seat_to_move.is_agent and not self.interactive:
            await self.advance(snap.id)  # a script reads on once the bot has replied
