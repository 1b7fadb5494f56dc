"""Each server's settings: where games may be started, the turn clock, the limits on what a
member and the server may have running, which games and levels are offered, whether hints and
analyses are allowed in rated games, and the channel for announcements.

A setting a server never set is the bot's own (`LobbyConfig`, from the environment). Every value
is checked here against the same bounds as the slash options before the store sees it, and a
change is stored with who made it (`store.settings`, one transaction with its log row) and
logged. Starts read a server's settings at every start, so they are kept for a few seconds per
process (a change made here shows at once; one made by another shard process within
`CACHE_SECONDS`). The console's one "server" is `CONSOLE_SERVER`: a lobby whose config names a
`home_server` uses that server's settings where a request comes from no server.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from db.settings import SettingsChange
from db.store import Store
from engine.agents import registry
from engine.games.catalog import OFFERS
from lobby.boundary import boundary
from lobby.errors import BadRequest
from lobby.people import People
from lobby.records import LobbyConfig, Person, Where
from lobby.starting import offer_named

log = logging.getLogger(__name__)

#: The console's one server (Discord's ids are far larger).
CONSOLE_SERVER = 0
CACHE_SECONDS = 10.0
MAX_CACHED = 10_000
#: At most this many channels where games may be started.
MAX_CHANNELS = 25
MAX_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Spec:
    """One setting: its kind (`ids`, `number`, `count`, `keys`, `switch`, `id`), bounds, the
    words it is shown with and, for `keys`, the values it may take."""

    kind: str
    label: str
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()


#: Every setting a server may change, in the order they are shown.
SPECS: dict[str, Spec] = {
    "channels": Spec("ids", "Channels where games may be started", 1, MAX_CHANNELS),
    "turn_seconds": Spec("number", "Turn clock (seconds)", 30, 7 * 86400),
    "bot_games": Spec("count", "Games against the bot per member", 0, 100),
    "bot_matches": Spec("count", "Bot matches per member", 0, 100),
    "server_bot_matches": Spec("count", "Bot matches in the server", 0, 1000),
    "challenges": Spec("count", "Open challenges per member", 0, 100),
    "games": Spec("keys", "Games offered", choices=tuple(o.key for o in OFFERS)),
    "levels": Spec("keys", "Levels offered", choices=registry.LEVEL_NAMES),
    "rated_hints": Spec("switch", "Hints in rated games"),
    "rated_analysis": Spec("switch", "Analyses of rated games"),
    "announcements": Spec("id", "Announcement channel"),
}
#: The settings that are the bot's clock and limits: the `LobbyConfig` field of each.
CONFIG_FIELDS = {
    "turn_seconds": "turn_seconds",
    "bot_games": "max_bot_games",
    "bot_matches": "max_botmatches",
    "server_bot_matches": "max_guild_botmatches",
    "challenges": "max_pending_challenges",
}


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """A server's settings as they apply: the values it set (`values`) over the bot's own
    (`config`), who changed them last (their name) and when."""

    guild_id: int | None
    values: Mapping[str, Any]
    config: LobbyConfig
    changed_by: str | None = None
    changed_at: float | None = None

    def value(self, name: str) -> Any:
        """A setting's value: the server's, else the bot's (None: no limit, anywhere, all)."""
        if name in self.values:
            value = self.values[name]
            return (value or None) if SPECS[name].kind == "count" else value
        if name in CONFIG_FIELDS:
            return getattr(self.config, CONFIG_FIELDS[name])
        return True if SPECS[name].kind == "switch" else None

    def is_set(self, name: str) -> bool:
        return name in self.values

    @property
    def lobby_config(self) -> LobbyConfig:
        """The bot's settings with this server's clock and limits (0: no limit)."""
        fields = {field: self.value(name) for name, field in CONFIG_FIELDS.items()}
        return dataclasses.replace(self.config, **fields)

    def offered(self, name: str, key: str | None) -> bool:
        """Whether a game (`games`) or level (`levels`) is offered here (None: not a level)."""
        chosen = self.value(name)
        return key is None or chosen is None or key in chosen


def check(name: str, value: Any) -> Any:
    """A setting's value as it is stored, checked; BadRequest naming the setting and its
    bounds. None: back to the bot's own."""
    spec = SPECS.get(name)
    if spec is None:
        raise BadRequest(f"there is no setting {name!r}: choose one of {', '.join(SPECS)}")
    if value is None:
        return None
    if spec.kind == "switch":
        if type(value) is not bool:
            raise BadRequest(f"{name} is on or off")
        return value
    if spec.kind in ("number", "count"):
        ok = type(value) in (int, float) and math.isfinite(value) and spec.low <= value <= spec.high
        if not ok or (spec.kind == "count" and value != int(value)):
            whole = "a whole number" if spec.kind == "count" else "a number"
            raise BadRequest(f"{name} must be {whole} from {spec.low:g} to {spec.high:g}")
        return int(value) if spec.kind == "count" or value == int(value) else float(value)
    if spec.kind == "id":
        return _channel(name, value)
    items = list(value) if isinstance(value, (list, tuple)) else None
    if items is None or not items:
        raise BadRequest(f"{name} needs at least one value")
    if spec.kind == "ids":
        if len(items) > spec.high:
            raise BadRequest(f"{name}: at most {spec.high:g} channels")
        return sorted({_channel(name, v) for v in items})
    unknown = [str(v)[:20] for v in items if v not in spec.choices]
    if unknown:
        raise BadRequest(f"{name}: {', '.join(unknown)} is not one of {', '.join(spec.choices)}")
    return [c for c in spec.choices if c in items]  # in the usual order, once each


