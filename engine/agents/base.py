"""The agent interface: a state, a budget and a seeded RNG in; a move and what was learned out.

Agents are plain objects built from an `AgentSpec` (a name and parameters), so the spec can cross
into a worker process and the agent is rebuilt there. The deadline lives inside the agent: a
search checks the clock itself (docs/architecture.md, the pool): the caller never kills a worker.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.games.base import GameState, Move


@dataclass(frozen=True, slots=True)
class Budget:
    """How much an agent may think. None means 'no limit of this kind'.

    `time` is wall-clock seconds for the whole move, `nodes` a node or simulation cap, `depth` a
    search depth cap. An agent honours every limit it understands and ignores the others.
    """

    time: float | None = None
    nodes: int | None = None
    depth: int | None = None

    def __post_init__(self) -> None:
        # A NaN or infinite time would make every deadline check false: the search never ends.
        if self.time is not None and not (
            _is_real(self.time) and _finite(self.time) and self.time > 0
        ):
            raise ValueError(
                f"a budget's time must be a positive number of seconds, got {self.time!r}"
            )
        for key in ("nodes", "depth"):
            value = getattr(self, key)
            if value is not None and not (_is_int(value) and value >= 1):
                raise ValueError(
                    f"a budget's {key} must be a whole number of at least 1, got {value!r}"
                )

    def deadline(self, start: float | None = None) -> float | None:
        """The absolute `time.perf_counter()` deadline, or None."""
        if self.time is None:
            return None
        return (time.perf_counter() if start is None else start) + self.time


@dataclass(slots=True)
class Decision:
    """An agent's answer: the move, and what it knows about it (for logs and analysis)."""

    move: Move
    score: float | None = None
    depth: int | None = None
    nodes: int = 0
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """A picklable description of an agent: registry name plus parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    def label(self) -> str:
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}[{inner}]"


class Agent(ABC):
    """Base class of every agent. Subclasses implement `choose`."""

    #: Registry name, set by the registry when the agent is built.
    name: str = "agent"

    @abstractmethod
    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        """Pick a legal move for the side to move; `state` must not be finished."""


class LearningAgent(Agent):
    """An agent whose play depends on learned memory kept outside it (in SQLite, via `db/`).

    Memory is a mapping of bytes keys to bytes values, named (kind, name), e.g.
    ("trainer", "default"). The agent stays pure and picklable: whoever runs it (the CLI, the
    lobby, a training loop) loads the rows the agent asks for and hands them over, and after a
    game asks the agent for the updated rows and stores them. That keeps every SQLite write in
    one process and one transaction per finished match or training batch.
    """

    #: The memory kind, e.g. "trainer" or "weightgrid".
    memory_kind: str = ""
    #: Which named memory of that kind this agent uses.
    memory_name: str = "default"
    #: One `learn` per game even when this memory plays both seats, because the update covers
    #: the whole game (the weight grid); False: each seat learns its own moves (the trainer).
    learn_whole_game: bool = False

    @abstractmethod
    def memory_keys(self, state: GameState) -> list[bytes]:
        """The memory rows `choose` needs in `state` (may be empty)."""

    @abstractmethod
    def use_memory(self, rows: Mapping[bytes, bytes]) -> None:
        """Rows for the next `choose` calls (missing keys mean "never seen")."""

    @abstractmethod
    def learn(
        self,
        states: list[GameState],
        moves: list[Move],
        seat: int,
        result: float,
        rows: Mapping[bytes, bytes],
    ) -> dict[bytes, bytes]:
        """The rows to store after a finished game this agent played as `seat`.

        `states[i]` is the position before `moves[i]`; `result` is 1, 0.5 or 0 for the agent.
        `rows` holds the current values of `learn_keys(...)`; the result is the new values.
        """

    @abstractmethod
    def learn_keys(self, states: list[GameState], moves: list[Move], seat: int) -> list[bytes]:
        """The rows `learn` reads for that game."""

    def memory_format(self, start: GameState) -> str:
        """What a row holds, in a few words (training stores it in the memory's meta)."""
        return ""

    def shown_keys(self) -> list[bytes]:
        """The rows `show_memory` reads (none: a memory is shown by its counts only)."""
        return []

    def show_memory(self, rows: Mapping[bytes, bytes]) -> list[str]:
        """Lines that show people a stored memory, from its `shown_keys` rows (a line may span
        several; e.g. the weight grid's heat map and its legend). Any memory of this kind may be
        given, not only this agent's own."""
        return []


def require_moves(state: GameState) -> list[Move]:
    """The legal moves, or a ValueError if the game is over (agents cannot move then)."""
    moves = state.legal_moves()
    if not moves:
        raise ValueError("the game is over: there is no move to choose")
    return moves


def _is_real(value: Any) -> bool:
    """A real number that is not a bool (True is an int in Python, but never a count here)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """A finite real that fits a float (10**400 is an int Python holds, but no clock can use)."""
    try:
        return math.isfinite(float(value))
    except (OverflowError, TypeError, ValueError):
        return False


def plain_number(value: float) -> str:
    """A range bound as people write it: 10 not 10.0, 0.001 not 1e-03."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def shown(value: Any) -> str:
    """A value for an error message: repr of strings, cut short (a hostile value may be huge)."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True, slots=True)
class Limits:
    """The most a caller lets any budget ask for (None: no ceiling of this kind).

    The defaults bound what a member of the public may request from a shared 2-core machine;
    the engine's offline tools (arena, match, train) pass `Limits.none()`.
    """

    time: float | None = 5.0
    nodes: int | None = 10**7
    depth: int | None = 12

    def __post_init__(self) -> None:
        Budget(self.time, self.nodes, self.depth)  # the same checks: positive and finite

    @classmethod
    def none(cls) -> Limits:
        """No ceiling at all (offline tools that really need long searches)."""
        return cls(None, None, None)

    def tighter(self, other: Limits) -> Limits:
        """The smaller ceiling of each kind."""

        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        return Limits(
            low(self.time, other.time), low(self.nodes, other.nodes), low(self.depth, other.depth)
        )


ParamKind = Literal["int", "float", "str", "bool", "any"]
#: What `Param.parse` reads as a number (NaN and infinity too, so the error can name them).
_NUMBER_TEXT = re.compile(
    r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.I
)


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of an agent: its type, the values it may take, and what it means.

    Numbers are inclusive ranges of finite values; strings are a set of choices or a pattern.
    `games` limits the entry to some games (the same name may mean other choices elsewhere).
    """

    name: str
    kind: ParamKind
    meaning: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    hint: str = ""
    games: tuple[str, ...] = ()

    def allowed(self) -> str:
        """The allowed values in words, e.g. 'a number from 0.001 to 10'."""
        if self.hint:
            return self.hint
        if self.kind == "bool":
            return "true or false"
        if self.kind in ("str", "any"):
            return f"one of {', '.join(self.choices)}"
        noun = "a whole number" if self.kind == "int" else "a number"
        if self.low is not None and self.high is not None:
            return f"{noun} from {plain_number(self.low)} to {plain_number(self.high)}"
        if self.low is not None:
            return f"{noun} of at least {plain_number(self.low)}"
        return noun if self.high is None else f"{noun} of at most {plain_number(self.high)}"

    def parse(self, raw: str) -> Any:
        """The typed value of a spec's text; text that is no value of this kind stays a string."""
        text = raw.strip()
        if self.kind in ("bool", "any") and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if self.kind in ("str", "bool"):
            return text
        # ASCII only: int() and float() also read other scripts' digits, and '1_000'.
        if len(text) <= 64 and _NUMBER_TEXT.fullmatch(text):
            try:
                return int(text)
            except ValueError:
                return float(text)
        return text

    def check(self, value: Any, owner: str) -> Any:
        """`value` as the agent takes it, else a ValueError naming `owner`, the name and range."""
        ok, value = self._coerce(value)
        if ok and self.kind in ("int", "float"):
            ok = (self.low is None or value >= self.low) and (
                self.high is None or value <= self.high
            )
        if not ok:
            raise ValueError(f"{owner}: {self.name} must be {self.allowed()}, got {shown(value)}")
        return value

    def _coerce(self, value: Any) -> tuple[bool, Any]:
        if self.kind == "any":
            if isinstance(value, bool):
                return True, value
            if _is_real(value):
                return _finite(value) and abs(value) <= 1e9, value
            return isinstance(value, str) and _matches(self.pattern, value), value
        if self.kind == "bool":
            return isinstance(value, bool), value
        if self.kind == "str":
            if not isinstance(value, str) or len(value) > 64:
                return False, value
            if self.choices:
                return value in self.choices, value
            return _matches(self.pattern, value), value
        if self.kind == "int" and _is_int(value):
            return True, int(value)  # any size: the range check below bounds it
        if not _is_real(value) or not _finite(value):
            return False, value
        if self.kind == "int":  # 2.0 and 1e6 are whole numbers too
            whole = float(value).is_integer()
            return whole, int(value) if whole else value
        return True, value


def _matches(pattern: str | None, value: str) -> bool:
    return pattern is None or re.fullmatch(pattern, value) is not None


def number(name: str, low: float, high: float, meaning: str, **kw: Any) -> Param:
    return Param(name, "float", meaning, low=low, high=high, **kw)


def integer(name: str, low: int, high: int, meaning: str, **kw: Any) -> Param:
    return Param(name, "int", meaning, low=low, high=high, **kw)


def choice(name: str, choices: tuple[str, ...], meaning: str, **kw: Any) -> Param:
    return Param(name, "str", meaning, choices=choices, **kw)


def check_params(params: tuple[Param, ...], owner: str, **values: Any) -> None:
    """Refuse any of `values` outside its declared range (agents' constructors call this, so a
    directly built agent obeys the same table as one the registry builds)."""
    table = {p.name: p for p in params}
    for name, value in values.items():
        table[name].check(value, owner)


#: A memory name: short, and safe in a log line, a file name or a Discord message.
MEMORY = Param(
    "memory",
    "str",
    "which named learned memory it plays from and learns into",
    pattern=r"[a-z0-9_-]{1,32}",
    hint="a name of 1 to 32 lowercase letters, digits, '-' or '_'",
)

#: What an agent registered without a parameter table may take: short plain values only.
LOOSE = Param(
    "value",
    "any",
    "",
    pattern=r"[A-Za-z0-9_.-]{1,32}",
    hint="true, false, a number or a short name",
)


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """A registry entry: how to build the agent and what to tell people about it.

    `params` declares every parameter a person may set (the registry refuses anything else);
    `ceiling` is the most of each budget kind the agent can use (the caller's `Limits` may be
    lower). `description` says in plain words what the agent does; where it came from belongs
    in its module's docstring.
    """

    name: str
    games: tuple[str, ...]
    description: str
    factory: Callable[..., Agent]
    defaults: dict[str, Any] = field(default_factory=dict)
    budget: Budget = Budget()
    params: tuple[Param, ...] = ()
    ceiling: Limits = Limits(time=None, nodes=None, depth=None)
    #: Whether its agents can learn (a `LearningAgent`); None: a factory that is a class says
    #: it itself, a function's agent has to be built to tell.
    learns: bool | None = None

    def parameters(self) -> list[str]:
        """The factory's keyword parameters (including `game`, which the registry passes)."""
        return [
            p.name
            for p in inspect.signature(self.factory).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

    def param(self, name: str, game: str) -> Param | None:
        """The declared parameter `name` in `game`, or None if a person may not set it."""
        for p in self.params:
            if p.name == name and (not p.games or game in p.games):
                return p
        if self.params or name == "game" or name not in self.parameters():
            return None
        # An agent registered without a table (a test double, say): plain values only.
        return dataclasses.replace(MEMORY if name == "memory" else LOOSE, name=name)

    def settable(self, game: str) -> list[str]:
        """The names of the parameters a person may set in `game`."""
        if self.params:
            return list(
                dict.fromkeys(p.name for p in self.params if not p.games or game in p.games)
            )
        return [n for n in self.parameters() if n != "game"]


@dataclass(frozen=True, slots=True)
class Level:
    """A difficulty level: an agent spec and budget, with why it sits where it does."""

    game: str
    name: str
    spec: AgentSpec
    budget: Budget
    description: str
