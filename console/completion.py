"""Tab completion: what the word before the cursor may become (commands, options, agents,
the local players' names)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from console.commands import COMMAND_ALIASES, COMMANDS, OPTION_ALIASES
from engine.agents import opponents
from engine.games.catalog import GAMES, OFFERS, offer
from lobby.pairing import FORMATS

#: Values Tab offers for an option, besides agent names (`opponent:`, `first:` ...).
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("play", "first"): ("me", "bot", "random"),
    ("tournament", "format"): FORMATS,
}
#: Options whose values are agents of the game on the line.
_AGENT_OPTIONS = {
    ("play", "opponent"),
    ("botmatch", "first"),
    ("botmatch", "second"),
    ("train", "agent"),
    ("train", "opponent"),
    ("tournament", "bot"),
}
#: Options whose values are the local players' names.
_PEOPLE_OPTIONS = {
    ("challenge", "opponent"),
    ("stats", "user"),
    ("history", "user"),
    ("as", "name"),
}


def _game_on_line(words: Iterable[str]) -> str | None:
    """The game a command line names (`game:othello`, or a bare `c4`), if any."""
    for word in words:
        key, sep, value = word.partition(":")
        text = value if sep and key.lower() == "game" else word
        with contextlib.suppress(ValueError):
            return offer(text).game
    return None


def _values(command: str, option: str, game: str | None, people: Iterable[str]) -> list[str]:
    """What may follow `option:` in `command`."""
    if option == "game":
        return [o.key for o in OFFERS]
    if (command, option) in _AGENT_OPTIONS:
        games = [game] if game is not None else list(GAMES)
        found = [o for g in games for o in opponents.opponents(g)]
        if command == "train" and option == "agent":
            found = [o for o in found if o.learns]
        return list(dict.fromkeys(o.name for o in found))
    if (command, option) in _PEOPLE_OPTIONS:
        return sorted(set(people))
    return list(_CHOICES.get((command, option), ()))


def completions(before: str, people: Iterable[str] = ()) -> tuple[str, list[str]]:
    """Tab at the end of `before`: (the word being completed, what it may become).

    The first word completes to a command; after it, a word completes to an option not given
    yet (`game:`), to a value of the option it names (`opponent:ea` -> `opponent:easy`), or to
    a value of the next option filled by position. A command and a value end with a space."""
    words = before.split(" ")
    word = words[-1]
    if len(words) == 1:
        if not word.startswith("/"):
            return word, []
        names = [f"/{name} " for name in COMMANDS]
        return word, [n for n in names if n.startswith(word.lower())]
    head = words[0].lstrip("/").lower()
    command = COMMAND_ALIASES.get(head, head)
    info = COMMANDS.get(command)
    if info is None:
        return word, []
    given = [w for w in words[1:-1] if w]
    if info.subcommands:  # `/tournament join ...`: the subcommand's options
        if not given:
            found = [f"{s} " for s in info.subcommands]
            return word, [f for f in found if f.startswith(word.lower())]
        sub = info.subcommands.get(given[0].lower())
        if sub is None:
            return word, []
        info, given = sub, given[1:]
    game = _game_on_line(given)
    key, sep, partial = word.partition(":")
    key = OPTION_ALIASES.get(command, {}).get(key.lower(), key.lower())
    if sep and key in info.options:
        values = _values(command, key, game, people)
        return word, [f"{key}:{v} " for v in values if v.lower().startswith(partial.lower())]
    named = {w.partition(":")[0].lower() for w in given if ":" in w}
    free = [o for o in info.options if o not in named]
    found = [f"{o}:" for o in free]
    positional = len([w for w in given if ":" not in w])
    if positional < len(free):
        found += [f"{v} " for v in _values(command, free[positional], game, people)]
    if not given:
        found += [f"{a} " for a in info.actions]
    return word, [f for f in found if f.lower().startswith(word.lower())]


class CommandCompleter(Completer):
    """Tab in the terminal: see `completions`."""

    def __init__(self, people: Callable[[], Iterable[str]]) -> None:
        self.people = people

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        word, found = completions(document.text_before_cursor, self.people())
        for text in found:
            yield Completion(text, start_position=-len(word), display=text.strip())