def _channel(name: str, value: Any) -> int:
    if type(value) is not int or not 0 < value <= MAX_ID:
        raise BadRequest(f"{name}: {str(value)[:24]!r} is not a channel")
    return value


class NotHere(BadRequest):
    """A game started where this server does not play them; `channels` says where it does."""

    def __init__(self, channels: Iterable[int]) -> None:
        self.channels = tuple(channels)
        super().__init__("this server plays its games in other channels")


class Settings:
    """Each server's settings, over `store.settings`."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        people: People,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._config = config
        self._people = people
        self._monotonic = monotonic
        self._cache: dict[int, tuple[ServerSettings, float]] = {}

    def _server(self, guild_id: int | None) -> int | None:
        return self._config.home_server if guild_id is None else guild_id

    async def of(self, guild_id: int | None) -> ServerSettings:
        """A server's settings (none, as in a DM: the bot's own)."""
        guild = self._server(guild_id)
        if guild is None:
            return ServerSettings(None, {}, self._config)
        hit = self._cache.get(guild)
        if hit is not None and self._monotonic() - hit[1] < CACHE_SECONDS:
            return hit[0]
        stored = await self._store.settings.get(guild)
        values = {k: v for k, v in stored.values.items() if _still_valid(k, v)}
        name = None
        if stored.updated_by is not None:
            player = await self._store.players.get(stored.updated_by)
            name = player.display_name if player is not None else None
        return self._keep(ServerSettings(guild, values, self._config, name, stored.updated_at))

    def _keep(self, found: ServerSettings) -> ServerSettings:
        if len(self._cache) >= MAX_CACHED:
            self._cache.clear()
        if found.guild_id is not None:
            self._cache[found.guild_id] = (found, self._monotonic())
        return found

    @boundary
    async def change(
        self, guild_id: int | None, person: Person, changes: Mapping[str, Any]
    ) -> ServerSettings:
        """Change a server's settings (the front end checks who may); every value is checked
        first: one bad value and nothing changes."""
        guild = self._server(guild_id)
        if guild is None:
            raise BadRequest("settings belong to a server: use /settings there")
        if not changes:
            return await self.of(guild)
        checked = {name: check(name, value) for name, value in changes.items()}
        player = await self._people.player_for(person)
        stored = await self._store.settings.change(guild, player.id, checked)
        log.info("settings of server %s changed by %s (player %s): %s",
                 guild, person.name, player.id, checked)  # fmt: skip
        found = ServerSettings(
            guild, stored.values, self._config, player.display_name, stored.updated_at
        )
        return self._keep(found)

    async def config_at(self, where: Where) -> LobbyConfig:
        """The bot's settings with the clock and limits of the server `where` is in."""
        return (await self.of(where.guild_id)).lobby_config

    @boundary
    async def history(self, guild_id: int | None, limit: int = 10) -> list[SettingsChange]:
        guild = self._server(guild_id)
        return [] if guild is None else await self._store.settings.history(guild, limit)

    async def check_start(
        self, where: Where, offer: str, opponents: Iterable[str] = (), raw_ok: bool = False
    ) -> ServerSettings:
        """A match or challenge may start here: the channel, the game, the opponents' levels
        (an opponent that is no level is not limited by them)."""
        game = offer_named(offer).game
        raw_ok = raw_ok or self._config.raw_specs
        levels = [self._people.agent_choice(game, text, raw_ok).level for text in opponents]
        found = await self.of(where.guild_id)
        channels = found.value("channels")
        if where.guild_id is not None and channels and where.channel_id not in channels:
            raise NotHere(channels)
        if not found.offered("games", offer):
            shown = ", ".join(found.value("games"))
            raise BadRequest(f"this server offers {shown} only")
        for level in levels:
            if not found.offered("levels", level):
                shown = ", ".join(found.value("levels"))
                raise BadRequest(f"the {level} level is not offered here: choose {shown}")
        return found

    async def check_rated(self, guild_id: int | None, rated: bool, what: str) -> None:
        """Hints (`rated_hints`) or analyses (`rated_analysis`) of a rated game, if allowed."""
        if rated and not (await self.of(guild_id)).value(what):
            words = "hints in" if what == "rated_hints" else "analyses of"
            raise BadRequest(f"this server allows no {words} rated games")


def _still_valid(name: str, value: Any) -> bool:
    """A stored value this version still takes (a setting dropped or narrowed is left out:
    the bot's own applies)."""
    try:
        return bool(check(name, value) == value)
    except BadRequest:
        log.warning("setting %s=%r is not valid here: the bot's own applies", name, value)
        return False
