"""Secrets recognisable by what they are called, not by their shape: a value assigned to a name
like password / api_key / client_secret / AUTH_TOKEN (env files, YAML, JSON, code, CLI flags,
URL parameters), a value said to be one in prose ("the root pass is 'x'", "my password for the
VPN is hunter2"), and long random-looking strings with no name at all.

How sure the name is decides how much the value must look like a secret: after `password` any
literal goes (but not `str`, `required`, `os.environ[...]` or another variable); after `key` or
`token` alone the value must look random (a sort key `created_at` or a page token `2` stays)."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterator

Span = tuple[int, int, str]

# Names whose value is a secret whatever it looks like; the last word of the name decides
# (`db_password`, `clientSecret`, `ROOT_PASS`).
_STRONG_LAST = {"password", "passwd", "passphrase", "passcode", "pwd", "pass", "secret", "secrets", "credential",
                "credentials", "apikey", "privatekey", "secretkey", "accesskey", "authtoken", "accesstoken"}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[.\-+]?\w+)?")
# key / token / auth after one of these words is a credential (`api_key`, `refresh_token`).
_CRED_BEFORE = {"api", "secret", "access", "private", "auth", "client", "refresh", "bearer", "session", "master",
                "account", "service", "signing", "encryption", "app", "bot", "webhook", "deploy", "personal",
                "oauth", "id", "admin", "root", "storage", "license", "consumer", "integration", "sas", "shared",
                "user", "write", "read", "hmac", "jwt", "csrf", "xsrf", "security"}
_WEAK_LAST = {"key", "token", "auth", "sig", "signature", "pat", "pin", "session", "sessionid", "sid", "csrftoken",
              "cookie"}
# What follows `password:` in docs, types and prose without being one.
_NOT_VALUES = {
    "str", "string", "bytes", "int", "bool", "boolean", "any", "none", "null", "nil", "true", "false", "undefined",
    "optional", "required", "mandatory", "needed", "missing", "empty", "blank", "unset", "set", "invalid", "wrong",
    "incorrect", "correct", "valid", "expired", "changed", "reset", "hidden", "masked", "redacted", "hashed",
    "encrypted", "stored", "saved", "same", "different", "too", "not", "the", "a", "an", "your", "my", "our", "their",
    "his", "her", "its", "this", "that", "it", "of", "for", "in", "on", "at", "to", "from", "with", "by", "and", "or",
    "is", "was", "be", "been", "being", "are", "still", "now", "also", "only", "just", "never", "always", "weak",
    "strong", "long", "short", "secure", "insecure", "secret", "private", "public", "new", "old", "current", "default",
    "known", "unknown", "given", "provided", "generated", "rotated", "revoked", "ok", "fine", "good", "bad", "here",
    "there", "below", "above", "case", "sensitive", "protected", "enabled", "disabled", "yes", "no",
    "off", "tbd", "todo", "xxx", "xxxx", "****", "placeholder", "example", "something", "nothing",
    "whatever", "what", "which", "who", "how", "where", "when", "why", "if", "as", "like", "used",
    "accepted", "rejected", "ignored", "sent", "shown", "printed", "logged", "kept", "managed", "handled",
    "manager", "field", "prompt", "input", "value", "variable", "env", "environment", "file", "param",
    "parameter", "argument", "option", "flag", "header", "type", "length", "policy", "rule", "rules", "hash",
    # code: what follows `secret = ` when the value is computed
    "await", "async", "lambda", "function", "yield", "return", "self", "def", "class", "get",
    # prose after a colon
    "after", "before", "see", "use", "via", "then",
}

# name [quote/bracket] separator [quote] value. The name is a whole identifier; the value either
# quoted (up to the same quote) or a bare run without spaces.
# These run on the lower-cased text (same places; far faster than case-insensitive patterns) from
# the word that makes a name secret; the name is then read back to its start in the real text.
_STEMS = ("pass", "pwd", "secret", "token", "key", "auth", "credential", "sig", "pat", "pin", "session", "sid",
          "cookie")
_ASSIGN = re.compile(
    r"""(?P<name>(?:pass|pwd|secret|token|key|auth|credential|sig|pat|pin|session|sid|cookie)[\w.\-]{0,40}?)"""
    r"""["'\]]{0,2}[ \t]{0,8}(?P<sep>:=|=>|=(?!=)|:|[ \t]is[ \t]|[ \t]was[ \t])[ \t]{0,8}"""
    r"""(?:(?P<q>["'`])(?P<qv>[^"'`\r\n]{1,400}?)(?P=q)|(?P<v>[^\s"'`,;(){}\[\]<>]{3,400}))""")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# Prose: up to four words between the name and "is" ("my password for the VPN is …").
