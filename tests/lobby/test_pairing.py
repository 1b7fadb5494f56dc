"""The pairing rules of `lobby.pairing`, each over random results (hypothesis): Swiss rounds
never repeat a pairing while one can be avoided, keep colours balanced, give the bye to the
lowest-ranked player without one, pair within score groups; standings break ties by
Buchholz; the circle method meets everyone once; the bracket is seeded and byes go to the
top seeds."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from lobby.pairing import (
    Game,
    Outcome,
    Pairing,
    bracket,
    colour_balance,
    knockout_round,
    knockout_winner,
    planned_rounds,
    round_robin_round,
    scores,
    standings,
    swiss_round,
)

DECISIVE: list[Outcome] = ["first", "second"]
ANY: list[Outcome] = ["first", "second", "draw"]


def played(pairs: list[Pairing], rnd: int, outcomes: list[Outcome]) -> list[Game]:
    """The round's games with these outcomes (a bye is a bye)."""
    return [
        Game(rnd, p.board, p.first, p.second, "bye" if p.second is None else outcomes[i])
        for i, p in enumerate(pairs)
    ]


def swiss(n: int, rounds: int, data: st.DataObject, results: list[Outcome]) -> list[Game]:
    """A whole Swiss tournament of `n` seeds with random results; each round checked to
    seat every player once."""
    seeds = list(range(100, 100 + n))
    games: list[Game] = []
    for rnd in range(1, rounds + 1):
        pairs = swiss_round(seeds, seeds, games, rnd)
        seated = [e for p in pairs for e in (p.first, p.second) if e is not None]
        assert sorted(seated) == seeds
        assert sum(p.second is None for p in pairs) == n % 2
        outcomes = data.draw(
            st.lists(st.sampled_from(results), min_size=len(pairs), max_size=len(pairs))
        )
        games += played(pairs, rnd, outcomes)
    return games


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 20), st.data())
def test_swiss_never_repeats_a_pairing_while_the_field_allows(n: int, data: st.DataObject) -> None:
    # With at most n/2 rounds (n even) every player still has more than half the field left to
    # meet, so a round without a repeat always exists (Dirac's theorem on the unmet graph).
    field = n - n % 2
    rounds = data.draw(st.integers(1, max(1, field // 2 - (n % 2))))
    games = swiss(n, rounds, data, ANY)
    pairs = [frozenset((g.first, g.second)) for g in games if g.second is not None]
    assert len(pairs) == len(set(pairs))


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 20), st.data())
def test_swiss_colours_stay_balanced(n: int, data: st.DataObject) -> None:
    rounds = data.draw(st.integers(1, planned_rounds("swiss", n, None) + 1))
    games = swiss(n, min(rounds, n - 1), data, ANY)
    assert all(abs(b) <= 2 for b in colour_balance(games).values()), colour_balance(games)
    # and nobody moves first in every game of a tournament of more than one game
    for e in {g.first for g in games}:
        mine = [g for g in games if e in (g.first, g.second) and g.second is not None]
        if len(mine) >= 3:
            assert {g.first == e for g in mine} == {True, False}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10).map(lambda k: 2 * k + 1), st.data())
