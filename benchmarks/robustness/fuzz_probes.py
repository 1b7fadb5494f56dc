"""The fuzz run's probes besides the interactions (`fuzz.py` runs them): every limit at N and
N+1, hostile console lines and engine protocol lines."""

from __future__ import annotations

import io
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.robustness.fuzz_inputs import GAMES, Interactions, console_line
from console.dispatch import Console
from engine.agents import registry
from engine.agents.base import Budget
from lobby.core import Lobby, LobbyConfig
from tests.harness import user
from tools.serve import answer


async def check_limits(inputs: Interactions, cfg: LobbyConfig) -> None:
    """Each limit at exactly N (allowed) and N+1 (refused, saying which limit)."""
    member = user(9999, "limit-tester")
    for _ in range(2):
        await inputs.slash("resign", {}, who=member)  # nothing live before
    probes: list[tuple[str, int | None, str, Callable[[int], dict[str, Any]]]] = [
        ("bot games", cfg.max_bot_games, "play", lambda i: {"game": "connect4"}),
        (
            "bot matches",
            cfg.max_botmatches,
            "botmatch",
            lambda i: {"game": "connect4", "first": "random", "second": "random", "delay": 30},
        ),
    ]
    for label, cap, command, options in probes:
        if cap is None:
            continue
        for i in range(cap + 1):
            calls = await inputs.slash(command, options(i), who=member)
            refused = [c for c in calls if c.ephemeral and "limit" in (c.content or "")]
            ok = not refused if i < cap else bool(refused)
            inputs.stats["limits_checked"] += 1
            if not ok:
                inputs.stats["limit_failures"] += 1
                inputs.details.append(f"limit {label} at {i + 1}: {[c.content for c in calls]}")
    # a challenge pair: the second challenge within the pause is refused
    a, b = user(9997, "pair-a"), user(9998, "pair-b")
    first = await inputs.slash("challenge", {"opponent": b, "game": "connect4"}, who=a)
    again = await inputs.slash("challenge", {"opponent": b, "game": "connect4"}, who=a)
    inputs.stats["limits_checked"] += 2
    if any(c.ephemeral for c in first) or not any(
        c.ephemeral and "again in" in (c.content or "") for c in again
    ):
        inputs.stats["limit_failures"] += 1
        inputs.details.append("limit: the pause between challenges of a pair")


async def fuzz_console(
    lobby: Lobby,
    rng: random.Random,
    lines: int,
    fingerprint: Callable[[], tuple[Any, ...]],
    quiet: Callable[[], Awaitable[None]],
    details: list[str],
) -> dict[str, int]:
    """Console lines: each bad one prints exactly one `error:` line and changes nothing."""
    out = io.StringIO()
    console = Console(lobby, out, "fuzzer", False)
    counts = Counter[str]()
    for _ in range(lines):
        line = console_line(rng)[:6000]
        out.seek(0)
        out.truncate()
        before = fingerprint()
        await console.handle(line)
        await quiet()
        text = out.getvalue()
        errors = sum(1 for x in text.splitlines() if x.startswith("error:"))
        counts["lines"] += 1
        counts["errors"] += errors > 0
        if errors > 1 or "Traceback" in text:
            counts["bad_replies"] += 1
            details.append(f"console {line[:60]!r}: {text[:200]!r}")
        if errors and fingerprint() != before:
            counts["refused_changed_rows"] += 1
            details.append(f"console {line[:60]!r} changed rows")
    await console.close(finish=False)
    return dict(counts)


def fuzz_protocol(rng: random.Random, lines: int) -> dict[str, int]:
    """Engine protocol lines: exactly one reply each, `error: ...` for the bad ones."""
    counts = Counter[str]()
    agents = {g: registry.build(registry.resolve("random", g)[0], g) for g in GAMES}
    for _ in range(lines):
        game = rng.choice(GAMES)
        pick = rng.random()
        if pick < 0.3:
            line = "".join(rng.choice("1234567890 ") for _ in range(rng.randrange(50)))
        elif pick < 0.6:
            line = "".join(rng.choice("XO-xo. ") for _ in range(rng.randrange(70)))
        else:
            line = console_line(rng)
        reply = answer(line, game, agents[game], Budget(), rng)
        counts["lines"] += 1
        counts["errors"] += reply.startswith("error:")
        if "\n" in reply or not reply.strip():
            counts["bad_replies"] += 1
    return dict(counts)
