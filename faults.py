"""Fault injection for chaos tests, switched on by the `BOARDBOT_FAULT` environment variable.

Off (and free) unless the variable is set. Its value is a comma-separated list of rules such as
`after:write:commit_step:3` (die right after the 3rd commit) or `crash:job:2`; the syntax, the
fault points and what each rule does: docs/architecture.md, "Fault injection".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

ENV = "BOARDBOT_FAULT"
KILL_STATUS = 137  # what a shell reports for a process killed by SIGKILL


@dataclass(slots=True)
class _Rule:
    action: str
    point: str
    n: int
    kind: str


@dataclass(slots=True)
class Faults:
    rules: list[_Rule] = field(default_factory=list)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Faults:
        """Rules from the variable's text; a malformed rule is an error (a chaos run that
        silently injects nothing would prove nothing)."""
        rules = []
        for raw in filter(None, (part.strip() for part in text.split(","))):
            action, *bits = raw.split(":")
            counts = [i for i, bit in enumerate(bits) if bit.isdigit()]
            if action not in ("after", "fail", "crash", "hang") or not counts or counts[-1] == 0:
                raise ValueError(f"{ENV}: cannot read rule {raw!r}")
            at = counts[-1]
            point, n, rest = ":".join(bits[:at]), int(bits[at]), bits[at + 1 :]
            if n < 1 or len(rest) > (1 if action == "fail" else 0):
                raise ValueError(f"{ENV}: cannot read rule {raw!r}")
            if action == "after":
                rules.append(_Rule("after", point, n, "kill"))
            elif action == "fail":
                rules.append(_Rule("fail", point, n, rest[0] if rest else "error"))
            else:  # crash:job:N / hang:job:N
                rules.append(_Rule("fail", point, n, action))
        return cls(rules)

    def _count(self, action: str, point: str) -> int:
        key = (action, point)
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key]

    def fire(self, point: str) -> str | None:
        """Call at a fault point: the kind of failure to cause now, or None."""
        if not self.rules:
            return None
        wanted = [r for r in self.rules if r.point == point and r.action == "fail"]
        if not wanted:
            return None
        n = self._count("fire", point)
        for rule in wanted:
            if rule.n == n:
                for observer in observers:
                    observer(point, rule.kind)
                return rule.kind
        return None

    def after(self, point: str) -> None:
        """Call when <point> has completed: dies here if a rule says so."""
        if not self.rules:
            return
        wanted = [r for r in self.rules if r.point == point and r.action == "after"]
        if not wanted:
            return
        n = self._count("after", point)
        if any(rule.n == n for rule in wanted):
            sys.stderr.flush()
            os._exit(KILL_STATUS)


def _from_env() -> Faults:
    text = os.environ.get(ENV, "")
    return Faults.parse(text) if text.strip() else Faults()


#: The process's rules, read once at import.
active = _from_env()
#: Called with (point, kind) whenever a rule fires (a chaos run counts its faults).
observers: list[Callable[[str, str], None]] = []


def fire(point: str) -> str | None:
    return active.fire(point)


def after(point: str) -> None:
    active.after(point)


def reset(text: str = "") -> None:
    """Replace the rules (tests)."""
    global active
    active = Faults.parse(text) if text.strip() else Faults()
