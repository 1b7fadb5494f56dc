"""What the lobby announces to front ends: every committed snapshot of a match, and every
challenge that expired. A listener that fails is logged; the others still hear it."""

from __future__ import annotations

import logging

from lobby.boundary import front_end
from lobby.models import Challenge
from lobby.records import ChallengeListener, Listener, Snapshot

log = logging.getLogger(__name__)


class Announcer:
    """The front ends' listeners (the lists front ends append to)."""

    def __init__(
        self, listeners: list[Listener], challenge_listeners: list[ChallengeListener]
    ) -> None:
        self.listeners = listeners
        self.challenge_listeners = challenge_listeners

    async def match(self, snap: Snapshot) -> None:
        """A match's new stored state, to every listener."""
        for listener in list(self.listeners):
            try:
                with front_end():
                    await listener(snap)
            except Exception:
                log.exception("a match listener failed")

    async def challenge(self, challenge: Challenge) -> None:
        """A challenge that expired (its message is greyed out)."""
        for listener in list(self.challenge_listeners):
            try:
                with front_end():
                    await listener(challenge)
            except Exception:
                log.exception("a challenge listener failed")
