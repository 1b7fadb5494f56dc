"""The win chance over an analysed match and its key moments, as both front ends show them: the
first player's expected score after every move (from each move's `chance_before` and
`chance_after`, `engine.analysis.Review`), the moves where it swung most with the better move,
and the words of the graph's alt text (`lobby.charts.win_chart` draws it)."""

from __future__ import annotations

from engine.analysis import Analysis, Review, analysis_kit
from lobby.words import plural

#: A move is a key moment when it cost its player at least this much win chance.
SWING = 0.1
#: How many key moments are named.
MOMENTS = 3
#: Discord's limit for an attachment's description (its alt text).
MAX_ALT_TEXT = 1024


def _first(r: Review, chance: float | None) -> float | None:
    """A mover's chance as the first player's."""
    if chance is None:
        return None
    return chance if r.player == 0 else 1.0 - chance


def win_chances(a: Analysis) -> list[float | None]:
    """The first player's win chance (expected score, 0..1) at the start and after each move;
    None where the analysis does not know it."""
    if not a.moves:
        return []
    out = [_first(a.moves[0], a.moves[0].chance_before)]
    for i, r in enumerate(a.moves):
        after = _first(r, r.chance_after)
        if after is None and i + 1 < len(a.moves):
            nxt = a.moves[i + 1]
            after = _first(nxt, nxt.chance_before)
        out.append(after)
    return out


def swing(r: Review) -> float:
    """The win chance a move cost its player (0 where it is not known or none was lost)."""
    if r.chance_before is None or r.chance_after is None:
        return 0.0
    return max(0.0, r.chance_before - r.chance_after)


def key_moments(a: Analysis, limit: int = MOMENTS) -> list[Review]:
    """The moves that cost their player the most win chance (at least SWING), in the order
    they were played. Of moves that cost the same the later ones count: an outcome thrown
    away and won back was not what decided the game."""
    found = [r for r in a.moves if swing(r) >= SWING]
    worst = sorted(found, key=lambda r: (-swing(r), -r.ply))[:limit]
    return sorted(worst, key=lambda r: r.ply)


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.0f}%"


def moment_line(a: Analysis, r: Review, names: tuple[str, str]) -> str:
    """'Move 9: ann played column 7, win chance 100% -> 0%; column 1 was better.'"""
    word = analysis_kit(a.game).MOVE_WORD
    line = (
        f"Move {r.ply + 1}: {names[r.player]} played {word} {r.move}, win chance "
        f"{_pct(r.chance_before)} -> {_pct(r.chance_after)}"
    )
    if r.best and r.best != r.move:
        line += f"; {word} {r.best} was better"
    return line + ("." if r.exact else " (a search's estimate).")


def moment_lines(a: Analysis, names: tuple[str, str]) -> list[str]:
    """The key moments, one line each; one line saying so when there are none."""
    found = key_moments(a)
    if not found:
        return ["No move swung the win chance by 10% or more."]
    return [moment_line(a, r, names) for r in found]


def alt_text(a: Analysis, names: tuple[str, str], match_id: int, title: str) -> str:
    """The graph in words (its alt text), within Discord's limit."""
    chances = win_chances(a)
    known = [c for c in chances if c is not None]
    text = (
        f"Graph of the win chance over the {plural(len(a.moves), 'move')} of match #{match_id} "
        f"({title}): {names[0]}'s chance, 100% at the top, {names[1]}'s at the bottom."
    )
    if known:
        text += f" It starts at {_pct(known[0])} and ends at {_pct(known[-1])} for {names[0]}."
    else:
        text += " The analysis knows no win chance in this match."
    found = key_moments(a)
    if found:
        swings = "; ".join(
            f"move {r.ply + 1} by {names[r.player]}, {_pct(r.chance_before)} to "
            f"{_pct(r.chance_after)} for them"
            for r in found
        )
        text += f" Biggest swings: {swings}."
    if len(text) > MAX_ALT_TEXT:
        text = text[: MAX_ALT_TEXT - 1] + "…"
    return text
