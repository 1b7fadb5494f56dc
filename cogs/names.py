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


def safe_name(name: str) -> str:
    """`name` as literal text in a Discord message or embed."""
    text = " ".join(name.splitlines())  # one line: a name cannot fake a line of its own
    return _MARKDOWN.sub(r"\\\1", text).replace("@", "@" + ZERO_WIDTH)


def safe_line(text: str) -> str:
    """A line of the bot's own words that may quote names (an error reply): mentions and
    links made literal, its other markdown kept."""
    text = text.replace("[", "\\[").replace("<", "\\<")
    return text.replace("@", "@" + ZERO_WIDTH)
