"""What `mcp-memory capture --status` shows: the failed captures capture/status.py recorded (read
without the database, which may be what failed) and the transcripts whose turns were cleaned, cut
or skipped, from their cursors in the database."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from ..auth import local_principal
from ..config import Settings
from ..transcript_cursors import CursorProblems
from .status import CaptureFailure

SHOWN_PER_TRANSCRIPT = 10


async def cursor_problems(settings: Settings) -> tuple[list[CursorProblems], str | None]:
    """The user's transcripts with problems, or the reason the database could not say."""
    from ..composition import compose
    from ..db import open_database
    from .capture import failure_reason

    try:
        # The status file is already printed whatever happens here: a hanging store must not
        # hold the command past the time a start may take.
        db = await asyncio.wait_for(open_database(settings), settings.db_start_timeout_s)
    except Exception as exc:
        return [], failure_reason(exc)
    try:
        p = local_principal(settings, client_name="cli")  # cursors are per user: any agent / project
        # No model check: what went wrong with captures is shown whatever the embedder.
        service = (await compose(db, settings, check_model=False)).service
        return await service.transcripts.with_problems(p), None
    except Exception as exc:
        return [], failure_reason(exc)
    finally:
        await db.close()


def _where(x: dict[str, Any]) -> str:
    if isinstance(x.get("turn"), int):
        return f"turn {x['turn']}"
    if isinstance(x.get("line"), int):
        return f"line {x['line']}"
    return "?"


def render(failures: list[CaptureFailure], transcripts: list[CursorProblems], db_error: str | None) -> str:
    out: list[str] = []
    if failures:
        out.append(f"{len(failures)} session(s) not captured (retried by the next hook in their project, "
                   "or run `mcp-memory capture <transcript>`):")
        for f in failures:
            again = f", {f.attempts} attempts" if f.attempts > 1 else ""
            out.append(f"  {f.at.astimezone().strftime('%Y-%m-%d %H:%M')}  {f.key}: {f.reason}{again}")
    else:
        out.append("No failed captures.")
    if db_error:
        out.append(f"Turns cleaned, cut or skipped: not known ({db_error}).")
    elif not transcripts:
        out.append("No turn was cleaned, cut or skipped.")
    else:
        out.append(f"{len(transcripts)} transcript(s) with turns not stored exactly as written:")
        for t in transcripts:
            counts = Counter(str(x.get("what")) for x in t.problems)
            where = f" ({t.path})" if t.path and t.path != t.transcript else ""
            out.append(f"  {t.transcript}{where}: " + ", ".join(f"{n} {what}" for what, n in sorted(counts.items())))
            for x in t.problems[-SHOWN_PER_TRANSCRIPT:]:
                what = "" if "line" in x else f" {x.get('what')}"   # a line's only problem is being unreadable
                out.append(f"    {_where(x)}{what}: {x.get('reason')}")
            if len(t.problems) > SHOWN_PER_TRANSCRIPT:
                out.append(f"    … and {len(t.problems) - SHOWN_PER_TRANSCRIPT} earlier")
    return "\n".join(out)


def doctor_failures(settings: Settings) -> tuple[str, bool, str, str | None]:
    """doctor's capture line from the status file (no database needed: it may be what failed)."""
    from .status import failures as recorded

    failures = recorded(settings)
    if not failures:
        return "capture", True, "no failed captures", None
    shown = "; ".join(f"{f.key} ({f.reason})" for f in failures[-3:])
    more = f" and {len(failures) - 3} more" if len(failures) > 3 else ""
    return ("capture", False, f"{len(failures)} session(s) not captured: {shown}{more}",
            "see `mcp-memory capture --status`; the next hook in their project retries them, "
            "or run `mcp-memory capture <transcript>`")


def doctor_problems(transcripts: int, skipped: int) -> tuple[str, bool, str, str | None]:
    """doctor's line for turns not stored exactly as written: the transcripts with problems and
    the turns skipped among them (every user's, as the owner sees: repository.transcripts.problem_counts)."""
    if not transcripts:
        return "captured turns", True, "every captured turn stored as written", None
    detail = (f"{transcripts} transcript(s) have turns cleaned (NUL, invalid Unicode), cut, or with unreadable "
              f"lines; {skipped} turn(s) skipped")
    return ("captured turns", skipped == 0, detail,
            "`mcp-memory capture --status` lists them" if skipped == 0 else
            "`mcp-memory capture --status` lists them and why the store refused the skipped ones")
