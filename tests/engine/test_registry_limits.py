"""Hostile agent specs: every parameter checked against its range, budgets merged and capped.

A public server's members type free text into the agent option; `registry.resolve` must refuse
what an agent cannot use (NaN, infinity, huge or negative numbers, strings for numbers, bools for
counts) with an error naming the parameter, and never hand an agent a budget above the limits.
"""

from __future__ import annotations

import math
import random
import re
import time
from typing import Any, Protocol

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.agents import registry
from engine.agents.base import AgentSpec, Budget, Limits, Param
from engine.agents.connect4.trainer import WEIGHT_LIMIT, TrainerAgent, encode_weights, position
from engine.agents.mcts import MCTSAgent
from engine.agents.othello.weightgrid import encode_grid
from engine.games import new_game
from engine.games.base import GameState
from engine.games.connect4 import Connect4State
from tests.machine import scaled

LIMITS = Limits()

#: (agent, game, parameter) for every registered agent, its games, its parameters and the
#: budget keys.
TARGETS = [
    (info.name, game, key)
    for info in registry.AGENTS.values()
    for game in info.games
    for key in [*info.settable(game), *registry.BUDGET_KEYS]
]

SAMPLES = [
    "nan", "NaN", "inf", "-inf", "+inf", "infinity", "-1", "0", "-0", "0.0", "1e308", "-1e308",
    "1e-308", "10**21", "1000000000000000000000", "1e21", "true", "false", "²", "٣", "１",
    "1_000", "0x10", "", " ", "None", "default", "../etc", "DEFAULT", "x" * 5000, "9" * 5000,
    "1" * 64, "1e6", "2.5", "3", "12", "13", "60", "100000000",
]  # fmt: skip

HOSTILE_TEXT = st.one_of(
    st.sampled_from(SAMPLES),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=80),
)

HOSTILE_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.booleans(),
    st.none(),
    st.text(max_size=80),
    st.sampled_from(["x" * 100_000, "²", "default", "checkers", "standard", "ratio"]),
)


def _in_range(param: Param, value: Any) -> bool:
    """Whether `value` is one a declared parameter allows (independently of Param.check)."""
    if param.kind == "bool":
        return isinstance(value, bool)
    if param.kind in ("str", "any"):
        if param.choices:
            return value in param.choices
        return isinstance(value, str) and re.fullmatch(param.pattern or ".*", value) is not None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if param.kind == "int" and not isinstance(value, int):
        return False
    return (
        math.isfinite(value)
        and (param.low is None or value >= param.low)
        and (param.high is None or value <= param.high)
    )


def _assert_safe(agent: str, game: str, key: str, outcome: Any) -> None:
    """Refused naming the parameter, or every value in range and the budget within LIMITS."""
    if isinstance(outcome, ValueError):
        assert key in str(outcome), str(outcome)
        assert len(str(outcome)) < 400  # a hostile value is never echoed whole
        return
    spec, budget = outcome
    info = registry.AGENTS[spec.name]
    for name, value in spec.params.items():
        param = info.param(name, game)
        assert param is not None and _in_range(param, value), (name, value)
    assert isinstance(budget, Budget)
    if key in registry.BUDGET_KEYS:  # a shaped budget always has a clock
        assert budget.time is not None
    assert budget.time is None or 0 < budget.time <= 5.0
    assert budget.nodes is None or 1 <= budget.nodes <= 10**7
    assert budget.depth is None or 1 <= budget.depth <= 12
    registry.build(spec, game)  # what resolve accepts, the agent accepts


def _outcome(text: str, game: str, extra: dict[str, Any] | None = None) -> Any:
    try:
        return registry.resolve(text, game, extra)
    except ValueError as exc:
        return exc


@pytest.mark.parametrize(("agent", "game", "key"), TARGETS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=HOSTILE_TEXT)
def test_hostile_text_is_refused_or_safe(agent: str, game: str, key: str, raw: str) -> None:
    if ":" in raw:  # a colon starts the next setting: that is another test's business
        raw = raw.replace(":", "")
    _assert_safe(agent, game, key, _outcome(f"{agent}:{key}={raw}", game))


