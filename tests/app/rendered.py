"""What a Rich renderable a widget holds says, as plain text, for tests that read a Static's
content rather than the few lines the screen has room for."""

from __future__ import annotations

from rich.console import Console


def plain(renderable: object, width: int = 200) -> str:
    """The renderable's text as a terminal `width` columns wide shows it."""
    console = Console(width=width, record=True)
    console.print(renderable)
    return console.export_text()
