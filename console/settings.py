"""`/settings` in the console: the settings of its one server (`lobby.settings`,
`CONSOLE_SERVER`), shown as lines and changed with key:value options, each checked by the
lobby as on Discord (one bad value changes nothing). Channels do not exist here; the limits
on what a member may have running apply to Discord members only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from console.values import UsageError
from lobby.settings import SPECS, ServerSettings

if TYPE_CHECKING:
    from console.session import Session

#: The settings the console has (no channels here).
NAMES = tuple(name for name, spec in SPECS.items() if spec.kind not in ("ids", "id"))
SWITCH = {"allowed": True, "on": True, "refused": False, "off": False}


def value_of(name: str, text: str) -> Any:
    """A typed value as the lobby takes it (it checks the bounds); `default` for the bot's."""
    text = text.strip()
    if text.lower() in ("default", "all"):
        return None
    kind = SPECS[name].kind
    if kind == "switch":
        if text.lower() not in SWITCH:
            raise UsageError(f"{name} is allowed or refused, not {text[:40]!r}")
        return SWITCH[text.lower()]
    if kind == "keys":
        return [w for w in text.replace(",", " ").lower().split() if w]
    try:
        number = float(text)
    except ValueError:
        raise UsageError(f"{name} must be a number, not {text[:40]!r}") from None
    return int(number) if number.is_integer() else number


def lines(found: ServerSettings) -> str:
    out = ["Settings of this console (/settings NAME:VALUE changes one; VALUE default undoes it):"]
    for name in NAMES:
        value = found.value(name)
        if value is None:
            shown = "no limit" if SPECS[name].kind == "count" else "all"
        elif isinstance(value, bool):
            shown = "allowed" if value else "refused"
        elif isinstance(value, list):
            shown = ", ".join(value)
        else:
            shown = f"{value:g}"
        mine = "" if found.is_set(name) else " (the bot's own)"
        out.append(f"  {name}: {shown}{mine}")
    if found.changed_by is not None:
        out.append(f"Last changed by {found.changed_by}.")
    return "\n".join(out)


async def cmd_settings(console: Session, opts: dict[str, str]) -> None:
    changes: dict[str, Any] = {}
    reset = opts.pop("reset", None)
    if reset is not None:
        if reset != "all" and reset not in NAMES:
            raise UsageError(f"reset: {reset[:40]!r} is not one of {', '.join(NAMES)} or all")
        changes.update(dict.fromkeys(NAMES if reset == "all" else [reset]))
    changes.update({name: value_of(name, text) for name, text in opts.items()})
    found = await console.lobby.change_settings(None, console.person(), changes)
    console.write(lines(found))
