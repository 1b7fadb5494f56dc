"""A console tournament as text: its standings (the words of the Discord standings), a round's
pairings, a game's result and the winner, each a line or a block."""

from __future__ import annotations

from typing import Protocol

from engine.games.catalog import offer
from lobby.pairing import standings
from lobby.tournament_rounds import Placing, TournamentView, as_game
from lobby.words import plural

FORMAT_NAMES = {"swiss": "Swiss", "round-robin": "round robin", "knockout": "knockout"}
OUTCOME_TEXT = {"first": "1-0", "second": "0-1", "draw": "½-½", "lost": "0-0"}


class GameRow(Protocol):
    """A tournament's game as its view holds it."""

    @property
    def round(self) -> int: ...
    @property
    def board(self) -> int: ...
    @property
    def first_id(self) -> int: ...
    @property
    def second_id(self) -> int | None: ...
    @property
    def match_id(self) -> int | None: ...
    @property
    def outcome(self) -> str | None: ...


def points(value: float) -> str:
    return f"{value:g}"


def heading(view: TournamentView) -> str:
    t = view.tournament
    return f"Tournament #{t.id}: {offer(t.game).title}, {FORMAT_NAMES.get(t.format, t.format)}"


def status_line(view: TournamentView, now: float) -> str:
    t = view.tournament
    if t.status == "open":
        when = ""
        if t.starts_at is not None:
            minutes = max(0, round((t.starts_at - now) / 60))
            when = f" It starts by itself in {plural(minutes, 'minute')}."
        return f"Open: /tournament join to play.{when}"
    if t.status == "running":
        return f"Round {t.round} of {t.rounds}."
    if t.status == "cancelled":
        return "Cancelled."
    return f"Finished. Winner: **{view.winner}**" if view.winner else "Finished."


def placing_lines(placings: tuple[Placing, ...] | list[Placing]) -> list[str]:
    """One line per player: rank, name, score and Buchholz (as the Discord standings)."""
    lines = []
    for p in placings:
        marks = " (bot)" if p.agent else ""
        marks += " (left)" if p.left else ""
        lines.append(
            f"{p.rank}. **{p.name}**{marks}: {points(p.score)} (Buchholz {points(p.buchholz)})"
        )
    return lines


def standings_text(view: TournamentView, now: float, turn_seconds: float) -> str:
    """The tournament in full: what it is, where it stands, the standings and the current
    round's pairings (`/tournament standings`)."""
    t = view.tournament
    lines = [heading(view), status_line(view, now)]
    lines += placing_lines(view.placings) or ["Nobody has joined yet."]
    if t.status == "running":
        lines.append(f"Round {t.round}:")
        lines += [f"  {pairing(view, g)}" for g in view.current()]
    clock = t.turn_seconds if t.turn_seconds else turn_seconds
    lines.append(f"Clock: {clock:g} s a move. Ties are broken by Buchholz.")
    return "\n".join(lines)


def pairing(view: TournamentView, g: GameRow) -> str:
    """One game of a round: `A - B: 1-0` (`playing`, with its match, while it is played), or
    `A: a bye`."""
    first = view.names.get(g.first_id, "?")
    if g.second_id is None:
        return f"{first}: a bye"
    second = view.names.get(g.second_id, "?")
    if g.outcome is not None:
        result = OUTCOME_TEXT.get(g.outcome, g.outcome)
    else:
        result = "starting" if g.match_id is None else f"playing (match #{g.match_id})"
    return f"{first} - {second}: {result}"


def round_line(view: TournamentView, rnd: int) -> str:
    """A round starts: its pairings in one line."""
    t = view.tournament
    games = [g for g in view.games if g.round == rnd]
    said = []
    for g in games:
        if g.second_id is None:
            said.append(pairing(view, g))
        else:
            names = f"{view.names.get(g.first_id, '?')} - {view.names.get(g.second_id, '?')}"
            said.append(names if g.match_id is None else f"{names} (match #{g.match_id})")
    return f"Tournament #{t.id}, round {rnd} of {t.rounds}: {', '.join(said)}"


def result_line(view: TournamentView, g: GameRow) -> str:
    """A game of the tournament ended: its result in one line."""
    t = view.tournament
    return f"Tournament #{t.id}, round {g.round}: {pairing(view, g)}"


def standings_after(view: TournamentView, rnd: int) -> str:
    """The standings once round `rnd` is over (the games of later rounds left out: a bye of
    the next round, scored when it is paired, is not yet the standings after this one)."""
    t = view.tournament
    seeds = [p.player_id for p in view.placings]
    by_id = {p.player_id: p for p in view.placings}
    table = standings(seeds, [as_game(g) for g in view.games if g.round <= rnd])
    placings = [
        Placing(i + 1, s.entrant, by_id[s.entrant].name, s.score, s.buchholz, s.wins, s.played,
                by_id[s.entrant].agent, by_id[s.entrant].left)
        for i, s in enumerate(table)
    ]  # fmt: skip
    head = f"Tournament #{t.id}, standings after round {rnd} of {t.rounds}:"
    return "\n".join([head, *placing_lines(placings)])


def end_line(view: TournamentView) -> str:
    """The winner (the words of the Discord announcement), or that it was cancelled."""
    t = view.tournament
    title = f"{offer(t.game).title} tournament #{t.id}"
    if t.status == "cancelled":
        games = "; its live games end unrated" if t.round else ""
        return f"The {title} is cancelled: nobody wins{games}."
    if view.winner is None:
        return f"🏆 The {title} is over."
    return f"🏆 **{view.winner}** wins the {title}!"
