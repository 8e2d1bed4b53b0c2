"""Captures a server has acknowledged and is still storing, so that a session starting meanwhile
can wait for them: a headless run that starts as the last one exits (`claude -p` after `claude -p`)
then recalls what that one was just told, not only what was stored before it."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

Store = tuple[str, str | None]   # whose memories a capture writes: (user, project)


@dataclass(eq=False)
class Capture:
    store: Store
    session: str | None
    done: anyio.Event = field(default_factory=anyio.Event)


class InFlight:
    def __init__(self) -> None:
        self._running: dict[Store, list[Capture]] = {}

    def started(self, store: Store, session: str | None) -> Capture:
        """A capture acknowledged: known from now on, before its task first runs, so a hook that
        arrives right after the acknowledgement finds it."""
        capture = Capture(store, session)
        self._running.setdefault(store, []).append(capture)
        return capture

    def finished(self, capture: Capture) -> None:
        capture.done.set()
        running = self._running[capture.store]
        running.remove(capture)
        if not running:
            del self._running[capture.store]

    async def settled(self, store: Store, session: str | None, within: float) -> None:
        """Until the captures of other sessions into `store` running now are stored, for at most
        `within` seconds. A session's own capture is not waited for: recall leaves its turns out."""
        waiting = [c.done for c in self._running.get(store, ()) if session is None or c.session != session]
        if not waiting:
            return
        with anyio.move_on_after(max(0.0, within)):
            for done in waiting:
                await done.wait()
