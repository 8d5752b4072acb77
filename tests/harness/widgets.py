"""A live ipywidgets tree, reached as a frontend would: a part found by the CSS class bub_nb gives it."""

from __future__ import annotations

from typing import Any


def find(widget: Any, css_class: str) -> Any:
    """The first widget under ``widget`` (itself included) that carries ``css_class``."""
    stack = [widget]
    while stack:
        current = stack.pop()
        if css_class in getattr(current, "_dom_classes", ()):
            return current
        stack.extend(getattr(current, "children", ()))
    raise AssertionError(f"no widget with class {css_class!r}")