def test_swiss_bye_goes_to_the_lowest_ranked_player_without_one(
    n: int, data: st.DataObject
) -> None:
    seeds = list(range(n))
    games: list[Game] = []
    for rnd in range(1, data.draw(st.integers(1, n // 2)) + 1):
        before = scores(games)
        pairs = swiss_round(seeds, seeds, games, rnd)
        [bye] = [p.first for p in pairs if p.second is None]
        had = {g.first for g in games if g.second is None}
        assert bye not in had  # nobody has a second bye while someone has none
        lower = [e for e in seeds if e not in had and before.get(e, 0) < before.get(bye, 0)]
        assert lower == []  # nobody without a bye has a lower score
        outcomes = data.draw(
            st.lists(st.sampled_from(ANY), min_size=len(pairs), max_size=len(pairs))
        )
        games += played(pairs, rnd, outcomes)
    byes = Counter(g.first for g in games if g.second is None)
    assert max(byes.values()) == 1


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 20), st.data())
def test_swiss_second_round_pairs_within_score_groups(n: int, data: st.DataObject) -> None:
    seeds = list(range(n))
    first = swiss_round(seeds, seeds, [], 1)
    outcomes = data.draw(
        st.lists(st.sampled_from(DECISIVE), min_size=len(first), max_size=len(first))
    )
    games = played(first, 1, outcomes)
    score = scores(games)
    second = swiss_round(seeds, seeds, games, 2)
    groups = Counter(score.get(e, 0.0) for e in seeds)
    floats = sum(
        1 for p in second if p.second is not None and score.get(p.first) != score.get(p.second)
    )
    odd_groups = sum(1 for size in groups.values() if size % 2)
    assert floats <= odd_groups
    # the top half of round 1's seeding met the bottom half
    if n % 2 == 0:
        assert all({p.first, p.second} & set(seeds[: n // 2]) for p in first)


def test_swiss_first_round_is_top_half_against_bottom_half() -> None:
    pairs = swiss_round(list(range(8)), range(8), [], 1)
    assert sorted(frozenset((p.first, p.second)) for p in pairs) == sorted(
        frozenset(x) for x in ((0, 4), (1, 5), (2, 6), (3, 7))
    )


def test_swiss_skips_players_who_left() -> None:
    seeds = list(range(6))
    pairs = swiss_round(seeds, [0, 1, 2, 4, 5], [], 1)
    seated = {e for p in pairs for e in (p.first, p.second) if e is not None}
    assert seated == {0, 1, 2, 4, 5} and sum(p.second is None for p in pairs) == 1


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 16), st.data())
def test_standings_break_ties_by_buchholz(n: int, data: st.DataObject) -> None:
    seeds = list(range(n))
    games = swiss(n, min(n - 1, 4), data, ANY)
    final = scores(games)
    table = standings(seeds, games)
    assert [s.entrant for s in table] != [] and sorted(s.entrant for s in table) == seeds
    for s in table:  # Buchholz: the final scores of the opponents met
        opponents = [
            g.second if g.first == s.entrant else g.first
            for g in games
            if s.entrant in (g.first, g.second) and g.second is not None
        ]
        assert s.buchholz == sum(final.get(o, 0.0) for o in opponents)
        assert s.score == final.get(s.entrant, 0.0)
    for a, b in itertools.pairwise(table):
        assert (a.score, a.buchholz) >= (b.score, b.buchholz)
        if (a.score, a.buchholz, a.wins) == (b.score, b.buchholz, b.wins):
            assert seeds.index(a.entrant) < seeds.index(b.entrant)


def test_buchholz_decides_between_equal_scores() -> None:
    # 0 beat 1 and 3; 2 beat 3 and drew... : 0 and 2 both have 2 points, 0 met stronger players
    games = [
        Game(1, 0, 0, 1, "first"),
        Game(1, 1, 2, 3, "first"),
        Game(2, 0, 0, 3, "first"),
        Game(2, 1, 2, 4, "first"),
        Game(2, 2, 1, 4, "first"),
    ]
    table = standings([0, 1, 2, 3, 4], games)
    assert [s.entrant for s in table[:2]] == [0, 2]
    assert table[0].buchholz == 1.0 and table[1].buchholz == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 16), st.data())
def test_round_robin_meets_everyone_once(n: int, data: st.DataObject) -> None:
    seeds = list(range(n))
    games: list[Game] = []
    rounds = planned_rounds("round-robin", n, None)
    for rnd in range(1, rounds + 1):
        pairs = round_robin_round(seeds, rnd)
        seated = sorted(e for p in pairs for e in (p.first, p.second) if e is not None)
        assert seated == seeds
        outcomes = data.draw(
            st.lists(st.sampled_from(ANY), min_size=len(pairs), max_size=len(pairs))
        )
        games += played(pairs, rnd, outcomes)
    pairs_met = Counter(frozenset((g.first, g.second)) for g in games if g.second is not None)
    assert len(pairs_met) == n * (n - 1) // 2 and set(pairs_met.values()) == {1}
    byes = Counter(g.first for g in games if g.second is None)
    assert byes == (Counter(seeds) if n % 2 else Counter())
    assert all(abs(b) <= 1 for b in colour_balance(games).values())


def test_bracket_order_keeps_the_top_seeds_apart() -> None:
    assert bracket(2) == [1, 2]
    assert bracket(4) == [1, 4, 2, 3]
    assert bracket(8) == [1, 8, 4, 5, 2, 7, 3, 6]


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 20), st.data())
def test_knockout_byes_go_to_the_top_seeds_and_one_winner_is_left(
    n: int, data: st.DataObject
) -> None:
    seeds = list(range(n))
    games: list[Game] = []
    alive = set(seeds)
    rounds = planned_rounds("knockout", n, None)
    for rnd in range(1, rounds + 1):
        pairs = knockout_round(seeds, seeds, games, rnd)
        if rnd == 1:
            size = 1 << rounds
            byes = sorted(p.first for p in pairs if p.second is None)
            assert byes == seeds[: size - n]  # the top seeds rest
        seated = {e for p in pairs for e in (p.first, p.second) if e is not None}
        assert seated == alive
        outcomes = data.draw(
            st.lists(st.sampled_from(ANY), min_size=len(pairs), max_size=len(pairs))
        )
        now = played(pairs, rnd, outcomes)
        games += now
        alive = {w for g in now if (w := knockout_winner(g)) is not None}
    assert len(alive) == 1


def test_a_drawn_knockout_game_sends_the_second_player_through() -> None:
    assert knockout_winner(Game(1, 0, 5, 6, "draw")) == 6
    assert knockout_winner(Game(1, 0, 5, None, "bye")) == 5
    assert knockout_winner(Game(1, 0, 5, 6, None)) is None
    assert knockout_winner(Game(1, 0, 5, 6, "lost")) is None


def test_planned_rounds() -> None:
    assert planned_rounds("swiss", 8, None) == 3
    assert planned_rounds("swiss", 8, 20) == 7
    assert planned_rounds("round-robin", 5, None) == 5
    assert planned_rounds("round-robin", 6, 2) == 5
    assert planned_rounds("knockout", 5, None) == 3
    assert planned_rounds("swiss", 1, None) == 0
