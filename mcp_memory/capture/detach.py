"""Starting the detached capture worker (worker.py): from the full hook path (hooks.py) and from
the thin entry point (hookline.py), which must not import the worker, or anything beyond the
standard library, to hand it a job. Standard library only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

WORKER = "mcp_memory.capture.worker"
LOG_FILE = "capture.log"
LOG_BYTES = 1024 * 1024


def _log_file(data_dir: str | os.PathLike[str]) -> IO[bytes]:
    """The worker's stderr: a log under the data dir, cut back to one old copy past 1 MB."""
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / LOG_FILE
    try:
        if path.stat().st_size > LOG_BYTES:
            os.replace(path, path.with_name(LOG_FILE + ".1"))
    except OSError:
        pass
    return open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab", buffering=0)


def detach(job: dict[str, Any], data_dir: str | os.PathLike[str] | None) -> None:
    """Start the worker on `job`, detached: its own session and process group (a harness that
    kills the hook's group leaves it alone), the job on stdin from an anonymous file (a hook's input
    can be megabytes, and the settings may hold a database password, so not in argv), nothing on
    the caller's stdout, its stderr to `capture.log` under `data_dir`. Returns once it is started."""
    data = json.dumps(job, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryFile() as jobfile:
        jobfile.write(data)
        jobfile.seek(0)
        log_file = _log_file(data_dir) if data_dir else None
        try:
            subprocess.Popen([sys.executable, "-m", WORKER], stdin=jobfile,
                             stdout=subprocess.DEVNULL, stderr=log_file or subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
        finally:
            if log_file is not None:
                log_file.close()
