"""The .env file next to bot.py, read as a shell would."""

from __future__ import annotations

import io
from pathlib import Path

from boot.errors import ConfigError


def read_dotenv(path: Path) -> dict[str, str]:
    """The .env file's settings, read as a shell would (`export`, quotes, # comments); a
    line it cannot read stops the start with one line naming it."""
    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"config error: cannot read {path}: {exc}") from None
    bad = next((b.original.line for b in parse_stream(io.StringIO(text)) if b.error), None)
    if bad is not None:  # dotenv_values would skip it with a warning: a setting lost unseen
        raise ConfigError(f"config error: {path}, line {bad}: expected NAME=value")
    # Values as written: no ${NAME} expansion (a password may hold a '$').
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    return {key: value for key, value in values.items() if value is not None}