@pytest.mark.parametrize(("agent", "game", "key"), TARGETS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=HOSTILE_VALUES)
def test_hostile_typed_values_are_refused_or_safe(
    agent: str, game: str, key: str, value: Any
) -> None:
    # The CLI's --set and the lobby hand over values already parsed.
    _assert_safe(agent, game, key, _outcome(agent, game, {key: value}))


@pytest.mark.parametrize("level", registry.LEVEL_NAMES)
@pytest.mark.parametrize("game", registry.GAMES)
@settings(max_examples=25, deadline=None)
@given(key=st.sampled_from(registry.BUDGET_KEYS), raw=HOSTILE_TEXT)
def test_levels_take_hostile_budgets_safely(level: str, game: str, key: str, raw: str) -> None:
    raw = raw.replace(":", "")
    _assert_safe(level, game, key, _outcome(f"{level}:{key}={raw}", game))


def test_every_agent_declares_every_parameter() -> None:
    for info in registry.AGENTS.values():
        taken = set(info.parameters()) - {"game"}
        declared: set[str] = set()
        for game in info.games:  # a parameter may be one game's only (Othello's endgame_empties)
            settable = set(info.settable(game))
            assert settable <= taken, info.name
            declared |= settable
            for name in settable:
                param = info.param(name, game)
                assert param is not None and param.meaning, (info.name, name)
                if param.kind in ("int", "float"):
                    assert param.low is not None and param.high is not None, (info.name, name)
        assert declared == taken, info.name


# -- the tester's findings, one by one -------------------------------------------------------


class Refuse(Protocol):
    """What the `refused` fixture gives."""

    def __call__(
        self,
        match: str | None,
        text: str,
        game: str,
        extra: dict[str, Any] | None = None,
        *,
        limits: Limits | None = None,
    ) -> ValueError: ...


@pytest.fixture
def refused() -> Refuse:
    """`registry.resolve` given a spec it must refuse: the ValueError it raised, whose message
    `match` (a regular expression, as in pytest.raises) must find."""

    def refuse(
        match: str | None,
        text: str,
        game: str,
        extra: dict[str, Any] | None = None,
        *,
        limits: Limits | None = None,
    ) -> ValueError:
        with pytest.raises(ValueError, match=match) as exc:
            registry.resolve(text, game, extra, limits=limits)
        return exc.value

    return refuse


@pytest.mark.parametrize("text", ["time=nan", "time=inf", "time=-inf", "time=1e9", "time=0"])
def test_non_finite_or_huge_times_are_refused(text: str, refused: Refuse) -> None:
    for agent in ("mcts", "minimax", "hard", "solver"):
        refused(r"time must be a positive number of seconds", f"{agent}:{text}", "connect4")


def test_huge_counts_are_refused_with_the_ceiling(refused: Refuse) -> None:
    refused(
        r"mcts: nodes must be a whole number from 1 to 10000000", "mcts:nodes=10**21", "othello"
    )
    refused(r"nodes .* got 1000000000000000000000", "mcts:nodes=1000000000000000000000", "othello")
    refused(
        r"hard: depth must be a whole number from 1 to 12, got", "hard:depth=1000000", "connect4"
    )
    refused(r"from 0.001 to 5, got 3600", "hard:time=3600", "connect4")
    refused("depth", "minimax", "othello", {"depth": True})  # a bool is no count


def test_agent_parameters_are_checked_against_their_range(refused: Refuse) -> None:
    error = refused(None, "trainer:lr=nan", "connect4")
    assert str(error) == "trainer: lr must be a number from 0.001 to 10, got nan"
    refused(
        r"chance_plies must be a whole number from 0 to 4",
        "expectiminimax:chance_plies=200",
        "connect4",
    )
    refused(r"chance_plies", "expectiminimax:chance_plies=200", "othello")
    refused(r"mcts: c must be a number from 0 to 10, got inf", "mcts:c=inf", "connect4")
    refused(
        r"capture_share must be a number from 0 to 1", "weightgrid:capture_share=1.5", "othello"
    )
    refused(
        r"eval must be one of checkers, opportunities, window", "minimax:eval=standard", "connect4"
    )
    refused(r"eval must be one of standard", "minimax:eval=checkers", "othello")
    refused(r"exploration must be a number", "trainer:exploration=²", "connect4")
    # The registry passes the game itself.
    refused("no parameter 'game'", "mcts:game=othello", "connect4")
    spec, _ = registry.resolve("expectiminimax:chance_plies=4:eval=window", "connect4")
    assert spec.params == {"chance_plies": 4, "eval": "window"}


