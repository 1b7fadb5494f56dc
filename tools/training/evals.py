"""Evaluating a learner during training: fixed seeded games against each evaluation opponent.

The same games (openings and RNG seeds) at every evaluation point, so a curve moves only with the
memory; the learner plays them greedy where it has an exploration range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Limits
from engine.games.catalog import game_info
from engine.kits import kit
from engine.learning.rule import seat_result
from tools.training.workers import PlayedGame, TrainGame


@dataclass(frozen=True, slots=True)
class EvalSpec:
    """One evaluation line: the learner (with `learner_params` overridden) against `opponent`."""

    label: str
    opponent: str
    learner_params: tuple[tuple[str, Any], ...] = ()


class EvalKit(Protocol):
    """What a game's kit (engine/kits.py) provides for the evaluations."""

    def training_evals(
        self, learner: Agent, spec: AgentSpec
    ) -> tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...]:
        """The evaluation lines of a learner of the game: (label, opponent, the learner's
        parameters overridden)."""
        ...


def default_evals(game: str, learner: Agent, spec: AgentSpec) -> tuple[EvalSpec, ...]:
    """The evaluation lines `game`'s kit names for this learner."""
    lines = cast(EvalKit, kit(game)).training_evals(learner, spec)
    return tuple(EvalSpec(label, opponent, params) for label, opponent, params in lines)


def eval_games(
    game: str, seed: int, count: int, learner: AgentSpec, ev: EvalSpec, base_index: int
) -> list[TrainGame]:
    """The fixed seeded games of one evaluation line (same openings at every checkpoint)."""
    spec, budget = registry.resolve(ev.opponent, game, limits=Limits.none())
    params = dict(learner.params)
    params.update(dict(ev.learner_params))
    lspec = AgentSpec(learner.name, params)
    plies = game_info(game).opening_plies  # as `python -m tools arena`
    return [
        TrainGame(
            index=base_index + i,
            learner=lspec,
            opponent=spec,
            opponent_budget=budget,
            learner_seat=i % 2,
            opening_seed=f"eval-opening:{seed}:{i // 2}",
            rng_seed=f"eval-game:{seed}:{ev.label}:{i}",
            opening_plies=plies,
        )
        for i in range(count)
    ]


def score(outs: Iterable[PlayedGame], tasks: Sequence[TrainGame]) -> tuple[float, str]:
    """The learner's mean score (win 1, draw 1/2) and its wins-draws-losses, e.g. "5-1-2"."""
    seat = {t.index: t.learner_seat or 0 for t in tasks}
    results = [seat_result(g.winner, seat[g.index]) for g in outs]
    w, d = results.count(1.0), results.count(0.5)
    return sum(results) / max(len(tasks), 1), f"{w}-{d}-{len(results) - w - d}"
