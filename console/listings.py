"""The commands that list or draw what was played: /leaderboard, /stats, /history, /replay,
/analyse and /agents."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from console import render
from console.values import (
    UsageError,
    check_name,
    free_stem,
    game_name,
    looks_like_a_bot,
    match_number,
)
from engine.agents import registry
from engine.games.catalog import GAMES
from lobby import present
from lobby.moments import moment_lines

if TYPE_CHECKING:
    from console.session import Session

PROGRESS_AFTER = 2.0  # an analysis still running after this long gets a note


async def cmd_leaderboard(console: Session, opts: dict[str, str]) -> None:
    game = game_name(opts["game"])
    console.write(render.listing(present.leaderboard(game, await console.lobby.leaderboard(game))))


async def cmd_stats(console: Session, opts: dict[str, str]) -> None:
    wanted = opts.get("user", console.user)
    if looks_like_a_bot(wanted) and "chart" not in opts:  # one of the bot's players
        label, bot_rows = await console.lobby.bot_stats(wanted)
        console.write(render.listing(present.stats(label, bot_rows)))
        return
    name = check_name(wanted)
    player, rows = await console.lobby.stats(console.person(name))
    console.write(render.listing(present.stats(player.display_name, rows)))
    if "chart" not in opts:
        return
    chart = await console.lobby.rating_chart(player)
    if chart is None:
        console.write(f"No chart: {player.display_name} has no rated game yet.")
        return
    path = Path(opts["chart"])
    try:
        path.write_bytes(chart)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    console.write(f"Rating chart: {path} ({len(chart) // 1024 + 1} KB)")


async def cmd_history(console: Session, opts: dict[str, str]) -> None:
    wanted = opts.get("user", console.user)
    if looks_like_a_bot(wanted):  # one of the bot's players
        label, bot_rows = await console.lobby.bot_history(wanted)
        console.write(render.listing(present.history(label, bot_rows)))
        return
    name = check_name(wanted)
    player, rows = await console.lobby.history(console.person(name))
    console.write(render.listing(present.history(player.display_name, rows)))


async def cmd_replay(console: Session, opts: dict[str, str]) -> None:
    match_id = match_number(opts["match"], "/history") if "match" in opts else None
    folder = Path(opts.get("dir", "."))
    if not folder.is_dir():
        raise UsageError(f"{str(folder)!r} is not a folder")
    files = await console.lobby.replay(match_id, console.person())
    stem = free_stem(folder.resolve(), f"replay-{files.replay.match_id}", ("gif", "png"))
    written = []
    for suffix, data in (("gif", files.gif), ("png", files.png)):
        path = stem.with_name(f"{stem.name}.{suffix}")
        try:
            with path.open("xb") as f:  # never over a file that appeared meanwhile
                f.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        written.append(f"{path.name} ({len(data) // 1024 + 1} KB)")
    console.write(
        f"Match #{files.replay.match_id}: wrote {' and '.join(written)} in {stem.parent}."
    )


async def cmd_analyse(console: Session, opts: dict[str, str]) -> None:
    match_id = match_number(opts["match"], "/history") if "match" in opts else None
    files = {key: Path(opts[key]) for key in ("gif", "chart") if key in opts}
    for path in files.values():
        if not path.parent.is_dir():
            raise UsageError(f"{str(path.parent)!r} is not a folder")
    job = asyncio.ensure_future(console.lobby.analyse(match_id, console.person()))
    done, _ = await asyncio.wait({job}, timeout=PROGRESS_AFTER)
    if not done:  # a note while it runs; the answer follows
        console.write(
            f"Analysing {'your last match' if match_id is None else f'match #{match_id}'}"
            " with the solvers (a few seconds)..."
        )
    report = await job
    a, names = report.analysis, report.replay.names
    console.write(present.analysis_title(report.replay.match_id, report.replay.game))
    console.write("\n".join(present.analysis_table(a, names)))
    console.write("\n".join(present.analysis_lines(a, names, report.replay.result)))
    console.write("\n".join(["Key moments:", *moment_lines(a, names)]))
    console.write(f"Try your mistakes again: /retry match:{report.replay.match_id}")
    for key, label, data in (("gif", "Replay", report.gif), ("chart", "Win chance", report.chart)):
        if key not in files:
            continue
        try:
            files[key].write_bytes(data)
        except OSError as exc:
            raise UsageError(f"cannot write {files[key]}: {exc.strerror or exc}") from None
        console.write(f"{label}: {files[key]} ({len(data) // 1024 + 1} KB)")


async def cmd_agents(console: Session, opts: dict[str, str]) -> None:
    games = [game_name(opts["game"])] if "game" in opts else list(GAMES)
    lines = []
    for game in games:
        title = present.game_title(game)
        lines.append(f"{title} levels:")
        for name, level in registry.LEVELS[game].items():
            lines.append(f"  {name:<8} {level.spec.label()} {level.description}")
        lines.append(f"{title} agents (usable as opponent: or first:):")
        for overview in await console.lobby.agents_overview(game):
            heading, details = present.agent_lines(overview)
            lines.append(f"  **{heading}**")
            for detail in details:
                lines += [f"      {part}" for part in detail.splitlines()]
    console.write("\n".join(lines))
