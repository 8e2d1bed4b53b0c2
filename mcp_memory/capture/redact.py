"""Secrets out of captured text, by pattern, before anything is embedded or stored: a transcript
holds whatever was pasted into it, and a memory is searchable forever after."""

from __future__ import annotations

import re

# (name, pattern); a named group `secret` marks the part replaced, else the whole match.
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
                               re.S)),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("mcp-memory-key", re.compile(r"\bmcpm_[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)")),
    ("url-password", re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@")),
    # key = value / key: value / "key": "value" for names that say secret.
    ("password", re.compile(
        r"""(?ix)\b(?:[a-z0-9_\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key
            |client[_\-]?secret|auth))["']?\s*(?:=|:|\bis\b)\s*["']?(?P<secret>[^\s"',;]{6,})""")),
]


def redact(text: str) -> tuple[str, list[str]]:
    """The text with every secret replaced by `[REDACTED:<kind>]`, and the kinds found."""
    found: list[str] = []
    for name, pattern in PATTERNS:

        def sub(m: re.Match[str], name: str = name, pattern: re.Pattern[str] = pattern) -> str:
            if "[REDACTED:" in m.group(0):
                return m.group(0)
            found.append(name)
            if "secret" in pattern.groupindex and m.group("secret") is not None:
                start, end = m.span("secret")
                base = m.start()
                whole = m.group(0)
                return whole[: start - base] + f"[REDACTED:{name}]" + whole[end - base:]
            return f"[REDACTED:{name}]"

        text = pattern.sub(sub, text)
    return text, sorted(set(found))
