"""Ratings with openskill (Plackett-Luce): one rating per player per game, ranked by ordinal.

People and agents are rated alike; the lobby decides which games count. Why openskill and which
games are rated: docs/architecture.md, "Ratings".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from openskill.models import PlackettLuce

from lobby.models import Match, Rating

_MODEL = PlackettLuce()
DEFAULT_MU = _MODEL.mu
DEFAULT_SIGMA = _MODEL.sigma


@dataclass(frozen=True, slots=True)
class Skill:
    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA

    @property
    def ordinal(self) -> float:
        """The conservative estimate used for ranking: mu - 3 sigma."""
        return self.mu - 3 * self.sigma


def rate_1v1(first: Skill, second: Skill, score_first: float) -> tuple[Skill, Skill]:
    """New skills after one game; `score_first` is 1 (first won), 0.5 (draw) or 0."""
    if score_first not in (0.0, 0.5, 1.0):
        raise ValueError(f"a game score is 0, 0.5 or 1, not {score_first}")
    ranks: list[float] = [0.0, 1.0] if score_first == 1.0 else [1.0, 0.0]
    if score_first == 0.5:
        ranks = [0.0, 0.0]
    a = _MODEL.rating(mu=first.mu, sigma=first.sigma)
    b = _MODEL.rating(mu=second.mu, sigma=second.sigma)
    [[a2], [b2]] = _MODEL.rate([[a], [b]], ranks=ranks)
    return Skill(a2.mu, a2.sigma), Skill(b2.mu, b2.sigma)


def rating_fn(
    game: str, p0: int, p1: int, score0: float
) -> Callable[[Match, Mapping[int, Rating | None]], list[Rating]]:
    """Rating rows computed inside the finishing transaction, from fresh current ratings."""

    def fn(match: Match, current: Mapping[int, Rating | None]) -> list[Rating]:
        old0 = current.get(p0)
        old1 = current.get(p1)
        s0 = Skill(old0.mu, old0.sigma) if old0 else Skill()
        s1 = Skill(old1.mu, old1.sigma) if old1 else Skill()
        n0, n1 = rate_1v1(s0, s1, score0)
        return [
            bump(old0, p0, game, n0, score0),
            bump(old1, p1, game, n1, 1.0 - score0),
        ]

    return fn


def bump(old: Rating | None, pid: int, game: str, skill: Skill, score: float) -> Rating:
    base = old or Rating(player_id=pid, game=game, mu=skill.mu, sigma=skill.sigma)
    return Rating(
        player_id=pid,
        game=game,
        mu=skill.mu,
        sigma=skill.sigma,
        games=base.games + 1,
        wins=base.wins + (score == 1.0),
        draws=base.draws + (score == 0.5),
        losses=base.losses + (score == 0.0),
    )
