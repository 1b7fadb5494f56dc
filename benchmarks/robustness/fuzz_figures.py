"""The fuzz run's figures (`fuzz.py` reports them): how long the agents took to move, how the
engine's jobs waited, loaded and ran, and what a refused interaction changed."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.measure import percentile
from benchmarks.robustness.fuzz_inputs import Read
from benchmarks.robustness.fuzz_tournaments import FINGERPRINT as TOURNAMENT_ROWS


def bot_moves(read: Read) -> dict[str, Any]:
    """How long each agent took to move after its turn began (less a bot match's delay),
    against its budget's time (1 s for budgets without one) + 1 s."""
    rows = read(
        "SELECT m.id, m.kind, m.options, mv.ply, mv.created_at, p.kind, m.created_at"
        " FROM moves mv JOIN matches m ON m.id = mv.match_id"
        " JOIN players p ON p.id = mv.player_id ORDER BY m.id, mv.ply"
    )
    prev: dict[int, float] = {}
    waits: list[float] = []
    late = 0
    for mid, kind, options, ply, at, pkind, created in rows:
        began = prev.get(mid, created)
        prev[mid] = at
        if pkind != "agent" or (ply == 0 and kind == "eve"):
            continue
        opts = json.loads(options)
        seat = (opts.get("seats") or [None, None])[ply % 2] or {}
        budget = (seat.get("budget") or {}).get("time") or 1.0
        wait = at - began - (float(opts.get("delay", 0)) if kind == "eve" else 0.0)
        waits.append(max(0.0, wait))
        late += wait > budget + 1.0
    if not waits:
        return {"moves": 0}
    waits.sort()
    return {
        "moves": len(waits),
        "p50": round(statistics.median(waits), 3),
        "p95": round(percentile(waits, 0.95), 3),
        "max": round(waits[-1], 3),
        "over_budget_plus_1s": late,
    }


def engine_jobs(timings: Sequence[Any]) -> dict[str, Any]:
    """The engine's jobs apart: how long they waited in the queue, their worker loaded the
    agent, and they ran, for jobs a person waited for (urgent) and the others (bot matches,
    training, analyses)."""
    out: dict[str, Any] = {}
    for name, urgent in (("people", True), ("background", False)):
        jobs = [t for t in timings if t.urgent == urgent]
        out[name] = {"jobs": len(jobs)}
        for part in ("wait", "load", "run"):
            values = sorted(getattr(t, part) for t in jobs)
            if values:
                out[name][part] = {
                    "p50": round(statistics.median(values), 3),
                    "p95": round(percentile(values, 0.95), 3),
                    "max": round(values[-1], 3),
                }
    return out


#: What people own or did, as `Fuzzer.fingerprint` reads it: (name, query). Agents' moves,
#: and tournament games' matches (a round starts when the last game of the one before ends, in
#: the background), are left out: they come without a request.
FINGERPRINT: tuple[tuple[str, str], ...] = (
    ("players", "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM players"),
    (
        "matches",
        "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM matches"
        " WHERE options NOT LIKE '%\"tournament\":%'",
    ),
    ("resigned/stopped", "SELECT COUNT(*) FROM matches WHERE termination IN ('resign', 'stopped')"),
    ("challenges", "SELECT COUNT(*), COALESCE(GROUP_CONCAT(id || status), '') FROM challenges"),
    (
        "people's moves",
        "SELECT COUNT(*) FROM moves m JOIN players p ON p.id = m.player_id WHERE p.kind <> 'agent'",
    ),
    # a memory other than the bot's own (learning in the background from a bot match that
    # ended meanwhile creates those, whatever was refused)
    ("memories", "SELECT COUNT(*) FROM agent_memory_meta WHERE name <> 'default'"),
    # a server's settings, their log and each person's preferences
    (
        "settings",
        "SELECT COUNT(*), COALESCE(GROUP_CONCAT(guild_id || settings), '') FROM guild_settings",
    ),
    ("settings log", "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM settings_log"),
    (
        "preferences",
        "SELECT COUNT(*), COALESCE(GROUP_CONCAT(player_id || board), '') FROM member_prefs",
    ),
    # puzzle answers, scores and the daily posts
    ("puzzle scores", "SELECT COUNT(*), COALESCE(SUM(attempts), 0) FROM puzzle_scores"),
    ("puzzle attempts", "SELECT COUNT(*) FROM puzzle_attempts"),
    ("puzzle posts", "SELECT COUNT(*) FROM puzzle_posts"),
    *TOURNAMENT_ROWS,
)


def changed(before: tuple[Any, ...], after: tuple[Any, ...]) -> str:
    """What differs between two fingerprints of what people own (`FINGERPRINT`)."""
    names = [name for name, _sql in FINGERPRINT]
    return ", ".join(  # whole: a cut diff hides what changed
        f"{n} {a} -> {b}" for n, a, b in zip(names, before, after, strict=True) if a != b
    )
