"""Each game registers what it provides in its kit (engine/kits.py): every game of the catalog has
one with everything the shared code asks for, and the training's evaluation lines come from it."""

from __future__ import annotations

import inspect

import pytest

from engine.agents import registry
from engine.agents.mcts import MctsKit
from engine.agents.minimax import SearchKit
from engine.analysis import AnalysisKit
from engine.games.catalog import GAMES
from engine.hints import HintKit
from engine.kits import kit
from engine.picture import PictureKit
from tools.training.evals import EvalKit, default_evals

PROTOCOLS = (AnalysisKit, SearchKit, MctsKit, HintKit, PictureKit, EvalKit)


def members(protocol: type) -> set[str]:
    """The names a protocol asks for: its annotated attributes and its methods."""
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if inspect.isfunction(v) and n[0] != "_"}
    return names


def test_the_protocols_ask_for_something() -> None:
    assert members(MctsKit) == {"MCTS_FANOUT", "mcts_runner"}
    assert members(EvalKit) == {"training_evals"}


@pytest.mark.parametrize("game", GAMES)
def test_every_game_has_a_kit_with_all_the_shared_code_asks(game: str) -> None:
    module = kit(game)
    missing = sorted(
        f"{p.__name__}.{name}"
        for p in PROTOCOLS
        for name in members(p)
        if not hasattr(module, name)
    )
    assert missing == []


Line = tuple[str, str, tuple[tuple[str, object], ...]]
GREEDY = (("exploration", 0.0),)
EVALS: list[tuple[str, str, list[Line]]] = [
    ("connect4", "trainer:exploration=0.3", [
        ("random", "random", GREEDY),
        ("onestep", "onestep", GREEDY),
        ("untrained-self", "trainer:exploration=0.0", GREEDY),
    ]),
    ("connect4", "minimax", [("random", "random", ()), ("onestep", "onestep", ())]),
    ("othello", "weightgrid:memory=default", [
        ("greedy-random", "greedy-random", ()),
        ("random", "random", ()),
        ("greedy-random(capture=1)", "greedy-random", (("capture_share", 1.0),)),
    ]),
    ("othello", "random", [("greedy-random", "greedy-random", ()), ("random", "random", ())]),
]  # fmt: skip


@pytest.mark.parametrize(("game", "text", "lines"), EVALS)
def test_a_learner_is_evaluated_against_what_its_game_names(
    game: str, text: str, lines: list[Line]
) -> None:
    spec, _ = registry.resolve(text, game)
    evals = default_evals(game, registry.build(spec, game), spec)
    assert [(e.label, e.opponent, e.learner_params) for e in evals] == lines
