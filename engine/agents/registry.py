"""Named agents and difficulty levels.

An agent is named by a spec string: `name` or `name:key=value:key=value`. The keys `time`,
`nodes` and `depth` set the budget; the others are the agent's own parameters, checked against
its constructor so a typo is an error, not a silent default. A level (`easy`, `medium`, ...) is a
fixed spec plus budget per game, so `/play level:hard` and `python -m engine match --agents
hard,minimax` mean the same thing everywhere.
"""

from __future__ import annotations

import importlib
from typing import Any

from engine.agents.base import Agent, AgentInfo, AgentSpec, Budget, Level

GAMES = ("connect4", "othello")
BUDGET_KEYS = ("time", "nodes", "depth")


AGENTS: dict[str, AgentInfo] = {}
LEVELS: dict[str, dict[str, Level]] = {game: {} for game in GAMES}
LEVEL_NAMES = ("easy", "medium", "hard", "expert")


def register(info: AgentInfo) -> None:
    if info.name in AGENTS:
        raise ValueError(f"agent {info.name!r} registered twice")
    AGENTS[info.name] = info


def register_level(level: Level) -> None:
    LEVELS[level.game][level.name] = level


def _parse_value(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def parse_settings(items: list[str]) -> dict[str, Any]:
    """Parse ['key=value', ...] (the CLI's --set) into typed values."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad setting {item!r}: expected key=value")
        out[key.strip()] = _parse_value(raw.strip())
    return out


def resolve(text: str, game: str, extra: dict[str, Any] | None = None) -> tuple[AgentSpec, Budget]:
    """Turn 'hard' or 'minimax:depth=5:eval=opportunities' into a checked spec and budget."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}: choose one of {', '.join(GAMES)}")
    name, *items = text.strip().split(":")
    settings = parse_settings(items)
    settings.update(extra or {})
    if name in LEVELS[game] and name not in AGENTS:
        level = LEVELS[game][name]
        params = dict(level.spec.params)
        budget_values = _merge_budget(level.budget, settings)
        params.update({k: v for k, v in settings.items() if k not in BUDGET_KEYS})
        spec = AgentSpec(level.spec.name, params)
        budget = _budget(budget_values)
        _check(spec, game)
        return spec, budget
    if name not in AGENTS:
        known = sorted(set(AGENTS) | set(LEVELS[game]))
        raise ValueError(f"unknown agent {name!r} for {game}: choose one of {', '.join(known)}")
    info = AGENTS[name]
    params = dict(info.defaults)
    budget_values = _merge_budget(info.budget, settings)
    params.update({k: v for k, v in settings.items() if k not in BUDGET_KEYS})
    spec = AgentSpec(name, params)
    _check(spec, game)
    return spec, _budget(budget_values)


def _merge_budget(default: Budget, settings: dict[str, Any]) -> dict[str, Any]:
    """The user's budget keys replace the default budget as a whole.

    'minimax:time=0.5' means "search by time", so the default depth must not cap it.
    """
    given = {k: v for k, v in settings.items() if k in BUDGET_KEYS}
    if given:
        return given
    return {k: getattr(default, k) for k in BUDGET_KEYS if getattr(default, k) is not None}


def _budget(values: dict[str, Any]) -> Budget:
    try:
        time_ = None if values.get("time") is None else float(values["time"])
        nodes = None if values.get("nodes") is None else int(values["nodes"])
        depth = None if values.get("depth") is None else int(values["depth"])
    except (TypeError, ValueError):
        raise ValueError(
            f"bad budget {values}: time is seconds, nodes and depth are integers"
        ) from None
    for key, value in (("time", time_), ("nodes", nodes), ("depth", depth)):
        if value is not None and value <= 0:
            raise ValueError(f"budget {key} must be positive, got {value}")
    return Budget(time=time_, nodes=nodes, depth=depth)


def _check(spec: AgentSpec, game: str) -> None:
    info = AGENTS.get(spec.name)
    if info is None:
        raise ValueError(f"unknown agent {spec.name!r}")
    if game not in info.games:
        raise ValueError(f"agent {spec.name!r} does not play {game} (it plays {info.games[0]})")
    allowed = info.parameters()
    unknown = sorted(set(spec.params) - set(allowed))
    if unknown:
        hint = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"agent {spec.name!r} has no parameter {unknown[0]!r} (it takes: {hint})")


def build(spec: AgentSpec, game: str) -> Agent:
    """Construct the agent a spec names (in whichever process will run it)."""
    _check(spec, game)
    info = AGENTS[spec.name]
    kwargs = dict(spec.params)
    if "game" in info.parameters():
        kwargs["game"] = game
    agent = info.factory(**kwargs)
    agent.name = spec.name
    return agent


def agents_for(game: str | None = None) -> list[AgentInfo]:
    return [a for a in AGENTS.values() if game is None or game in a.games]


#: Modules that define `AGENT_INFOS: list[AgentInfo]` (and optionally `LEVELS: list[Level]`).
#: Each family of agents lives in its own module and is listed here once.
PROVIDERS: tuple[str, ...] = (
    "engine.agents.simple",
    "engine.agents.greedy",
    "engine.agents.mcts",
    "engine.agents.c4solver",
    "engine.agents.c4expert",
    "engine.agents.weightgrid",
    "engine.agents.trainer",
    "engine.agents.c4minimax",
    "engine.agents.planner",
    "engine.agents.levels",
)


def _load() -> None:
    for module_name in PROVIDERS:
        module = importlib.import_module(module_name)
        for info in getattr(module, "AGENT_INFOS", []):
            register(info)
        for level in getattr(module, "LEVELS", []):
            register_level(level)


_load()
