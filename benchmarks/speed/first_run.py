"""Time to the first screen, the prompt and the bot's first move at each level of `python bot.py`
in a pseudo-terminal, with numba's cache as it is or empty (a first run).

    python -m benchmarks.speed.first_run [--cold] [--warm-after] [--game G] [--level L ...]
    python -m benchmarks.speed.first_run --cold --busy 2 --ready
    python -m benchmarks.speed.first_run --steps
    python -m benchmarks.speed.first_run --kernels

Each (game, level) is one fresh start of the bot on a throw-away database: the prompt is
awaited, then `/play game:G opponent:L first:bot` is typed at once and the time from that line
to the bot's move is taken. `--cold` starts it on an empty cache folder of its own
(`NUMBA_CACHE_DIR`, a temporary folder: the user's cache, which other processes use, is never
touched), as on a fresh clone; `--warm-after` starts the same level once more on a cache folder
of its own that holds every kernel of the warm-up's plan (a warm start: filled once, first).
Without `--cold` the bot uses the user's cache as it is. `--busy N` runs N busy loops meanwhile
(a machine whose other work wants the CPU too).

Each line gives the seconds and the CPU seconds the bot's process had used at its prompt (the
latter hardly depends on the machine's load: it is the work done before the prompt), and the
CPU seconds of the bot and its engine workers during the first move. Then the machine's load.

`--ready` then waits for the console to say the engine is ready and prints how long that took
against the estimate the console gave at the start. A cold start after the first starts with the
compile times the ones before it recorded (`engine.warm.RECORD`), as after an update: its
estimate is made from this machine's figures. `--steps` times each step of the engine's
warm-up plan in its order in one process from an empty cache, then each step alone from an
empty cache (`engine/warm.py`: its `COSTS` and `ALONE` tables come from here). `--kernels`
counts the engine's kernels each step compiles from an empty cache in the plan's order (its
`KERNELS` table).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pexpect

from benchmarks.measure import load

ROOT = Path(__file__).resolve().parents[2]
GAMES = ("connect4", "othello")
LEVELS = ("easy", "medium", "hard", "expert")
#: The console's prompt, `name> `, as prompt_toolkit draws it (the space may be a cursor move).
_PROMPT = re.compile(r"\w>(?: |\x1b\[)")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|[\r\x07]")
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    """One start: seconds from the start to the first screen and the prompt, the CPU seconds
    of the bot's process at its prompt, from the request to the bot's move (and the CPU
    seconds of the bot and its workers meanwhile), the lines the bot showed about its engine,
    and (`--ready`) from the start to the console's "engine is ready" and the estimate it gave
    first."""

    game: str
    level: str
    cold: bool
    first: float
    prompt: float
    prompt_cpu: float
    move: float
    move_cpu: float
    said: list[str]
    ready: float | None = None
    estimate: float | None = None
    #: (`--ready`) the progress line's estimates: seconds from the start, then the seconds
    #: it said were left, and those that were
    lefts: list[tuple[float, float, float]] = field(default_factory=list)


def cpu_seconds(pid: int) -> float:
    """The CPU seconds (user and system) the process `pid` and its live children have used."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):  # itself, or a child
            total += (int(fields[11]) + int(fields[12])) / _TICKS
    return total


