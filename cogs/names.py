"""Names people chose, made safe to show on Discord: their markdown and mentions escaped, so a
nickname can neither ping anyone nor show as a link, a heading, code or a second line."""

from __future__ import annotations

import re

#: Put after every `@`: no `@everyone`, `@here`, `<@id>` or `<@&role>` survives as a mention.
ZERO_WIDTH = "\u200b"
#: Every character Discord's markdown gives a meaning (a backslash shows it as it is).
# discord.utils.escape_markdown is not enough: it escapes only the start of the longest
# `[...](...)` it finds and leaves what follows it, bold and code included, as markdown.
_MARKDOWN = re.compile(r"([\\*_~|`>#\[\]<:])")


#: Names are shown up to this many characters (Discord's own names have at most 32; a longer
#: stored name must not push a listing past an embed's limits).
MAX_SHOWN = 64


def safe_name(name: str) -> str:
    """`name` as literal text in a Discord message or embed, cut to `MAX_SHOWN` characters."""
    text = " ".join(name.splitlines())  # one line: a name cannot fake a line of its own
    if len(text) > MAX_SHOWN:
        text = text[: MAX_SHOWN - 1] + "…"
    return _MARKDOWN.sub(r"\\\1", text).replace("@", "@" + ZERO_WIDTH)


#: What makes markdown inside a line (an error reply starts with its sign: nothing in it is at
#: the start of a line, where `#`, `>` and `-` would count).
_INLINE = re.compile(r"([\\*_~|`\[\]<])")


def safe_line(text: str) -> str:
    """A line of the bot's own words that may quote names and typed values (an error reply):
    their markdown, links and mentions shown as typed. The bot's words use no markdown."""
    text = " ".join(text.splitlines())
    return _INLINE.sub(r"\\\1", text).replace("@", "@" + ZERO_WIDTH)