@pytest.mark.parametrize("name", ["Default", "a" * 33, "../x", "x y", "", "é", "de\x00fault"])
def test_memory_names_are_short_identifiers(name: str, refused: Refuse) -> None:
    refused(r"memory must be a name of 1 to 32", f"weightgrid:memory={name}", "othello")
    refused("memory", "trainer", "connect4", {"memory": name})
    assert registry.resolve("weightgrid:memory=my-grid_2", "othello")[0].params == {
        "memory": "my-grid_2"
    }


def test_numbers_are_ascii_decimal_only(refused: Refuse) -> None:
    for raw in ("²", "٣", "１", "1_000", "0x10", "10**21", "3 4"):
        refused("depth", f"minimax:depth={raw}", "connect4")
    assert registry.resolve("minimax:depth=1e1", "connect4")[1].depth == 10
    assert registry.resolve("minimax:depth=5.0", "connect4")[1].depth == 5
    refused("depth must be a whole number", "minimax:depth=2.5", "connect4")


def test_a_user_budget_merges_with_the_default() -> None:
    spec, budget = registry.resolve("hard:time=0.5", "connect4")
    assert spec == AgentSpec("minimax", {"eval": "checkers"})
    assert budget == Budget(time=0.5, depth=8)
    assert registry.resolve("hard:time=0.5", "othello")[1] == Budget(time=0.5, depth=8)
    assert registry.resolve("mcts:time=0.2", "othello")[1] == Budget(time=0.2, nodes=10_000)
    assert registry.resolve("expert:time=0.3", "connect4")[1] == Budget(time=0.3)


def test_a_shaped_or_unlimited_budget_gets_the_ceiling_time() -> None:
    assert registry.resolve("solver", "connect4")[1] == Budget(time=5.0)
    assert registry.resolve("solver", "connect4", limits=Limits(time=0.5))[1] == Budget(time=0.5)
    assert registry.resolve("minimax:depth=10", "othello")[1] == Budget(time=5.0, depth=10)
    # Untouched depth-only defaults stay as they are (a clock would change Othello's endgame).
    assert registry.resolve("medium", "othello")[1] == Budget(depth=2)
    # Offline tools keep the old behaviour: no ceiling, the solver thinks as long as it takes.
    assert registry.resolve("solver", "connect4", limits=Limits.none())[1] == Budget()
    assert registry.resolve("minimax:depth=30", "othello", limits=Limits.none())[1] == Budget(
        depth=30
    )


def test_defaults_above_a_tighter_ceiling_are_lowered(refused: Refuse) -> None:
    tight = Limits(time=0.5, nodes=1000, depth=4)
    assert registry.resolve("expert", "connect4", limits=tight)[1] == Budget(time=0.5)
    assert registry.resolve("hard", "connect4", limits=tight)[1] == Budget(time=0.5, depth=4)
    assert registry.resolve("mcts", "othello", limits=tight)[1] == Budget(nodes=1000)
    refused(r"from 0.001 to 0.5, got 0.9", "expert:time=0.9", "connect4", limits=tight)


def test_budget_and_limits_refuse_non_finite_and_non_positive_values() -> None:
    for bad in (math.nan, math.inf, -math.inf, 0, -1.0, 10**400, True, "1"):
        with pytest.raises(ValueError, match="time"):
            Budget(time=bad)  # type: ignore[arg-type]
    for key in ("nodes", "depth"):
        for bad in (0, -5, 2.5, math.nan, True, "3"):
            with pytest.raises(ValueError, match=key):
                Budget(**{key: bad})
    with pytest.raises(ValueError):
        Limits(time=math.nan)
    assert Budget(time=1, nodes=10**21, depth=3).nodes == 10**21  # big but finite is fine


