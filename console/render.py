"""Matches as the console's text: the emoji board with its status words, one-line summaries,
the moves a listener reports, and the embeds' bold."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

from engine.games.catalog import game_info
from lobby import present
from lobby.core import Snapshot
from lobby.models import MoveRow
from lobby.training import TrainingProgress


def status(snap: Snapshot, now: float) -> str:
    return present.status(snap, discord_time=False, now=now)


def board(snap: Snapshot, now: float, last: Any = None) -> str:
    """Title-less block: board, status, Othello's score and legal moves."""
    if last is None:
        last = snap.last_move
    lines = [snap.state.render_emoji(last=last, show_legal=snap.live), status(snap, now)]
    score = present.score_line(snap)
    if score:
        lines.append(score)
    if snap.live and game_info(snap.match.game).list_moves and not snap.seat_to_move.is_agent:
        legal = [snap.state.move_to_str(m) for m in snap.state.legal_moves()]
        lines.append("Legal moves: " + ", ".join(legal))
    return "\n".join(lines)


def full(snap: Snapshot, now: float) -> str:
    """A match in full: title, board, status, footer."""
    return f"#{snap.id} {present.title(snap)}\n{board(snap, now)}\n{present.footer(snap)}"


def summary(snap: Snapshot, now: float) -> str:
    """One line: id, game, players and whose turn."""
    title = present.title(snap).replace("**", "")
    return f"#{snap.id} {title} · {status(snap, now).replace('**', '')}"


def moves_played(snap: Snapshot, rows: Iterable[MoveRow]) -> tuple[list[str], Any]:
    """A line per move in `rows` (who played what, or passed), and the last move made (None
    if none could be read back)."""
    lines: list[str] = []
    last: Any = None
    for row in rows:
        seat = row.ply % 2
        who = f"{snap.seats[seat].name} {present.piece(snap.match.game, seat)}"
        if row.move == "pass":
            lines.append(f"#{snap.id} {who} has no legal move and passes")
        else:
            lines.append(f"#{snap.id} {who} plays {row.move}")
            with contextlib.suppress(Exception):
                last = snap.state.parse_move(row.move)
    return lines, last


def markup(text: str, terminal: bool) -> str:
    """The embeds' **bold**: bold in a terminal, plain in a script's output."""
    bold = r"\033[1m\1\033[0m" if terminal else r"\1"
    return re.sub(r"\*\*(.+?)\*\*", bold, text)


def training_line(p: TrainingProgress) -> str:
    """A training job's progress in one line."""
    return " · ".join(p.text().splitlines())


def listing(found: present.Listing) -> str:
    """A listing's lines under its title, or the line that says it is empty."""
    if not found.lines:
        return found.empty
    head = found.title + (f" ({found.legend})" if found.legend else "") + ":"
    return "\n".join([head] + [f"  {line}" for line in found.lines])
