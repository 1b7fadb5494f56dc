"""What the fuzz run's members send to `/tournament` (`fuzz.py` runs them): create with options
from and around the valid ones (every bound and one past it, the wrong type, games and formats
no client offers), join, one of the bot's players entered by a name from and around the valid
ones (raw specs with hostile values, mentions, markdown), leave, start, standings and cancel;
by members, the moderator and the tournaments' creators, in the run's channels, the second
server's and a DM. A refusal must change no row (the run's fingerprint covers the tournaments,
their entrants and their first rounds); at the end, what the store holds keeps the rules
(`tournament_rules`), and the limits are probed at N and N+1 (`check_tournament_limits`)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from benchmarks.robustness.fuzz_inputs import HOSTILE, Inputs, Interactions, Read, opponent_name
from engine.agents import opponents
from engine.games.catalog import OFFERS
from lobby.pairing import FORMATS
from lobby.records import LobbyConfig
from lobby.tournaments import MAX_CLOCK, MAX_ROUNDS, MAX_START_MINUTES, MIN_CLOCK
from tests.harness import Call, user
from tests.harness.mentions import HOSTILE_PARTS

#: Where a request comes from: (server, channel); (None, None) is a DM.
Place = tuple[int | None, int | None]
GAMES = ["connect4", "othello", "chess", "CONNECT4", "c4", "", " ", "x" * 200, "²"]
FORMAT_VALUES = ["swiss", "round-robin", "knockout", "Swiss", "round robin", "", "x" * 200]
#: The number options: (name, values from and around the valid ones).
NUMBERS: list[tuple[str, list[int]]] = [
    ("rounds", [1, 2, MAX_ROUNDS, 0, MAX_ROUNDS + 1, -1, 10**21]),
    ("clock", [int(MIN_CLOCK), int(MAX_CLOCK), int(MIN_CLOCK) - 1, int(MAX_CLOCK) + 1, 0, -30]),
    ("start", [1, MAX_START_MINUTES, 0, MAX_START_MINUTES + 1, -1, 10**21]),
]
#: What no client sends for a whole number: (Discord type, value).
WRONG_TYPE: list[tuple[int, Any]] = [
    (10, 2.5),
    (10, math.nan),
    (10, math.inf),
    (10, -0.0),
    (3, "3"),
    (3, "nan"),
    (3, ""),
]
#: What a refused request must not change (in `fuzz.py`'s fingerprint): (name, query). The
#: tournaments made, started or cancelled (one that ends is still started: its games end in
#: the background), their entrants and those who left, their first rounds (later rounds come
#: from games ending).
FINGERPRINT: tuple[tuple[str, str], ...] = (
    ("tournaments", "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM tournaments"),
    (
        "tournaments' states",
        "SELECT COALESCE(GROUP_CONCAT(state, ' '), '') FROM (SELECT id || ':' ||"
        " (CASE status WHEN 'finished' THEN 'running' ELSE status END) AS state"
        " FROM tournaments ORDER BY id)",
    ),
    ("entrants", "SELECT COUNT(*), COUNT(left_at) FROM tournament_entrants"),
    ("first rounds", "SELECT COUNT(*) FROM tournament_games WHERE round = 1"),
)
#: What `tournament_rules` counts that must be 0.
TOURNAMENT_RULES = ("bad_tournaments", "channels_with_two", "servers_over_limit")
#: (subcommand, weight)
SUBCOMMANDS = [
    ("create", 3.0),
    ("join", 3.0),
    ("enter", 1.5),
    ("leave", 1.0),
    ("start", 1.5),
    ("standings", 1.0),
    ("cancel", 0.6),
]


@dataclass(eq=False)
class TournamentInputs(Inputs):
    """The /tournament interactions of the run."""

    #: Who last created a tournament where (they may enter bots, start and cancel it there).
    creators: dict[Place, Any] = field(default_factory=dict)

    @property
    def places(self) -> list[Place]:
        """The run's two channels and a channel of the second server (a DM is (None, None))."""
        return [*((self.guilds[0], c) for c in self.channels), (self.guilds[1], self.channels[0])]

    async def gen_tournament(self) -> list[Call]:
        """One /tournament subcommand, somewhere, by someone."""
        rng = self.rng
        names, weights = zip(*SUBCOMMANDS, strict=True)
        sub = rng.choices(names, weights)[0]
        place = (None, None) if rng.random() < 0.03 else rng.choice(self.places)
        who = rng.choice(self.people)
        if sub in ("enter", "start", "cancel"):
            roll = rng.random()
            if roll < 0.4 and place in self.creators:
                who = self.creators[place]
            elif roll < 0.6:
                who = self.mod
        options: list[dict[str, Any]] = []
        if sub == "create":
            options = self.create_options()
        elif sub == "enter":
            options = [{"name": "bot", "type": 3, "value": self.bot_name()}]
        command = "tournament join" if sub == "enter" else f"tournament {sub}"
        calls = await self.h.slash(
            command, options, user=who, guild_id=place[0], channel_id=place[1],
            expect_response=False,
        )  # fmt: skip
        if sub == "create" and any(c.is_callback and not c.ephemeral for c in calls):
            self.creators[place] = who
        return calls

    def create_options(self) -> list[dict[str, Any]]:
        """A game, a format and some of the number options, from and around the valid ones."""
        rng = self.rng
        game = rng.choice(GAMES) if rng.random() < 0.2 else rng.choice(GAMES[:2])
        fmt = rng.choice(FORMAT_VALUES) if rng.random() < 0.2 else rng.choice(FORMAT_VALUES[:3])
        options: list[dict[str, Any]] = [
            {"name": "game", "type": 3, "value": game},
            {"name": "format", "type": 3, "value": fmt},
        ]
        for name, values in NUMBERS:
            if rng.random() < 0.35:
                kind, value = 4, rng.choice(values)
                if rng.random() < 0.15:
                    kind, value = rng.choice(WRONG_TYPE)
                options.append({"name": name, "type": kind, "value": value})
        return options

    def bot_name(self) -> str:
        """One of the bot's players by a name from and around the valid ones."""
        rng = self.rng
        game = rng.choice([o.game for o in OFFERS])
        roll = rng.random()
        if roll < 0.5:
            name = rng.choice(opponents.names(game))
        elif roll < 0.75:
            name = opponent_name(rng, game)
        elif roll < 0.9:
            name = " ".join(rng.sample(HOSTILE_PARTS, rng.randint(1, 3)))
        else:
            name = rng.choice(HOSTILE)
        return name[:100] or "x"