_PROSE = re.compile(
    r"""\b(?P<name>pass(?:word|phrase|code)?|pwd|secret|token|api[ _-]?key|key|pin|credentials?)"""
    r"""(?:\s+(?!is\b|was\b|are\b)[\w@.\-/']+){1,4}?\s+(?:is|was|are)\s+(?:(?:now|still|currently|just|set to|"""
    r"""changed to|actually)\s+)?(?:(?P<q>["'`“‘])(?P<qv>[^"'`”’\r\n]{1,200}?)["'`”’]|(?P<v>[^\s"'`,;()]{3,200}))""")
# --password=x, --api-key x, -p=x style flags of command lines.
_FLAG = re.compile(r"""(?:^|\s)--?(?P<name>[\w\-]*(?:password|passwd|pass|secret|token|api-key|apikey|key))"""
                   r"""(?:=|\s+)(?:(?P<q>["'])(?P<qv>[^"'\r\n]{1,400}?)(?P=q)|(?P<v>[^\s"'-][^\s"']{2,400}))""")
# Long random-looking strings with no name: 32+ characters of the base64 alphabet mixing capitals,
# small letters and digits (hex alone is a commit, a digest or a UUID, and stays).
_RANDOM = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9][A-Za-z0-9+/_\-]{31,}={0,2}(?![A-Za-z0-9+/=_\-])")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Not a literal: a dotted name, a variable or template (`$X`, `%s`, `{x}`, `<x>`, `#{x}`), a shell
# default (`${X:-y}` leaves `-y`), a placeholder (`***`, `xxx`, `…`, `mcpm_…`).
_EXPRESSION = re.compile(r"^(?:[A-Za-z_][\w]*\.)+[A-Za-z_]\w*$|^\$|^%|^&|^@[A-Za-z]|^\*+$|^x{3,}$|^\.{3}|^<.*>$|"
                         r"^\{.*\}$|^!|^#\{|^-|…|\.\.\.$|\*$")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


@functools.lru_cache(maxsize=4096)   # the same few names come back all through a transcript
def _words(name: str) -> tuple[str, ...]:
    return tuple(w.lower() for part in re.split(r"[_.\-\s]+", name) for w in _CAMEL.findall(part))


@functools.lru_cache(maxsize=4096)
def strength(name: str) -> int:
    """2: the value is a secret whatever it looks like; 1: if it looks random; 0: not a secret name."""
    words = _words(name)
    if not words:
        return 0
    last = words[-1]
    joined = "".join(words[-2:])
    if last in _STRONG_LAST or joined in _STRONG_LAST:
        return 2
    if last in ("key", "token", "auth", "secret", "pat", "sig") and (
            (len(words) > 1 and words[-2] in _CRED_BEFORE) or (name.isupper() and len(words) > 1)):
        return 2      # api_key, refresh_token, OPENAI_API_KEY, GITHUB_TOKEN
    return 1 if last in _WEAK_LAST else 0


