"""Pairing a tournament's rounds and ranking its entrants: pure functions over the games
played so far (no store, no clock), so each rule can be tested over random results.

- **Swiss**: players are ranked by score (then seed); the top player of each score group meets
  the player half a group below them (top half against bottom half), a player floats down
  only when their group cannot be paired; nobody meets the same opponent twice while that can
  be avoided; colours are balanced (the player who moved first less often moves first, and no
  two players who both moved first, or both second, two games more than the other way meet
  while that can be avoided); when the number of players is odd, the lowest-ranked player who
  has not had a bye gets one (a win).
- **Round robin**: the circle method, one round per pairing of the seeds (a bye each round
  when odd); colours balanced the same way.
- **Knockout**: a seeded bracket (1 against the lowest seed, ...), byes to the top seeds when
  the field is not a power of two; a drawn game sends the player who moved second through
  (as in an armageddon game).
- **Standings**: score (a win or a bye 1, a draw 1/2), then Buchholz (the sum of the final
  scores of the opponents met), then wins, then seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

Format = Literal["swiss", "round-robin", "knockout"]
FORMATS: tuple[Format, ...] = ("swiss", "round-robin", "knockout")
#: How a game ended for the tournament: the first player won, the second, a draw, a bye (the
#: first player's, a win), or both lost (both had left). None while it is played.
Outcome = Literal["first", "second", "draw", "bye", "lost"]
OUTCOMES: tuple[Outcome, ...] = ("first", "second", "draw", "bye", "lost")
#: How many tries the search of a Swiss round makes at one strictness before it gives up on
#: that strictness (the field is small: a few dozen players at most).
SEARCH_BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class Game:
    """One game of a round: `first` moves first; `second` None is a bye for `first`."""

    round: int
    board: int
    first: int
    second: int | None
    outcome: Outcome | None = None


@dataclass(frozen=True, slots=True)
class Pairing:
    """A game to start: its board in the round, who moves first and second (None: a bye)."""

    board: int
    first: int
    second: int | None


@dataclass(frozen=True, slots=True)
class Standing:
    entrant: int
    score: float
    buchholz: float
    wins: int
    played: int


# ---------------------------------------------------------------------- results


def points(game: Game, entrant: int) -> float:
    """What a finished game gave `entrant` (0 while it is played)."""
    if game.outcome is None or game.outcome == "lost":
        return 0.0
    if game.outcome == "draw":
        return 0.5
    if game.outcome == "bye":
        return 1.0 if entrant == game.first else 0.0
    winner = game.first if game.outcome == "first" else game.second
    return 1.0 if entrant == winner else 0.0


def scores(games: Sequence[Game]) -> dict[int, float]:
    out: dict[int, float] = {}
    for g in games:
        for e in (g.first, g.second):
            if e is not None:
                out[e] = out.get(e, 0.0) + points(g, e)
    return out


def standings(seeds: Sequence[int], games: Sequence[Game]) -> list[Standing]:
    """Every entrant ranked: score, Buchholz, wins, then seed (the order they joined)."""
    score = scores(games)
    buchholz = dict.fromkeys(seeds, 0.0)
    wins = dict.fromkeys(seeds, 0)
    played = dict.fromkeys(seeds, 0)
    for g in games:
        if g.outcome is None:
            continue
        for me, other in ((g.first, g.second), (g.second, g.first)):
            if me is None or me not in buchholz:
                continue
            played[me] += 1
            wins[me] += points(g, me) == 1.0
            if other is not None:
                buchholz[me] += score.get(other, 0.0)
    rank = {e: i for i, e in enumerate(seeds)}
    table = [Standing(e, score.get(e, 0.0), buchholz[e], wins[e], played[e]) for e in seeds]
    table.sort(key=lambda s: (-s.score, -s.buchholz, -s.wins, rank[s.entrant]))
    return table


def colour_balance(games: Sequence[Game]) -> dict[int, int]:
    """Games each entrant moved first minus games they moved second (byes count for none)."""
    out: dict[int, int] = {}
    for g in games:
        if g.second is None:
            continue
        out[g.first] = out.get(g.first, 0) + 1
        out[g.second] = out.get(g.second, 0) - 1
    return out


def _last_colours(games: Sequence[Game]) -> dict[int, int]:
    """+1 if an entrant's last game was played first, -1 if second."""
    out: dict[int, int] = {}
    for g in sorted(games, key=lambda g: g.round):
        if g.second is not None:
            out[g.first], out[g.second] = 1, -1
    return out


