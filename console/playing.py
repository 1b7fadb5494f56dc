"""The commands that start, choose and play matches: /play, /challenge, /botmatch, /board
(/board text: the board in words), /matches, /switch, /resign, /hint, and the bot matches'
/stop, /watch and /wait."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from console.commands import BOTMATCH_DELAY
from console.tournaments import in_a_tournament
from console.training import running_training
from console.values import UsageError, check_name, match_number, offer_key
from engine.agents import registry
from engine.games.catalog import offer
from lobby import boards, present
from lobby.core import Snapshot

if TYPE_CHECKING:
    from console.session import Session


async def cmd_play(console: Session, opts: dict[str, str]) -> None:
    game = offer_key(opts["game"])
    level = opts["opponent"]
    if level.lower() in registry.LEVELS[offer(game).game]:
        level = level.lower()
    first = opts.get("first", "me").lower()
    # The console is the machine's owner: any agent spec (checked and bounded) is allowed.
    snap = await console.lobby.start_pve(console.person(), game, level, first, raw_ok=True)
    console.remember(snap, console.user)
    console.chosen[console.user] = snap.id
    console.show(snap)
    if snap.seat_to_move.is_agent and not console.interactive:
        await console.advance(snap.id)  # a script reads on once the bot has replied


async def cmd_challenge(console: Session, opts: dict[str, str]) -> None:
    opponent = check_name(opts["opponent"])
    game = offer_key(opts["game"])
    snap = await console.lobby.start_pvp(console.person(), console.person(opponent), game)
    console.remember(snap, console.user, opponent)
    console.chosen[console.user] = snap.id
    console.show(snap)


async def cmd_botmatch(console: Session, opts: dict[str, str]) -> None:
    game = offer_key(opts["game"])
    try:
        delay = float(opts.get("delay", BOTMATCH_DELAY))
    except ValueError:
        raise UsageError(f"delay must be a number of seconds, not {opts['delay']!r}") from None
    snap = await console.lobby.start_eve(
        game, opts["first"], opts["second"], delay=delay, starter=console.person(), raw_ok=True
    )
    console.remember(snap, console.user)
    console.botmatches.append(snap.id)
    console.show(snap)
    match_id = snap.id
    console.background(lambda: console.lobby.run_botmatch(match_id), f"bot match #{match_id}")


async def cmd_board(console: Session, opts: dict[str, str]) -> None:
    snap = await console.current(playable=False)
    if opts.get("action") == "text":
        console.write(f"#{snap.id} {boards.describe(snap)}")
        return
    console.show(snap)


async def cmd_matches(console: Session, opts: dict[str, str]) -> None:
    matches = await console.lobby.live_matches_of(console.person())
    if not matches:
        console.write(f"{console.user} has no live match.")
        return
    current = await console.current(playable=False)
    lines = [f"Live matches of {console.user} (moves go to the one marked >):"]
    for match in matches:
        snap = await console.lobby.snapshot(match.id)
        mark = ">" if snap.id == current.id else " "
        lines.append(f"{mark} {console.summary(snap)}")
    console.write("\n".join(lines))


async def cmd_switch(console: Session, opts: dict[str, str]) -> None:
    snap = await console.lobby.snapshot(match_number(opts["match"], "/matches"))
    me = await console.lobby.player_for(console.person())
    hot_seat = snap.id in console.matches.get(console.user, [])
    if snap.seat_index(me.id) is None and not hot_seat:
        raise UsageError(f"match #{snap.id} is not yours (see /matches)")
    if not snap.live:
        raise UsageError(f"match #{snap.id} is over")
    console.remember(snap, console.user)
    console.chosen[console.user] = snap.id
    console.write(f"Your moves now go to match #{snap.id}.")
    console.show(snap)


async def cmd_resign(console: Session, opts: dict[str, str]) -> None:
    snap = await console.current(playable=True)
    await console.lobby.resign(snap.id, console.mover(snap))


async def cmd_hint(console: Session, opts: dict[str, str]) -> None:
    snap = await console.current(playable=True)
    found, after = await console.lobby.hint(snap.id, console.person())
    console.write(present.hint_line(found, after, console.lobby.config.max_hints))
    if after.match.options.get("hints") == snap.match.options.get("hints"):
        console.write("(The same position as your last hint: this one was free.)")


async def running_botmatch(console: Session) -> Snapshot | None:
    """The live bot match this session started (or took up) last."""
    for match_id in reversed(console.botmatches):
        snap = await console.lobby.snapshot(match_id)
        if snap.live:
            return snap
    return None


async def cmd_stop(console: Session, opts: dict[str, str]) -> None:
    snap = await running_botmatch(console)
    if snap is not None:
        await console.lobby.stop(snap.id)
        return
    also = "; /train stop stops the training" if running_training(console) else ""
    raise UsageError(f"no bot match of this session is running{also}")


async def _to_watch(console: Session, opts: dict[str, str]) -> Snapshot:
    """The live bot match /watch names (default: the one this session started last)."""
    if "match" in opts:
        snap = await console.lobby.snapshot(match_number(opts["match"], "/matches"))
        if snap.match.kind != "eve":
            raise UsageError(
                f"match #{snap.id} is not a bot match: its moves show as they are played"
            )
    else:
        found = await running_botmatch(console)
        if found is None:
            raise UsageError("no bot match of this session is running: start one with /botmatch")
        snap = found
    if not snap.live:
        raise UsageError(f"match #{snap.id} is over (/replay match:{snap.id} draws it)")
    return snap


async def cmd_watch(console: Session, opts: dict[str, str]) -> None:
    snap = await _to_watch(console, opts)
    ended = console.endings.setdefault(snap.id, asyncio.Event())
    console.watched.add(snap.id)
    console.seen_ply.setdefault(snap.id, snap.match.ply)
    # One this process does not run yet: run it here (a tournament's plays on its own).
    if snap.id not in console.botmatches and not in_a_tournament(snap):
        console.resume_botmatch(snap)
    console.write(f"Watching match #{snap.id} until it ends.")
    waits = {asyncio.ensure_future(ended.wait())}
    if console.stop is not None:
        waits.add(asyncio.ensure_future(console.stop.wait()))
    try:
        if not (await console.lobby.snapshot(snap.id)).live:  # it ended meanwhile
            return
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
        console.endings.pop(snap.id, None)


async def cmd_wait(console: Session, opts: dict[str, str]) -> None:
    await console.wait()