def looks_random(value: str) -> bool:
    """Random enough to be a key: no spaces, 8+ characters, a digit or a capital inside among
    letters (an identifier like `created_at` or `UserName` is not), and varied characters."""
    if len(value) < 8 or " " in value:
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = sum(c.isdigit() for c in value)
    if not digit and not (lower and upper):
        return False
    if digit == len(value) or re.fullmatch(r"[\d.:/\-T+Z ]+", value):   # numbers, dates, versions
        return False
    if not digit and re.fullmatch(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*", value):  # CamelCase words
        return False
    return entropy(value) >= (3.0 if len(value) < 16 else 3.3)


def _plain_value(value: str, name: str) -> bool:
    """Not a literal: a type, a word of prose, a variable, a call, a template, a placeholder."""
    low = value.lower().rstrip(".,:;!?")
    if low in _NOT_VALUES or _EXPRESSION.search(value) or "[REDACTED:" in value or _VERSION.fullmatch(value):
        return True
    if low.endswith(("ed", "ing", "ly")) and low.isalpha():     # "is required", "is missing", "is securely"
        return True
    words = set(_words(name))
    return bool(words & set(_words(value)) & (_STRONG_LAST | _WEAK_LAST | {"password"}))  # password=db_password


def _value(m: re.Match[str], text: str, prose: bool) -> tuple[str, int, int, bool] | None:
    """The value a match names, read from the real text (the match ran on the lower-cased one)."""
    if m.group("qv") is not None:
        return text[m.start("qv"):m.end("qv")], m.start("qv"), m.end("qv"), True
    if m.group("v") is not None:
        v = text[m.start("v"):m.end("v")]
        # A sentence's full stop is not part of the password; in `PW=abc!` the ! is.
        stripped = v.rstrip(".,:;!?)") if prose else v
        return stripped, m.start("v"), m.start("v") + len(stripped), False
    return None


_PASSWORDISH = {"password", "passwd", "passphrase", "passcode", "pwd", "pass"}


def _kind(name: str) -> str:
    words = _words(name)
    return "password" if words and words[-1] in _PASSWORDISH else "secret"


def _decide(name: str, value: str, quoted: bool, prose: bool) -> bool:
    level = strength(name)
    if level == 0 or not value.strip() or _plain_value(value, name):
        return False
    if level < 2:
        # `idempotency_key: <uuid>`, `next_token: <uuid>`: an identifier, unless the name says credential.
        return looks_random(value) and not _UUID.fullmatch(value)
    if looks_random(value):
        return True
    if prose and not quoted:
        # "the password is hunter2" but not "the pass is valid": a bare word after a strong name in
        # prose counts when it has a digit or a symbol, or the name says password outright.
        if any(not c.isalpha() for c in value):
            return True
        return _words(name)[-1] in ("password", "passwd", "passphrase", "passcode", "pwd") and len(value) >= 4
    return len(value) >= (3 if quoted else 4)


def _name(text: str, m: re.Match[str]) -> str:
    start = m.start("name")
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:m.end("name")]


def _matches(text: str, lowered: str) -> Iterator[Span]:
    if not any(n in lowered for n in _STEMS):
        return
    for pattern, prose_always in ((_ASSIGN, False), (_FLAG, False), (_PROSE, True)):
        for m in pattern.finditer(lowered):
            prose = prose_always or (pattern is _ASSIGN and m.group("sep").strip() in ("is", "was"))
            name = _name(text, m) if pattern is _ASSIGN else text[m.start("name"):m.end("name")]
            found = _value(m, text, prose)
            if found and _decide(name, found[0], found[3], prose=prose):
                yield found[1], found[2], _kind(name)


def spans(text: str, lowered: str) -> Iterator[Span]:
    """Where named secrets and nameless random strings are in `text`."""
    yield from _matches(text, lowered)
    for m in _RANDOM.finditer(text):
        value = m.group(0)
        if (any(c.isupper() for c in value) and not _SRI.match(value) and any(c.islower() for c in value)
                and sum(c.isdigit() for c in value) >= 2 and not _path(value) and not sequential(value)
                and entropy(value) >= min(4.5, math.log2(len(value)) - 0.8)):
            yield m.start(), m.end(), "high-entropy"


_SRI = re.compile(r"sha\d+-")   # subresource integrity: sha512-<base64 digest>


def sequential(value: str) -> bool:
    """An alphabet written out ("0123456789abcdefghijklmnopqrstuvwxyz"), not a key: a few runs
    of consecutive characters."""
    breaks = sum(1 for a, b in zip(value, value[1:], strict=False) if ord(b) != ord(a) + 1)
    return breaks <= 4


def placeholder(value: str) -> bool:
    """What docs and examples put where a credential goes (`user:pass@`, `:…@`, `${PW}`)."""
    low = value.lower()
    return (low in ("pass", "password", "passwd", "pwd", "secret", "token", "changeme", "change-me", "example")
            or bool(_EXPRESSION.search(value)) or bool(re.fullmatch(r"[x*•.…]+|<[^>]*>|\[[^\]]*\]", low)))


def _path(value: str) -> bool:
    """A file path or URL path (`src/Parser2/test_v3/Lexer.py`): parts that read as names."""
    parts = [p for p in value.split("/") if p]
    return len(parts) > 2 and not any(looks_random(p) for p in parts)
