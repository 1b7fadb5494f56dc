"""Time to the first screen, the prompt and the bot's first move at each level of `python bot.py`
in a pseudo-terminal, with numba's cache as it is or emptied first (a first run).

    python -m benchmarks.speed.first_run [--cold] [--warm-after] [--game G] [--level L ...]
    python -m benchmarks.speed.first_run --steps

Each (game, level) is one fresh start of the bot on a throw-away database: the prompt is
awaited, then `/play game:G opponent:L first:bot` is typed at once and the time from that line
to the bot's move is taken. `--cold` deletes the compiled kernels first, before every start, as
on a fresh clone: those of this working tree (`__pycache__/*.nbi`, `*.nbc`) and those of the user
cache folder (`engine.kernelcache.CACHE`). `--warm-after` starts the same level once more
without emptying anything (a warm start). Prints one line per start, then the machine's load.

`--ready` then waits for the console to say the engine is ready and prints how long that took
against the estimate the console gave at the start. `--steps` empties the caches and times each
step of the engine's warm-up plan in its order in one process, then each step alone from an
empty cache (`engine/warm.py`: its `COSTS` and `ALONE` tables come from here).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect

from benchmarks.measure import load
from engine.kernelcache import CACHE

ROOT = Path(__file__).resolve().parents[2]
GAMES = ("connect4", "othello")
LEVELS = ("easy", "medium", "hard", "expert")
#: The console's prompt, `name> `, as prompt_toolkit draws it (the space may be a cursor move).
_PROMPT = re.compile(r"\w>(?: |\x1b\[)")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|[\r\x07]")


@dataclass
class Figures:
    """One start: seconds from the start to the first screen and the prompt, from the request to
    the bot's move, the lines the bot showed about its engine meanwhile, and (`--ready`) from
    the start to the console's "engine is ready" and the estimate it gave first."""

    game: str
    level: str
    cold: bool
    first: float
    prompt: float
    move: float
    said: list[str]
    ready: float | None = None
    estimate: float | None = None


def empty_caches() -> None:
    """Delete every compiled kernel numba could load: a first run."""
    for sub in ("engine", "lobby", "db", "cogs"):
        for path in (ROOT / sub).rglob("*.nb[ic]"):
            path.unlink(missing_ok=True)
    shutil.rmtree(CACHE, ignore_errors=True)


def engine_lines(text: str) -> list[str]:
    """The lines of `text` that speak of the engine (its start, its progress, its estimates)."""
    lines = (line.strip() for line in _ANSI.sub("", text).split("\n"))
    return [line for line in lines if re.search(r"engine|kernel|compil|prepar", line, re.I)]


def start(game: str, level: str, cold: bool, timeout: float, ready: bool = False) -> Figures:
    """One start of the bot, one first move of `level` in `game`."""
    if cold:
        empty_caches()
    with tempfile.TemporaryDirectory(prefix="first-run-") as tmp:
        env = {**os.environ, "BOARDBOT_DB": f"{tmp}/first.db", "DISCORD_TOKEN": ""}
        t0 = time.monotonic()
        term = pexpect.spawn(
            sys.executable,
            [str(ROOT / "bot.py")],
            env=env,
            cwd=tmp,
            encoding="utf-8",
            timeout=timeout,
            dimensions=(50, 200),
        )
        said = ""
        term.expect("Board-game bot")
        first = time.monotonic() - t0
        term.expect(_PROMPT)
        prompt = time.monotonic() - t0
        said += term.before or ""
        asked = time.monotonic()
        term.sendline(f"/play game:{game} opponent:{level} first:bot")
        term.expect(rf"Bot \({level}\) \S+ plays")
        move = time.monotonic() - asked
        said += term.before or ""
        took = estimate = None
        if ready:
            term.expect("The game engine is ready", timeout=max(timeout, 900))
            took = time.monotonic() - t0
            said += term.before or ""
            found = re.search(r"about (\d+) s in all", _ANSI.sub("", said))
            estimate = float(found.group(1)) if found else None
        term.sendline("/quit")
        term.expect(pexpect.EOF)
        said += term.before or ""
    return Figures(game, level, cold, first, prompt, move, engine_lines(said), took, estimate)


STEPS = """
import sys, time
from engine.warm import warm_plan, warm_step
for step in warm_plan()[int(sys.argv[1]) : int(sys.argv[2])]:
    t = time.perf_counter()
    warm_step(step)
    print(f"    {step.key!r}: {max(0.1, time.perf_counter() - t):.1f},", flush=True)
"""


def steps() -> None:
    """Each warm-up step's seconds from an empty cache: in the plan's order (`COSTS`), then
    each alone (`ALONE`)."""
    from engine.warm import warm_plan

    empty_caches()
    t = time.monotonic()
    print("COSTS = {")
    subprocess.run([sys.executable, "-c", STEPS, "0", "999"], cwd=ROOT, check=True)
    print(f"}}  # all steps: {time.monotonic() - t:.1f} s (load {os.getloadavg()[0]:.1f})")
    print("ALONE = {")
    for i in range(len(warm_plan())):
        empty_caches()
        subprocess.run([sys.executable, "-c", STEPS, str(i), str(i + 1)], cwd=ROOT, check=True)
    print(f"}}  # load {os.getloadavg()[0]:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cold", action="store_true", help="empty numba's caches before each start"
    )
    parser.add_argument("--warm-after", action="store_true", help="then start each level warm")
    parser.add_argument("--game", choices=GAMES, action="append", help="default: both")
    parser.add_argument("--level", choices=LEVELS, action="append", help="default: all four")
    parser.add_argument("--verbose", action="store_true", help="print what the bot said")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per step")
    parser.add_argument("--ready", action="store_true", help="then wait for the whole warm-up")
    parser.add_argument("--steps", action="store_true", help="time each warm-up step cold")
    args = parser.parse_args()
    if args.steps:
        steps()
        return 0
    runs = [(g, lv) for g in args.game or GAMES for lv in args.level or LEVELS]
    for game, level in runs:
        modes = [args.cold, False] if args.warm_after else [args.cold]
        for cold in modes:
            f = start(game, level, cold, args.timeout, args.ready and cold)
            kind = "cold" if f.cold else "warm"
            print(
                f"{game:8} {level:6} {kind}: first screen {f.first:5.2f} s, prompt "
                f"{f.prompt:5.2f} s, first move {f.move:6.2f} s after asking  "
                f"(load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            if f.ready is not None:
                guess = "none" if f.estimate is None else f"{f.estimate:.0f} s"
                print(f"    whole warm-up {f.ready:.0f} s from the start (estimated: {guess})")
            if args.verbose:
                for line in f.said:
                    print(f"    | {line}")
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
