"""Words for a match, shared by both front ends (the Discord embed and the console)."""

from __future__ import annotations

from lobby.core import Snapshot
from lobby.words import RATING_LEGEND, plural

__all__ = ["GAME_TITLES", "RATING_LEGEND", "TERMINATION_TEXT", "plural"]

GAME_TITLES = {"connect4": "Connect Four", "othello": "Othello"}
TERMINATION_TEXT = {
    "connect": "four in a row",
    "board_full": "the board is full",
    "no_moves": "no moves left",
    "resign": "resignation",
    "time": "time ran out",
    "abandon": "abandoned before a move",
    "stopped": "stopped",
}


def piece(game: str, seat: int) -> str:
    """The emoji of a seat's discs, as the board shows them."""
    if game == "connect4":
        return "🔴" if seat == 0 else "🟡"
    return "⚫" if seat == 0 else "⚪"


def title(snap: Snapshot) -> str:
    a, b = snap.seats
    game = snap.match.game
    return f"{GAME_TITLES[game]}: {a.name} {piece(game, 0)} vs {piece(game, 1)} {b.name}"


def status(snap: Snapshot, *, discord_time: bool = True, now: float | None = None) -> str:
    """One line: whose turn and their clock, or how the match ended."""
    m, game = snap.match, snap.match.game
    if snap.live:
        seat = snap.state.to_move()
        who = snap.seats[seat]
        line = f"Move {m.ply + 1}: {piece(game, seat)} **{who.name}** to play"
        if who.is_agent:
            return line + " (thinking...)"
        if m.turn_deadline is not None:
            if discord_time:
                line += f", clock ends <t:{int(m.turn_deadline)}:R>"
            elif now is not None:
                line += f", {max(0, int(m.turn_deadline - now))} s left"
        return line
    how = TERMINATION_TEXT.get(m.termination or "", m.termination or "")
    if m.status == "abandoned" or m.result is None:
        return f"Match ended ({how}), no result."
    if m.result == "draw":
        return f"Draw ({how})."
    winner = int(m.result)
    return f"{piece(game, winner)} **{snap.seats[winner].name}** wins ({how})."


def score_line(snap: Snapshot) -> str | None:
    """Othello's disc counts; None for Connect Four."""
    if snap.match.game != "othello":
        return None
    black, white = snap.state.disc_counts()  # type: ignore[attr-defined]
    return f"⚫ {black} - {white} ⚪"


def footer(snap: Snapshot) -> str:
    rated = "rated" if snap.match.rated else "unrated"
    return f"Match #{snap.id} · {snap.match.variant} · {rated} · ply {snap.match.ply}"
