"""Named agents and difficulty levels.

An agent is named by a spec string: `name` or `name:key=value:key=value`. The keys `time`,
`nodes` and `depth` set the budget; the others are the agent's own parameters. Every value is
checked against the agent's declared parameter table (`AgentInfo.params`: type and range), so a
typo or a hostile value (`time=inf`, `lr=nan`, `chance_plies=200`) is one clear error, never a
silent default or a search that does not stop. A level (`easy`, `medium`, ...) is a fixed spec
plus budget per game, so `/play level:hard` and `python -m tools match --agents hard,minimax`
mean the same thing everywhere.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from engine.agents.base import (
    Agent,
    AgentInfo,
    AgentSpec,
    Budget,
    Level,
    Limits,
    Param,
    plain_number,
    shown,
)
from engine.games.catalog import GAMES as GAMES

BUDGET_KEYS = ("time", "nodes", "depth")
#: The most `key=value` settings one spec may hold (every agent takes far fewer).
MAX_SETTINGS = 16


AGENTS: dict[str, AgentInfo] = {}
LEVELS: dict[str, dict[str, Level]] = {game: {} for game in GAMES}
LEVEL_NAMES = ("easy", "medium", "hard", "expert")


def register(info: AgentInfo) -> None:
    if info.name in AGENTS:
        raise ValueError(f"agent {info.name!r} registered twice")
    AGENTS[info.name] = info


def register_level(level: Level) -> None:
    LEVELS[level.game][level.name] = level


_INT_TEXT = re.compile(r"[+-]?[0-9]{1,30}")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?")


def _parse_value(raw: str) -> Any:
    """true/false, an int, a float, or the text itself (ASCII digits only: `int()` would also
    read '١٢' and '1_000')."""
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT_TEXT.fullmatch(raw):
        return int(raw)
    if _FLOAT_TEXT.fullmatch(raw) or lowered.lstrip("+-") in ("nan", "inf", "infinity"):
        return float(raw)
    return raw


def parse_settings(items: list[str]) -> dict[str, Any]:
    """Parse ['key=value', ...] (the CLI's --set) into typed values (checked by `resolve`)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad setting {shown(item)}: expected key=value")
        out[key.strip()] = _parse_value(raw.strip())
    return out


def budget_params(ceiling: Limits) -> dict[str, Param]:
    """The budget keys as parameters, their ranges ending at `ceiling` (None: no end)."""
    top = None if ceiling.time is None else plain_number(ceiling.time)
    return {
        "time": Param(
            "time",
            "float",
            "seconds for the whole move",
            low=0.001,
            high=ceiling.time,
            hint="a positive number of seconds, "
            + ("at least 0.001" if ceiling.time is None else f"from 0.001 to {top}"),
        ),
        "nodes": Param("nodes", "int", "positions or simulations searched", 1, ceiling.nodes),
        "depth": Param("depth", "int", "moves searched ahead (plies)", 1, ceiling.depth),
    }


def resolve(
    text: str,
    game: str,
    extra: dict[str, Any] | None = None,
    *,
    limits: Limits | None = None,
) -> tuple[AgentSpec, Budget]:
    """Turn 'hard' or 'minimax:depth=5:eval=opportunities' into a checked spec and budget.

    `extra` holds settings already parsed (the CLI's --set); they win over the text's.

    Parameters: every value must be of the declared type and inside the declared range
    (finite numbers only); anything else is a ValueError naming the parameter and its range.

    Budget: the keys a person gives change only those keys of the agent's (or level's) default
    budget: `hard:time=0.5` keeps hard's depth cap and changes its time.

    Limits (`limits`, default `Limits()`: 5 s, 10**7 nodes, depth 12; the agent's own
    `ceiling` may be lower): a value a person gives above the ceiling is REFUSED, with a message
    naming the ceiling; a default above it is lowered to it. A budget a person shaped (any of
    time, nodes, depth given) or one with no limit at all (the solver's) gets the ceiling's
    time when it has none, so every such move ends. Offline tools pass `Limits.none()`.
    """
    if game not in GAMES:
        raise ValueError(f"unknown game {shown(game)}: choose one of {', '.join(GAMES)}")
    name, *items = text.strip().split(":", MAX_SETTINGS + 1)
    if len(items) > MAX_SETTINGS:
        raise ValueError(f"an agent spec holds at most {MAX_SETTINGS} settings")
    name = name.strip()
    if name in LEVELS[game] and name not in AGENTS:
        level = LEVELS[game][name]
        info, params, default = AGENTS[level.spec.name], dict(level.spec.params), level.budget
    elif name in AGENTS:
        info, params, default = AGENTS[name], dict(AGENTS[name].defaults), AGENTS[name].budget
    else:
        known = [*LEVELS[game], *sorted(a.name for a in agents_for(game))]  # this game's only
        raise ValueError(
            f"unknown agent {shown(name)} for {game}: choose one of {', '.join(known)}"
        )
    _check_game(info, game)
    ceiling = (Limits() if limits is None else limits).tighter(info.ceiling)
    budget_table = budget_params(ceiling)
    given: dict[str, Any] = {}
    settings: list[tuple[str, Any, bool]] = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad setting {shown(item)}: expected key=value")
        settings.append((key.strip(), raw.strip(), True))
    settings += [(k, v, False) for k, v in (extra or {}).items()]
    for key, value, is_text in settings:
        param = budget_table.get(key) or info.param(key, game)
        if param is None:
            raise ValueError(_no_parameter(info, key, game))
        checked = param.check(param.parse(value) if is_text else value, name)
        if key in BUDGET_KEYS:
            given[key] = checked
        else:
            params[key] = checked
    spec = AgentSpec(info.name, params)
    _check(spec, game)
    return spec, _merged_budget(default, given, ceiling)


def _merged_budget(default: Budget, given: dict[str, Any], ceiling: Limits) -> Budget:
    """The default budget under the ceiling, with the given keys replacing their defaults."""
    values: dict[str, Any] = {}
    for key in BUDGET_KEYS:
        value, top = getattr(default, key), getattr(ceiling, key)
        if value is not None and top is not None:
            value = min(value, top)
        values[key] = given.get(key, value)
    unlimited = all(values[k] is None for k in BUDGET_KEYS)
    if values["time"] is None and (given or unlimited):
        values["time"] = ceiling.time
    return Budget(float(values["time"]) if values["time"] is not None else None,
                  values["nodes"], values["depth"])  # fmt: skip


def _check_game(info: AgentInfo, game: str) -> None:
    if game not in info.games:
        raise ValueError(f"agent {info.name!r} does not play {game} (it plays {info.games[0]})")


def _no_parameter(info: AgentInfo, key: str, game: str) -> str:
    allowed = info.settable(game)
    hint = ", ".join(allowed) if allowed else "none"
    return (
        f"agent {info.name!r} has no parameter {shown(key)} "
        f"(it takes: {hint}; and time, nodes, depth for its budget)"
    )


def _check(spec: AgentSpec, game: str) -> dict[str, Any]:
    """The spec's parameters as the agent takes them; a ValueError for an unknown agent or
    parameter, or a value outside its range (so even a hand-made spec cannot pass `lr=nan`)."""
    info = AGENTS.get(spec.name)
    if info is None:
        raise ValueError(f"unknown agent {shown(spec.name)}")
    _check_game(info, game)
    out: dict[str, Any] = {}
    for key, value in spec.params.items():
        param = info.param(key, game)
        if param is None:
            raise ValueError(_no_parameter(info, key, game))
        out[key] = param.check(value, spec.name)
    return out


def build(spec: AgentSpec, game: str) -> Agent:
    """Construct the agent a spec names (in whichever process will run it)."""
    kwargs = _check(spec, game)
    info = AGENTS[spec.name]
    if "game" in info.parameters():
        kwargs["game"] = game
    agent = info.factory(**kwargs)
    agent.name = spec.name
    return agent


def agents_for(game: str | None = None) -> list[AgentInfo]:
    return [a for a in AGENTS.values() if game is None or game in a.games]


#: Modules that define `AGENT_INFOS: list[AgentInfo]` (and optionally `LEVELS: list[Level]`).
#: Each family of agents lives in its own module and is listed here once: the families of one
#: game in its package (`connect4`, `othello`), those playing both games beside them.
PROVIDERS: tuple[str, ...] = (
    "engine.agents.randomagent",
    "engine.agents.connect4.onestep",
    "engine.agents.othello.greedy",
    "engine.agents.mcts",
    "engine.agents.connect4.solveragent",
    "engine.agents.connect4.perfect",
    "engine.agents.othello.weightgrid",
    "engine.agents.connect4.trainer",
    "engine.agents.minimax",
    "engine.agents.connect4.planner",
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