def own_cpu(pid: int) -> float:
    """The CPU seconds the process `pid` alone has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def engine_lines(text: str) -> list[str]:
    """The lines of `text` that speak of the engine (its start, its progress, its estimates)."""
    lines = (line.strip() for line in _ANSI.sub("", text).split("\n"))
    return [line for line in lines if re.search(r"engine|kernel|compil|prepar", line, re.I)]


def start(
    game: str, level: str, cache: Path | None, timeout: float, ready: bool = False
) -> Figures:
    """One start of the bot (on the numba cache folder `cache`, else the user's), one first
    move of `level` in `game`."""
    with tempfile.TemporaryDirectory(prefix="first-run-") as tmp:
        env = {**os.environ, "BOARDBOT_DB": f"{tmp}/first.db", "DISCORD_TOKEN": ""}
        if cache is not None:
            env["NUMBA_CACHE_DIR"] = str(cache)
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
        prompt_cpu = own_cpu(term.pid)
        said += term.before or ""
        asked = time.monotonic()
        cpu = cpu_seconds(term.pid)
        term.sendline(f"/play game:{game} opponent:{level} first:bot")
        term.expect(rf"Bot \({level}\) \S+ plays")
        move = time.monotonic() - asked
        move_cpu = cpu_seconds(term.pid) - cpu
        said += term.before or ""
        took = estimate = None
        lefts: list[tuple[float, float]] = []
        while ready:  # the progress line's estimates, until the engine is ready
            i = term.expect(
                [r"about (\d+) s left", "The game engine is ready"], timeout=max(timeout, 900)
            )
            said += (term.before or "") + str(term.after)
            if i == 1:
                took = time.monotonic() - t0
                break
            lefts.append((time.monotonic() - t0, float(term.match.group(1))))
        if ready:
            found = re.search(r"about (\d+) s in all", _ANSI.sub("", said))
            estimate = float(found.group(1)) if found else None
        term.sendline("/quit")
        term.expect(pexpect.EOF)
        said += term.before or ""
    return Figures(
        game,
        level,
        cache is not None,
        first,
        prompt,
        prompt_cpu,
        move,
        move_cpu,
        engine_lines(said),
        took,
        estimate,
        [(at, left, (took or at) - at) for at, left in lefts],
    )


@contextlib.contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """`n` processes that spin on the CPU meanwhile."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(0, n))]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


STEPS = """
import sys, time
from engine.warm import warm_plan, warm_step
for step in warm_plan()[int(sys.argv[1]) : int(sys.argv[2])]:
    t = time.perf_counter()
    warm_step(step)
    print(f"    {step.key!r}: {max(0.1, time.perf_counter() - t):.1f},", flush=True)
"""


def steps() -> None:
    """Each warm-up step's seconds from an empty cache (a cache folder of its own): in the
    plan's order (`COSTS`), then each alone (`ALONE`)."""
    from engine.warm import warm_plan

    def run(first: int, last: int) -> None:
        with tempfile.TemporaryDirectory(prefix="first-run-cache-") as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            command = [sys.executable, "-c", STEPS, str(first), str(last)]
            subprocess.run(command, cwd=ROOT, env=env, check=True)

    t = time.monotonic()
    print("COSTS = {")
    run(0, 999)
    print(f"}}  # all steps: {time.monotonic() - t:.1f} s (load {os.getloadavg()[0]:.1f})")
    print("ALONE = {")
    for i in range(len(warm_plan())):
        run(i, i + 1)
    print(f"}}  # load {os.getloadavg()[0]:.1f}")


KERNEL_COUNTS = """
from engine.warm import compiled_kernels, warm_plan, warm_step
for step in warm_plan():
    before = compiled_kernels()
    warm_step(step)
    print(f"    {step.key!r}: {compiled_kernels() - before},", flush=True)
"""


def kernels() -> None:
    """The engine's kernels each warm-up step compiles from an empty cache (a cache folder of
    its own), in the plan's order (`KERNELS`)."""
    with tempfile.TemporaryDirectory(prefix="first-run-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        print("KERNELS: dict[str, int] = {", flush=True)
        subprocess.run([sys.executable, "-c", KERNEL_COUNTS], cwd=ROOT, env=env, check=True)
        print("}", flush=True)


def fill(cache: Path) -> None:
    """Compile every step of the warm-up plan into the cache folder `cache` (a warm start's)."""
    t = time.monotonic()
    code = "from engine.warm import warm_plan, warm_step\nfor s in warm_plan(): warm_step(s)"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    print(f"(a cache for the warm starts filled in {time.monotonic() - t:.0f} s)", flush=True)


def report(f: Figures, verbose: bool) -> None:
    """One start's line (and what the bot said, `verbose`)."""
    kind = "cold" if f.cold else "warm"
    print(
        f"{f.game:8} {f.level:6} {kind}: first screen {f.first:5.2f} s, prompt {f.prompt:5.2f} s"
        f" ({f.prompt_cpu:4.2f} s CPU), first move {f.move:6.2f} s after asking"
        f" ({f.prompt + f.move:6.2f} s from the start; {f.move_cpu:5.2f} s CPU)"
        f"  (load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    if f.ready is not None:
        guess = "none" if f.estimate is None else f"{f.estimate:.0f} s"
        print(f"    whole warm-up {f.ready:.0f} s from the start (estimated: {guess})")
        for at, said, left in f.lefts[:: max(1, len(f.lefts) // 8)]:
            print(f"    at {at:5.1f} s: about {said:.0f} s left said, {left:.0f} s were")
    if verbose:
        for line in f.said:
            print(f"    | {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cold", action="store_true", help="start on an empty numba cache of its own"
    )
    parser.add_argument("--warm-after", action="store_true", help="then start each level warm")
    parser.add_argument("--game", choices=GAMES, action="append", help="default: both")
    parser.add_argument("--level", choices=LEVELS, action="append", help="default: all four")
    parser.add_argument("--verbose", action="store_true", help="print what the bot said")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per step")
    parser.add_argument("--ready", action="store_true", help="then wait for the whole warm-up")
    parser.add_argument("--busy", type=int, default=0, help="busy loops meanwhile (default 0)")
    parser.add_argument("--steps", action="store_true", help="time each warm-up step cold")
    parser.add_argument("--kernels", action="store_true", help="count each step's kernels")
    args = parser.parse_args()
    if args.steps:
        steps()
        return 0
    if args.kernels:
        kernels()
        return 0
    runs = [(g, lv) for g in args.game or GAMES for lv in args.level or LEVELS]
    with tempfile.TemporaryDirectory(prefix="first-run-filled-") as filled:
        if args.warm_after:
            fill(Path(filled))
        with busy_loops(args.busy):
            for game, level in runs:
                with tempfile.TemporaryDirectory(prefix="first-run-cache-") as folder:
                    cache = Path(folder) if args.cold else None
                    ready = args.ready and args.cold
                    if cache is not None and (Path(filled) / "record").is_dir():
                        print("    (with the compile times the cold start before recorded)")
                        shutil.copytree(Path(filled) / "record", cache / "kernels" / "seconds")
                    report(start(game, level, cache, args.timeout, ready), args.verbose)
                    if cache is not None and (cache / "kernels" / "seconds").is_dir():
                        shutil.copytree(
                            cache / "kernels" / "seconds",
                            Path(filled) / "record",
                            dirs_exist_ok=True,
                        )
                if args.warm_after:
                    f = start(game, level, Path(filled), args.timeout)
                    f.cold = False
                    report(f, args.verbose)
    print(load() + (f", {args.busy} busy loops" if args.busy else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
