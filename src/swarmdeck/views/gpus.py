"""GPU cards and their compute processes as rows, and who holds the cards quiesced."""

from __future__ import annotations

import time

from rich.text import Text

from swarmdeck.probes.gpu import GpuCard, GpuProcess, GpuSnapshot, QuiesceHolder, Reading
from swarmdeck.sizes import format_size
from swarmdeck.views.cells import Cell

CARD_COLUMNS = (
    ("gpu", "gpu"),
    ("name", "name"),
    ("memory", "memory used"),
    ("load", "load"),
    ("memory_load", "memory load"),
    ("temperature", "temp"),
    ("problem", "problem"),
)
PROCESS_COLUMNS = (
    ("gpu", "gpu"),
    ("pid", "pid"),
    ("user", "user"),
    ("name", "name"),
    ("memory", "memory"),
    ("standing", "standing"),
    ("command", "command"),
)


def state_text(snapshot: GpuSnapshot) -> str:
    """Why a host shows no cards: "no GPU", or "not read: REASON"."""
    return f"{snapshot.state}: {snapshot.reason}" if snapshot.reason else snapshot.state


def size_text(value: Reading) -> str:
    """A byte count as 1.5G, or the reason there is none ("n/a", "not read: …")."""
    return format_size(value) if isinstance(value, int) else value


def percent_text(value: Reading) -> str:
    return f"{value}%" if isinstance(value, int) else value


def memory_text(card: GpuCard) -> str:
    """"3.0G/80G", or the reason the card's memory could not be read."""
    used, total = card.memory_used, card.memory_total
    if isinstance(used, int) and isinstance(total, int):
        return f"{format_size(used)}/{format_size(total)}"
    return size_text(used)


def card_cells(card: GpuCard) -> dict[str, Cell]:
    """One card's figures, keyed by column."""
    temperature = card.temperature
    return {
        "gpu": str(card.index),
        "name": card.name,
        "memory": memory_text(card),
        "load": percent_text(card.utilization),
        "memory_load": percent_text(card.memory_utilization),
        "temperature": f"{temperature}°C" if isinstance(temperature, int) else temperature,
        "problem": Text(card.problem, style="red"),
    }


def standing(process: GpuProcess) -> Text:
    """Why a process may be on the card: the allowlist, a gpu-run wrapper, or neither."""
    if process.holder is not None:
        return Text(f"gpu-run {process.holder}", style="cyan")
    if process.allowlisted:
        return Text("allowlisted", style="green")
    return Text("foreign", style="bold red")


def process_rows(cards: list[GpuCard]) -> dict[str, dict[str, Cell]]:
    """Every compute process of every card, keyed "card:pid"; a card whose process list could
    not be read gets one row saying why."""
    rows: dict[str, dict[str, Cell]] = {}
    for card in cards:
        if isinstance(card.processes, str):
            rows[f"{card.index}:unread"] = {
                "gpu": str(card.index), "pid": "", "user": "", "name": "", "memory": "",
                "standing": Text(card.processes, style="red"), "command": "",
            }
            continue
        for process in card.processes:
            rows[f"{card.index}:{process.pid}"] = {
                "gpu": str(card.index),
                "pid": str(process.pid),
                "user": process.user,
                "name": process.name,
                "memory": size_text(process.used_memory),
                "standing": standing(process),
                "command": process.command,
            }
    return rows


def holder_line(holders: list[QuiesceHolder]) -> Text:
    """Who holds the cards quiesced; stale registrations are shown dim, as ignored."""
    if not holders:
        return Text("no gpu-run holds the cards quiesced", style="dim")
    text = Text()
    for holder in holders:
        since = time.strftime("%H:%M:%S", time.localtime(holder.since))
        if text:
            text.append("   ")
        if holder.alive:
            text.append(f"quiesced by gpu-run {holder.pid} ({holder.command}) since {since}")
        else:
            text.append(f"stale gpu-run {holder.pid} ({holder.reason}), ignored", style="dim")
    return text
