"""Yelp's detect-secrets as a second detector: its regex plugins (the token formats it keeps up
to date), its keyword detector's assignment patterns and its base64 entropy check on quoted
strings. Its scanner works on files line by line and reports values without places; we need the
places to cut the values out of running text, so the plugins' own patterns are run here with
`finditer`. Loaded on first use: importing it costs ~0.1 s (it brings `requests`), which a
process that never redacts should not pay."""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .named import placeholder, sequential

Span = tuple[int, int, str]

# Not secrets, or covered better here: a public IP address is not a credential; hex strings
# (commits, digests, UUIDs) are left to the named rules.
_SKIP = {"IPPublicDetector", "HexHighEntropyString"}
# Kinds named like ours where a plugin finds the same thing.
_KINDS = {"AWS Access Key": "aws-access-key", "Private Key": "private-key", "JSON Web Token": "jwt",
          "Basic Auth Credentials": "url-password", "Secret Keyword": "secret",
          "Base64 High Entropy String": "high-entropy", "GitHub Token": "github-token",
          "GitLab Token": "gitlab-token", "Slack Token": "slack-token", "Stripe Access Key": "stripe-key",
          "NPM tokens": "npm-token", "SendGrid API Key": "sendgrid-key", "OpenAI Token": "openai-key",
          "Twilio API Key": "twilio-key", "Mailchimp Access Key": "mailchimp-key", "PyPI Token": "pypi-token",
          "Telegram Bot Token": "telegram-bot-token"}
_DELIMITERS = " \t=:\"'"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int | None          # the group holding the value, or None for the whole match


@dataclass(frozen=True)
class _Library:
    regex_rules: list[_Rule]
    keyword_rules: list[_Rule]
    entropy_pattern: re.Pattern[str]
    entropy: Callable[[str], float]
    entropy_limit: float
    templated: Callable[[str], bool]


def _kind(secret_type: str) -> str:
    return _KINDS.get(secret_type) or re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@functools.cache
def _load() -> _Library | None:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters.heuristic import is_templated_secret
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
        from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
    except ImportError:  # pragma: no cover - a declared dependency; our own patterns still run
        return None
    rules: list[_Rule] = []
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if cls.__name__ in _SKIP or not issubclass(cls, RegexBasedDetector):
            continue
        for pattern in cls().denylist:
            # A plugin's group is sometimes the value (basic auth) and sometimes only a prefix
            # (GitHub's `(ghp|gho…)`): the last group counts only when it is long enough to be one.
            rules.append(_Rule(_kind(secret_type), pattern, pattern.groups or None))
    keyword = [_Rule("secret", p, g) for p, g in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()]
    b64 = Base64HighEntropyString()
    return _Library(rules, keyword, b64.regex, b64.calculate_shannon_entropy, b64.entropy_limit, is_templated_secret)


def available() -> bool:
    return _load() is not None


def _span(m: re.Match[str], rule: _Rule) -> tuple[int, int]:
    if rule.group is not None and m.group(rule.group) and len(m.group(rule.group)) >= 8:
        return m.span(rule.group)
    start, end = m.span()
    whole = m.group(0)
    # Artifactory's patterns take the delimiters around the key with them.
    start += len(whole) - len(whole.lstrip(_DELIMITERS))
    end -= len(whole) - len(whole.rstrip(_DELIMITERS))
    return start, end


# Every secret the plugins know holds a run of 20+ token characters, or is a URL's credentials, a
# JWT or a key block: only the lines holding one are given to their ~35 patterns. (Each pattern
# over a whole transcript costs 10-20 ms; most lines of code and prose hold none of these.)
_CANDIDATE = re.compile(r"[A-Za-z0-9+/=_\-]{20,}|://|eyJ|PRIVATE KEY|PuTTY")
# A line the keyword patterns can match: a secret word, then an assignment or comparison, then a quote.
_KEYWORD_LINE = re.compile(r"(?:key|pass|pwd|secret|contras)[\w\]'\"]{0,40}[ \t]{0,8}(?::=?|[!=]{1,3}|=>|\.assign\(|\()"
                           r"[ \t]{0,8}@?[\"'`]|[\"'`][ \t]{0,8}[!=]{2,3}[ \t]{0,8}\w{0,40}(?:key|pass|pwd|secret)")
# Some plugin patterns take time growing with the square of a line's length on hostile text
# (`sk-[…]*…T3BlbkFJ`, `//.+/:_authToken`, `eyJ[…]+\.`, the keyword patterns' look-aheads): lines
# longer than this are left to our own patterns, which are linear and cover the same shapes.
MAX_LINE = 2000


def _lines_of(text: str, pattern: re.Pattern[str], source: str) -> list[tuple[int, int]]:
    """(start, end) of each line of `text` where `pattern` matches `source` (text or its
    lower-cased copy, same places), in order."""
    ranges: list[tuple[int, int]] = []
    at = 0
    while True:
        m = pattern.search(source, at)
        if m is None:
            return ranges
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        ranges.append((start, end))
        at = end + 1


def spans(text: str, lowered: str) -> Iterator[Span]:
    lib = _load()
    if lib is None:
        return
    lines = [(s, e) for s, e in _lines_of(text, _CANDIDATE, text) if e - s <= MAX_LINE]
    if lines:
        # One text of the candidate lines, so each pattern runs once; places map back by offset.
        starts = [s for s, _ in lines]
        joined = "\n".join(text[s:e] for s, e in lines)
        offsets = list(itertools.accumulate((e - s + 1 for s, e in lines), initial=0))[:-1]
        for rule in lib.regex_rules:
            for m in rule.pattern.finditer(joined):
                if rule.group is not None and m.group(rule.group) and placeholder(m.group(rule.group)):
                    continue   # `user:pass@`, `:…@` in docs
                start, end = _span(m, rule)
                if end > start:
                    i = bisect.bisect_right(offsets, start) - 1
                    shift = starts[i] - offsets[i]
                    yield start + shift, end + shift, rule.kind
    # The keyword patterns let a value run across lines (`\s*`, `[^\v…]`), so they see one line at
    # a time, and only lines shaped like an assignment to a secret word.
    for start, end in _lines_of(text, _KEYWORD_LINE, lowered):
        if end - start > MAX_LINE:
            continue
        line = text[start:end]
        for rule in lib.keyword_rules:
            for m in rule.pattern.finditer(line):
                value = m.group(rule.group or 0)
                if value and not lib.templated(value) and "[REDACTED:" not in value:
                    yield start + m.start(rule.group or 0), start + m.end(rule.group or 0), rule.kind
    for m in lib.entropy_pattern.finditer(text):
        value = m.group(2)
        if len(value) >= 20 and lib.entropy(value) > lib.entropy_limit and not sequential(value):
            yield m.start(2), m.end(2), "high-entropy"