def test_build_refuses_a_hand_made_spec_outside_the_ranges() -> None:
    with pytest.raises(ValueError, match="lr"):
        registry.build(AgentSpec("trainer", {"lr": math.nan}), "connect4")
    with pytest.raises(ValueError, match="chance_plies"):
        registry.build(AgentSpec("expectiminimax", {"chance_plies": 200}), "connect4")
    with pytest.raises(ValueError, match="lr"):
        TrainerAgent(lr=20.0)
    with pytest.raises(ValueError, match="c must be"):
        MCTSAgent(c=math.nan)


def test_too_many_settings_are_refused(refused: Refuse) -> None:
    refused("at most 16 settings", "random" + ":time=1" * 1000, "connect4")


def test_descriptions_say_what_agents_do_not_where_they_came_from() -> None:
    texts = [info.description for info in registry.AGENTS.values()]
    texts += [lv.description for game in registry.GAMES for lv in registry.LEVELS[game].values()]
    for text in texts:
        assert not re.search(r"\bseed\b", text, re.I), text
        assert "\n" not in text and len(text) <= 200, text


# -- learned weights stay finite ---------------------------------------------------------------


def test_learned_weights_are_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        encode_weights([0.0, math.nan, 1.0, 0, 0, 0, 0], mirrored=False)
    with pytest.raises(ValueError, match="finite"):
        encode_weights([math.inf] * 7, mirrored=True)
    with pytest.raises(ValueError, match="finite"):
        encode_weights([1e39] * 7, mirrored=False)  # beyond float32: would be stored as inf
    grid = np.zeros((8, 8))
    grid[3, 4] = math.nan
    with pytest.raises(ValueError, match="finite"):
        encode_grid(grid)
    # A weight at the limit stays there however often the largest lr reinforces it.
    agent = TrainerAgent(lr=10.0, value_scale=1.0, value_clip=10_000.0)
    state = Connect4State.new()
    pos = position(state)
    rows = {pos.key: encode_weights([WEIGHT_LIMIT] * 7, pos.mirrored)}
    out = agent.learn([state], [3], 0, 1.0, rows)
    weights = agent.weights(state, out)
    assert all(math.isfinite(w) and abs(w) <= WEIGHT_LIMIT * 1.0001 for w in weights)


# -- deadlines are honoured -----------------------------------------------------------------


def _midgame(game: str, plies: int) -> GameState:
    rng = random.Random(7)
    state = new_game(game)
    for _ in range(plies):
        state = state.play(rng.choice(state.legal_moves()))
    return state


@pytest.mark.parametrize("game", registry.GAMES)
def test_mcts_with_a_tiny_time_budget_returns_in_time(game: str) -> None:
    agent = registry.build(registry.resolve("mcts", game)[0], game)
    agent.choose(new_game(game), Budget(nodes=50), random.Random(0))  # compile outside the clock
    for state in (new_game(game), _midgame(game, 6)):
        for limit in (0.005, 0.02):
            t0 = time.perf_counter()
            decision = agent.choose(state, Budget(time=limit), random.Random(1))
            assert time.perf_counter() - t0 < limit + scaled(0.2)  # not the machine's load
            assert decision.move in state.legal_moves()


@pytest.mark.parametrize(
    ("text", "game", "plies"),
    [
        ("solver", "connect4", 0),
        ("perfect", "connect4", 5),
        ("minimax:depth=12", "connect4", 2),
        ("expectiminimax:depth=12:chance_plies=4", "connect4", 2),
        ("planner:depth=12", "connect4", 2),
        ("minimax:depth=12", "othello", 10),
        ("expectiminimax:depth=12:chance_plies=4", "othello", 10),
        ("mcts:nodes=10000000", "othello", 10),
    ],
)
def test_searches_honour_the_ceiling_time(text: str, game: str, plies: int) -> None:
    spec, budget = registry.resolve(text, game, limits=Limits(time=0.3))
    assert budget.time == 0.3
    agent = registry.build(spec, game)
    state = _midgame(game, plies)
    agent.choose(state, Budget(time=0.05, depth=2, nodes=200), random.Random(0))  # warm
    t0 = time.perf_counter()
    agent.choose(state, budget, random.Random(0))
    assert time.perf_counter() - t0 < 0.3 + scaled(0.25)
