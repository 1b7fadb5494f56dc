"""Small wording helpers shared by every front end (no imports: anything may use them)."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 game`, `2 games` (`many` for irregular plurals)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


#: What a rating means, under every leaderboard and stats list.
RATING_LEGEND = "Rating = mu - 3 sigma (openskill): a cautious estimate that rises as you play"