def met(games: Sequence[Game]) -> set[frozenset[int]]:
    return {frozenset((g.first, g.second)) for g in games if g.second is not None}


def knockout_winner(game: Game) -> int | None:
    """Who goes through: the winner; after a draw the player who moved second."""
    if game.outcome is None or game.outcome == "lost":
        return None
    if game.outcome in ("first", "bye"):
        return game.first
    return game.second


# ---------------------------------------------------------------------- rounds


def planned_rounds(fmt: Format, entrants: int, asked: int | None) -> int:
    """How many rounds a tournament of `entrants` plays: Swiss what was asked (by default
    enough for one winner, log2 of the field), never more than there are opponents; round
    robin one per opponent (plus one when odd, for the byes); knockout log2 of the field."""
    if entrants < 2:
        return 0
    if fmt == "round-robin":
        return entrants - 1 if entrants % 2 == 0 else entrants
    needed = max(1, math.ceil(math.log2(entrants)))
    if fmt == "knockout":
        return needed
    return max(1, min(asked if asked is not None else needed, entrants - 1))


def _colours(a: int, b: int, balance: dict[int, int], last: dict[int, int], rnd: int) -> Pairing:
    """`a` ranks above `b`: the one who moved first less often moves first; then the one who
    moved second last time; then the higher-ranked in odd rounds, the other in even ones."""
    ba, bb = balance.get(a, 0), balance.get(b, 0)
    if ba != bb:
        return Pairing(0, a, b) if ba < bb else Pairing(0, b, a)
    la, lb = last.get(a, 0), last.get(b, 0)
    if la != lb:
        return Pairing(0, a, b) if la < lb else Pairing(0, b, a)
    return Pairing(0, a, b) if rnd % 2 == 1 else Pairing(0, b, a)


def _numbered(pairs: Sequence[Pairing]) -> list[Pairing]:
    return [Pairing(i, p.first, p.second) for i, p in enumerate(pairs)]


def swiss_round(
    seeds: Sequence[int], active: Collection[int], games: Sequence[Game], rnd: int
) -> list[Pairing]:
    """The next Swiss round among the `active` entrants (the rules: the module's docstring).
    The bye, if any, is the last pairing."""
    score = scores(games)
    rank = {e: i for i, e in enumerate(seeds)}
    order = sorted(active, key=lambda e: (-score.get(e, 0.0), rank[e]))
    if len(order) < 2:
        return []
    balance, last, seen = colour_balance(games), _last_colours(games), met(games)
    had_bye = {g.first for g in games if g.second is None}
    lowest_first = order[::-1]
    fresh = [e for e in lowest_first if e not in had_bye]
    anyone = fresh + [e for e in lowest_first if e in had_bye]

    def new(a: int, b: int) -> bool:
        return frozenset((a, b)) not in seen

    def new_and_balanced(a: int, b: int) -> bool:
        ba, bb = balance.get(a, 0), balance.get(b, 0)
        return new(a, b) and not (min(ba, bb) >= 2 or max(ba, bb) <= -2)

    def any_pair(a: int, b: int) -> bool:
        return True

    levels: list[tuple[Callable[[int, int], bool], list[int]]] = [
        (new_and_balanced, fresh),
        (new, fresh),
        (new, anyone),
        (any_pair, anyone),
    ]
    odd = len(order) % 2 == 1
    for allowed, byes in levels:
        for bye in byes if odd else [None]:
            rest = [e for e in order if e != bye]
            found = _pair_down(rest, score, allowed)
            if found is None:
                continue
            pairs = [_colours(a, b, balance, last, rnd) for a, b in found]
            if bye is not None:
                pairs.append(Pairing(0, bye, None))
            return _numbered(pairs)
    raise AssertionError("any even field pairs when anything is allowed")


