"""Every persistent component the front end defines is registered with its handler at setup."""

from __future__ import annotations

import inspect
from typing import Any

import cogs.components as components


def _component_classes() -> set[type[Any]]:
    """The component classes a board can carry: the leaves (a base shared by several is none)."""
    handled = {
        cls
        for _, cls in inspect.getmembers(components, inspect.isclass)
        if cls.__module__ == components.__name__
        and issubclass(cls, components.Handled)
        and cls is not components.Handled
    }
    return {cls for cls in handled if not any(o is not cls and issubclass(o, cls) for o in handled)}


async def test_every_component_is_registered_with_a_handler(env: Any) -> None:
    bot, _h = env
    defined = _component_classes()
    assert defined, "no component classes found"
    registered = set(bot._connection._view_store._dynamic_items.values())
    unregistered = sorted(c.__name__ for c in defined - registered)
    assert not unregistered, f"defined but not registered at setup: {unregistered}"
    unhandled = sorted(c.__name__ for c in defined if c._on_click is None)
    assert not unhandled, f"registered without a handler: {unhandled}"