async def check_tournament_limits(inputs: Interactions, cfg: LobbyConfig, guild: int) -> None:
    """A server's tournaments and a tournament's players, each at exactly N (allowed) and N+1
    (refused, saying which limit), in a server of their own; cancelled after."""
    mod = inputs.mod
    channels = [guild + 1 + i for i in range(cfg.max_tournaments + 1)]
    made = 0
    for i, channel in enumerate(channels):
        calls = await inputs.h.slash(
            "tournament create", {"game": "connect4", "format": "swiss"}, user=mod,
            guild_id=guild, channel_id=channel, expect_response=False,
        )  # fmt: skip
        created = any(c.is_callback and not c.ephemeral for c in calls)
        limited = any(c.ephemeral and "limit" in (c.content or "") for c in calls)
        made += created
        ok = limited if i == cfg.max_tournaments else created
        _judge(inputs, f"tournaments at {i + 1}", ok, calls)
    most = cfg.max_tournament_players
    for i in range(most + 1):
        member = user(9500 + i, f"entrant {i}")
        calls = await inputs.h.slash(
            "tournament join", {}, user=member, guild_id=guild, channel_id=channels[0],
            expect_response=False,
        )  # fmt: skip
        said = " ".join(c.content or "" for c in calls if c.ephemeral)
        ok = "full" in said if i == most else said.startswith("You are in")
        _judge(inputs, f"tournament players at {i + 1}", ok, calls)
    for channel in channels[:made]:
        await inputs.h.slash(
            "tournament cancel", {}, user=mod, guild_id=guild, channel_id=channel,
            expect_response=False,
        )  # fmt: skip


def _judge(inputs: Interactions, label: str, ok: bool, calls: list[Call]) -> None:
    inputs.stats["limits_checked"] += 1
    if not ok:
        inputs.stats["limit_failures"] += 1
        inputs.details.append(f"limit {label}: {[c.content for c in calls]}"[:300])


def tournament_rules(read: Read, cfg: LobbyConfig, details: list[str]) -> dict[str, int]:
    """What the store holds at the end, against the rules a request is checked by: counts of
    tournaments breaking each (all 0 on a correct bot)."""
    rows = read(
        "SELECT id, guild_id, channel_id, game, format, rounds, typeof(rounds), turn_seconds,"
        " starts_at, created_at, status,"
        " (SELECT COUNT(*) FROM tournament_entrants e WHERE e.tournament_id = t.id),"
        " EXISTS (SELECT 1 FROM tournament_games g WHERE g.tournament_id = t.id)"
        " FROM tournaments t ORDER BY id"
    )
    counts = Counter[str]()
    active: Counter[tuple[Any, ...]] = Counter()
    for tid, guild, channel, game, fmt, rounds, kind, clock, starts, created, status, n, _ in rows:
        broken = []
        if game not in {o.key for o in OFFERS}:
            broken.append(f"game {game!r}")
        if fmt not in FORMATS:
            broken.append(f"format {fmt!r}")
        if kind not in ("integer", "null") or (
            status == "open" and rounds is not None and (fmt != "swiss" or rounds > MAX_ROUNDS)
        ):
            broken.append(f"rounds {rounds!r}")
        if clock is not None and not MIN_CLOCK <= clock <= MAX_CLOCK:
            broken.append(f"clock {clock!r}")
        if starts is not None and not 55 <= starts - created <= 60 * MAX_START_MINUTES + 5:
            broken.append(f"start {starts - created!r} s after its creation")
        if guild is None:
            broken.append("outside a server")
        if n > cfg.max_tournament_players:
            broken.append(f"{n} entrants")
        if broken:
            counts["bad_tournaments"] += 1
            details.append(f"tournament {tid}: {', '.join(broken)}")
        if status in ("open", "running"):
            active[(guild, channel)] += 1
            active[(guild,)] += 1
    counts["channels_with_two"] = sum(1 for k, v in active.items() if len(k) == 2 and v > 1)
    counts["servers_over_limit"] = sum(
        1 for k, v in active.items() if len(k) == 1 and v > cfg.max_tournaments
    )
    counts["tournaments"] = len(rows)
    counts["started"] = sum(1 for r in rows if r[-1])  # its first round was paired
    return dict(counts)
