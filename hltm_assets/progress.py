"""One progress bar across the runs of an ``hltm index`` (the CLI registers it here)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_SINK: list[Callable[[int], None]] = []


def sink() -> Callable[[int], None] | None:
    """The active bar's update function, if the CLI registered one."""
    return _SINK[-1] if _SINK else None


@contextmanager
def bar(total: int, enabled: bool) -> Iterator[None]:
    """A tqdm bar on stderr for ``total`` nodes while the block runs (no-op when disabled)."""
    if not enabled:
        yield
        return
    from tqdm import tqdm

    with tqdm(total=total, desc="building memory", unit="node") as t:
        _SINK.append(t.update)
        try:
            yield
        finally:
            _SINK.pop()
