"""Time to the first screen, the prompt and the bot's first move of `python bot.py` in a
pseudo-terminal, with numba's cache as it is or emptied first (a first run).

    python benchmarks/first_run.py [--cold]

`--cold` deletes the compiled kernels of this working tree (`__pycache__/*.nbi`, `*.nbc`)
first, as on a fresh clone. Uses a throw-away database; prints one line of figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cold", action="store_true", help="empty numba's cache first")
    args = parser.parse_args()
    if args.cold:
        for sub in ("engine", "lobby", "db", "cogs"):
            for path in (ROOT / sub).rglob("*.nb[ic]"):
                path.unlink()
    with tempfile.TemporaryDirectory(prefix="first-run-") as tmp:
        env = {**os.environ, "BOARDBOT_DB": f"{tmp}/first.db", "DISCORD_TOKEN": ""}
        t0 = time.monotonic()
        term = pexpect.spawn(
            sys.executable, [str(ROOT / "bot.py")], env=env, cwd=tmp, encoding="utf-8", timeout=180
        )
        term.expect("Board-game bot")
        first = time.monotonic() - t0
        term.expect("> ")
        prompt = time.monotonic() - t0
        term.sendline("/play game:connect4 opponent:easy first:bot")
        term.expect(r"Bot \(easy\) 🔴 plays")
        move = time.monotonic() - t0
        term.sendline("/quit")
        term.expect(pexpect.EOF)
    kind = "first run (cold cache)" if args.cold else "run"
    print(f"{kind}: first screen {first:.2f} s, prompt {prompt:.2f} s, first bot move {move:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
