"""What each person prefers: how boards are shown (`/prefs board:`), the emoji grid with its
words, or a picture with the words as its alt text (`lobby.boards`).

A board is one message everyone in the channel sees: it is a picture when a person seated in
the match (or the person who started a bot match) prefers pictures. Front ends ask at every
board they draw, so the styles are kept here for a few seconds; a change made in this process
shows at once, one made by another process (a shard) within `CACHE_SECONDS`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal, cast

from db.errors import StoreError
from db.prefs import BOARD_STYLES
from db.store import Store
from lobby.boundary import boundary
from lobby.errors import BadRequest
from lobby.people import People
from lobby.records import Person, Snapshot

log = logging.getLogger(__name__)

DEFAULT_STYLE = BOARD_STYLES[0]
#: How long a style read from the store is used before it is read again.
CACHE_SECONDS = 10.0
#: The cache is emptied past this many players (people come and go).
MAX_CACHED = 10_000


class Prefs:
    """Each person's preferences, over `store.prefs`."""

    def __init__(
        self, store: Store, people: People, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._store = store
        self._people = people
        self._monotonic = monotonic
        self._styles: dict[int, tuple[str, float]] = {}  # player id -> (style, read at)
        #: The player of each bot match's starter (a bot match's board is edited every move).
        #: (None: not a player yet, looked at again after `CACHE_SECONDS`).
        self._starters: dict[tuple[str, int | str], tuple[int | None, float]] = {}

    @boundary
    async def board_style(self, person: Person) -> str:
        """How `person` wants boards shown (the default if they never said)."""
        player = await self._people.known(person)
        if player is None:
            return DEFAULT_STYLE
        return (await self._styles_of([player.id]))[player.id]

    @boundary
    async def set_board_style(self, person: Person, style: str) -> str:
        """Keep how `person` wants boards shown; BadRequest for a style there is not."""
        style = style.strip().lower()
        if style not in BOARD_STYLES:
            raise BadRequest(f"board must be one of {', '.join(BOARD_STYLES)}")
        player = await self._people.player_for(person)
        await self._store.prefs.set_board(player.id, style)
        self._keep(player.id, style)
        return style

    async def style_for(self, snap: Snapshot) -> str:
        """How the board of `snap` is shown: a picture if one of its people prefers it. A
        store that cannot answer now leaves the board as emoji (it is drawn again at the next
        change)."""
        ids = [s.player.id for s in snap.seats if not s.is_agent]
        try:
            starter = await self._starter(snap)
            styles = await self._styles_of(ids if starter is None else [*ids, starter])
        except StoreError as exc:
            log.warning("board styles of match %s not read (%s): emoji", snap.id, exc)
            return DEFAULT_STYLE
        return "image" if "image" in styles.values() else DEFAULT_STYLE

    async def _starter(self, snap: Snapshot) -> int | None:
        """The player who started a bot match (None: none, or not a player yet)."""
        starter = snap.match.options.get("starter")
        if not (isinstance(starter, dict) and starter.get("kind") in ("user", "local")):
            return None
        key = (str(starter["kind"]), starter.get("ident", ""))
        hit = self._starters.get(key)
        now = self._monotonic()
        if hit is None or (hit[0] is None and now - hit[1] >= CACHE_SECONDS):
            if len(self._starters) >= MAX_CACHED:
                self._starters.clear()
            kind = cast(Literal["user", "local"], key[0])
            player = await self._people.known(Person(kind, key[1], ""))
            hit = self._starters[key] = (None if player is None else player.id, now)
        return hit[0]

    async def _styles_of(self, ids: list[int]) -> dict[int, str]:
        now = self._monotonic()
        fresh = {
            i: hit[0]
            for i in ids
            if (hit := self._styles.get(i)) is not None and now - hit[1] < CACHE_SECONDS
        }
        missing = [i for i in ids if i not in fresh]
        if missing:
            found = await self._store.prefs.board_styles(missing)
            for i in missing:
                fresh[i] = found.get(i, DEFAULT_STYLE)
                self._keep(i, fresh[i])
        return fresh

    def _keep(self, player_id: int, style: str) -> None:
        if len(self._styles) >= MAX_CACHED:
            self._styles.clear()
        self._styles[player_id] = (style, self._monotonic())
