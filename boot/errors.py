"""The two ways a start ends early: a bad setting, or a start that cannot go on."""

from __future__ import annotations


class ConfigError(SystemExit):
    """A bad setting: one line to show; the process exits with 2, as for a usage error."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


class StartError(Exception):
    """The bot cannot start; the message is the one line to show."""
