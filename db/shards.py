"""Which guilds' matches a bot process owns when the bot runs as several shard processes.

Discord sends a guild's events to shard ``(guild_id >> 22) % shard_count`` and direct messages
to shard 0; a process running a set of shards owns the matches of those guilds (matches with
no guild, from direct messages or the console, belong to shard 0). It resumes only those,
runs only their clocks, agent turns and bot matches. `Shards()` is the single process that owns
everything.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Discord's limit is far below this; the cap keeps a typo from building a huge set.
MAX_SHARDS = 4096


@dataclass(frozen=True)
class Shards:
    """`count` shards in all, of which this process runs `owned`."""

    count: int = 1
    owned: frozenset[int] = frozenset({0})

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ValueError(f"the shard count must be from 1 to {MAX_SHARDS}, not {self.count}")
        if not self.owned or not all(0 <= s < self.count for s in self.owned):
            raise ValueError(f"shards must be from 0 to {self.count - 1}")

    @property
    def whole(self) -> bool:
        """Whether this process owns every guild (no filtering needed)."""
        return len(self.owned) == self.count

    def shard_of(self, guild_id: int | None) -> int:
        """The shard Discord sends this guild's events to (0 for direct messages)."""
        return 0 if guild_id is None else (guild_id >> 22) % self.count

    def owns(self, guild_id: int | None) -> bool:
        return self.whole or self.shard_of(guild_id) in self.owned

    def where(self, column: str = "guild_id") -> str:
        """An SQL condition (to AND with others) true for this process's rows; both backends
        compute `>>` and `%` on 64-bit integers alike. Only validated integers go into it."""
        if self.whole:
            return "1 = 1"
        owned = ", ".join(str(s) for s in sorted(self.owned))
        shard = f"CASE WHEN {column} IS NULL THEN 0 ELSE ({column} >> 22) % {self.count} END"
        return f"({shard}) IN ({owned})"

    def label(self) -> str:
        """For logs and messages: 'shards 0-3 of 8', or 'all guilds'."""
        if self.count == 1:
            return "all guilds"
        return f"shards {_ranges(sorted(self.owned))} of {self.count}"


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 3, 6] -> '0-3,6'."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def parse_shards(count_text: str, shards_text: str) -> Shards:
    """`BOARDBOT_SHARD_COUNT` and `BOARDBOT_SHARDS` ('0-3', '0,2,5-7'; empty: all of them);
    ValueError with the reason for a bad value."""
    count_text, shards_text = count_text.strip(), shards_text.strip()
    if not count_text:
        if shards_text:
            raise ValueError("BOARDBOT_SHARDS needs BOARDBOT_SHARD_COUNT")
        return Shards()
    if not (count_text.isascii() and count_text.isdigit() and len(count_text) <= 5):
        raise ValueError(f"BOARDBOT_SHARD_COUNT={count_text[:40]!r} is not a whole number")
    count = int(count_text)
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"BOARDBOT_SHARD_COUNT={count}: expected 1 to {MAX_SHARDS}")
    if not shards_text:
        return Shards(count, frozenset(range(count)))
    owned: set[int] = set()
    for part in shards_text.split(","):
        low, dash, high = part.strip().partition("-")
        bounds = [low.strip(), high.strip()] if dash else [low.strip()]
        if not all(b.isascii() and b.isdigit() and len(b) <= 5 for b in bounds):
            raise ValueError(f"BOARDBOT_SHARDS={shards_text[:40]!r}: expected e.g. 0-3 or 0,2,5-7")
        first, last = int(bounds[0]), int(bounds[-1])
        if first > last or last >= count:
            raise ValueError(
                f"BOARDBOT_SHARDS={shards_text[:40]!r}: shards run from 0 to {count - 1}"
            )
        owned.update(range(first, last + 1))
    return Shards(count, frozenset(owned))
