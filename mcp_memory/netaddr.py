"""Which hosts are this machine: below both the HTTP server and the console it mounts, which each
refuse to serve without authentication, or over plain HTTP, anywhere else."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