def _pair_down(
    order: Sequence[int], score: dict[int, float], allowed: Callable[[int, int], bool]
) -> list[tuple[int, int]] | None:
    """Pairs of the ranked `order` (even), each allowed, searched top-down: the top player
    of the field first, each against the preferred opponents first (their own score group,
    top half against bottom half, then the groups below). None if there are none (or the
    search ran past its budget)."""
    tries = 0

    def search(left: list[int]) -> list[tuple[int, int]] | None:
        nonlocal tries
        if not left:
            return []
        top, others = left[0], left[1:]
        for other in _preferred(top, others, score):
            tries += 1
            if tries > SEARCH_BUDGET:
                return None
            if not allowed(top, other):
                continue
            rest = search([e for e in others if e != other])
            if rest is not None:
                return [(top, other), *rest]
        return None

    return search(list(order))


def _preferred(top: int, others: Sequence[int], score: dict[int, float]) -> list[int]:
    group = [e for e in others if score.get(e, 0.0) == score.get(top, 0.0)]
    below = [e for e in others if e not in group]
    half = (len(group) + 1) // 2  # the top player's group has len(group) + 1 players
    return group[half - 1 :] + group[: half - 1][::-1] + below if group else below


def round_robin_round(seeds: Sequence[int], rnd: int) -> list[Pairing]:
    """Round `rnd` (from 1) of the circle method over every seed (the field is fixed at the
    start: those who left still have their games, forfeited). One place stays put (the bye's
    when the field is odd) and the others turn one step a round; the top row moves first and
    the player who stays put alternates, so everyone moves first as often as second, give or
    take one."""
    field: list[int | None] = list(seeds)
    if len(field) % 2:
        field.insert(0, None)
    n = len(field)
    if n < 2:
        return []
    turned = field[1:]
    shift = (rnd - 1) % (n - 1)
    circle = [field[0], *turned[n - 1 - shift :], *turned[: n - 1 - shift]]
    pairs = []
    byes = []
    for i in range(n // 2):
        a, b = circle[i], circle[n - 1 - i]
        if a is None or b is None:
            bye = a if b is None else b
            if bye is not None:
                byes.append(Pairing(0, bye, None))
        elif i == 0 and rnd % 2 == 0:
            pairs.append(Pairing(0, b, a))
        else:
            pairs.append(Pairing(0, a, b))
    return _numbered(pairs + byes)


def bracket(size: int) -> list[int]:
    """The seeds (from 1) in the order of a bracket of `size` (a power of two): 1 meets
    `size`, and the top two seeds can meet only in the final."""
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [s for seed in order for s in (seed, total - seed)]
    return order


def knockout_round(
    seeds: Sequence[int], active: Collection[int], games: Sequence[Game], rnd: int
) -> list[Pairing]:
    """Round `rnd` of the bracket: round 1 from the seeds, each later board between the
    winners of two boards of the round before (one who left goes no further: their
    opponent has a bye). A board whose two places are empty has no game."""
    size = 1 << max(1, math.ceil(math.log2(max(2, len(seeds)))))
    if rnd == 1:
        slots: list[int | None] = [seeds[s - 1] if s <= len(seeds) else None for s in bracket(size)]
    else:
        before = {g.board: g for g in games if g.round == rnd - 1}
        boards = size >> (rnd - 1)
        slots = []
        for place in range(boards):
            game = before.get(place)
            slots.append(knockout_winner(game) if game is not None else None)
    balance, last = colour_balance(games), _last_colours(games)
    rank = {e: i for i, e in enumerate(seeds)}
    out = []
    for board in range(len(slots) // 2):
        a, b = slots[2 * board], slots[2 * board + 1]
        here = [e for e in (a, b) if e is not None and e in active]
        if not here:
            continue
        if len(here) == 1:
            out.append(Pairing(board, here[0], None))
            continue
        high, low = sorted(here, key=rank.__getitem__)
        p = _colours(high, low, balance, last, 1)  # the higher seed first when even
        out.append(Pairing(board, p.first, p.second))
    return out
