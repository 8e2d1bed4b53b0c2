"""No secret is stored: a corpus of secret shapes, each said in prose, passed to a tool, printed by
a tool, and placed across the 120-character point where tool summaries are cut, captured through
the real capture path into a real database; then every table's text is scanned for the secret or
any 8-character piece of it. Also: ordinary prose and code left alone, trigger facts never made of
a sentence that held a secret, cuts that never split a marker."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from mcp_memory.capture import transcripts
from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.redact import redact
from mcp_memory.capture.transcripts import parse_text
from mcp_memory.capture.triggers import Matcher
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI

MARKER = "[REDACTED:"
_R = random.Random(26)
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    # Every piece random: a fixed run ("AAAA…") would be an 8-character fragment found anywhere.
    return "".join(_R.choice(alphabet) for _ in range(n))


def mixed(n: int) -> str:
    """Random, with at least two capitals, two small letters and two digits."""
    body = (rand(string.ascii_uppercase, 2) + rand(string.ascii_lowercase, 2) + rand(string.digits, 2)
            + rand(ALNUM, n - 6))
    return "".join(_R.sample(body, len(body)))


def b64(raw_len: int) -> str:
    return base64.b64encode(_R.randbytes(raw_len)).decode()


def jwt() -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return (f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': rand(ALNUM, 12)})}."
            f"{part({'sub': rand(ALNUM, 16), 'iat': _R.randint(10**9, 2 * 10**9)})}.{rand(URLSAFE, 43)}")


def pem(label: str) -> tuple[str, str]:
    body = "\n".join(b64(48) for _ in range(6))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


@dataclass(frozen=True)
class Secret:
    name: str
    line: str        # how it appears: a config line, a header, a URL, a sentence
    value: str       # what must not be stored, not even in part

    @property
    def fragments(self) -> set[str]:
        """Every 8-character piece of the value (lower-cased: full-text vectors are), within runs
        without white space (summaries fold white space); pieces of digits only are left out,
        since vector and number columns are full of them."""
        out = set()
        for run in self.value.lower().split():
            out.update(run[i:i + 8] for i in range(len(run) - 7))
        return {f for f in out if not f.isdigit()}


def _corpus() -> list[Secret]:
    s: list[Secret] = []

    def add(name: str, line: str, value: str) -> None:
        assert value in line, name
        s.append(Secret(name, line, value))

    def same(name: str, value: str, line: str = "{}") -> None:
        add(name, line.format(value), value)

    same("github-classic", "ghp_" + rand(ALNUM, 36), "export GH_TOKEN_FOR_CI={}")
    same("github-fine-grained", f"github_pat_{rand(ALNUM, 22)}_{rand(ALNUM, 59)}", "my github token is {}")
    same("gitlab", "glpat-" + rand(URLSAFE, 20), "git clone with {} as the password")
    same("slack-bot", f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}")
    hook = f"T{rand(string.ascii_uppercase + string.digits, 8)}/B{rand(string.ascii_uppercase + string.digits, 10)}/" \
           f"{rand(ALNUM, 24)}"
    add("slack-webhook", f"my slack webhook is https://hooks.slack.com/services/{hook}", hook)
    same("huggingface", "hf_" + rand(ALNUM, 34), "HF token: {}")
    same("npm", "npm_" + rand(ALNUM, 36), "//registry.npmjs.org/:_authToken={}")
    same("sendgrid", f"SG.{rand(URLSAFE, 22)}.{rand(URLSAFE, 43)}", "SENDGRID_API_KEY={}")
    basic = base64.b64encode(f"admin:{mixed(14)}".encode()).decode()
    same("basic-auth", basic, "Authorization: Basic {}")
    root = mixed(10) + "#!"
    same("root-pass-prose", root, "the root pass is '{}'")
    same("env-password", mixed(18), "DB_PASSWORD={}")
    same("yaml-password", "hunter" + rand(string.digits, 4) + rand(string.ascii_lowercase, 4), "  password: {}")
    same("passphrase-json", " ".join(rand(string.ascii_lowercase, 7) for _ in range(4)), '{{"passphrase": "{}"}}')
    same("vpn-password-prose", mixed(12), "my password for the VPN is {} so don't share it")
    same("api-key-entropy", b64(30), 'api_key = "{}"')
    same("service-token", mixed(32), "SERVICE_TOKEN: {}")
    same("client-secret", mixed(32), 'client_secret="{}"')
    same("credentials", mixed(24), "credentials = {}")
    same("git-url-creds", mixed(16), "git remote add origin https://deploy:{}@git.example.com/shop.git")
    same("postgres-url", mixed(20), "DATABASE_URL=postgresql://app:{}@db.internal:5432/prod")
    same("mongodb-url", mixed(20), "mongodb+srv://admin:{}@cluster0.mongodb.net/test?retryWrites=true")
    same("redis-url", mixed(24), "REDIS_URL=redis://:{}@cache:6379/0")
    key, body = pem("RSA PRIVATE KEY")
    add("rsa-private-key", key, body)
    key, body = pem("OPENSSH PRIVATE KEY")
    add("openssh-private-key", key, body)
    key, body = pem("PRIVATE KEY")
    add("pkcs8-private-key", key, body)
    same("aws-access-key-id", "AKIA" + rand(string.ascii_uppercase + string.digits, 16), "aws_access_key_id = {}")
    same("aws-secret-key", b64(30), "aws_secret_access_key = {}")
    same("aws-session-token", b64(120), "AWS_SESSION_TOKEN={}")
    same("stripe-secret", "sk_live_" + rand(ALNUM, 24), "stripe key {}")
    same("stripe-restricted", "rk_live_" + rand(ALNUM, 24))
    same("stripe-webhook", "whsec_" + rand(ALNUM, 32), "STRIPE_WEBHOOK_SECRET={}")
    same("google-api-key", "AIza" + rand(URLSAFE, 35), "maps key {} in the page")
    same("google-oauth-secret", "GOCSPX-" + rand(URLSAFE, 28))
    same("anthropic", "sk-ant-api03-" + rand(URLSAFE, 93) + "AA", "ANTHROPIC_API_KEY={}")
    same("openai-project", "sk-proj-" + rand(URLSAFE, 56), "use {} for the embeddings")
    same("openai-legacy", "sk-" + rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20))
    same("jwt", jwt(), "the session cookie holds {}")
    same("twilio-api-key", "SK" + rand(HEX, 32))
    same("twilio-auth-token", rand(HEX, 32), "TWILIO_AUTH_TOKEN={}")
    azure = b64(66)
    same("azure-storage", azure, "DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey={};"
         "EndpointSuffix=core.windows.net")
    same("azure-sas", b64(32).replace("+", "%2B").replace("/", "%2F"),
         "https://shopdata.blob.core.windows.net/c/a.csv?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig={}")
    same("azure-service-bus", b64(32), "Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=root;"
         "SharedAccessKey={}")
    same("discord-webhook", f"{rand(string.digits, 18)}/{rand(URLSAFE, 68)}", "https://discord.com/api/webhooks/{}")
    same("telegram-bot", f"{rand(string.digits, 10)}:AA{rand(URLSAFE, 33)}")
    same("bearer", mixed(40), "curl -H 'Authorization: Bearer {}' https://api.example.com")
    same("curl-user", mixed(14), "curl -u admin:{} https://jenkins.local/api")
    same("pypi", "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 80), "password = {}")
    same("mailchimp", rand(HEX, 32) + "-us14")
    same("heroku-uuid", str(uuid.UUID(int=_R.getrandbits(128))), "HEROKU_API_KEY={}")
    same("databricks", "dapi" + rand(HEX, 32))
    same("digitalocean", "dop_v1_" + rand(HEX, 64))
    same("vault", "hvs." + rand(URLSAFE, 90))
    age = rand(string.ascii_uppercase + string.digits, 58)
    add("age", "AGE-SECRET-KEY-1" + age, age)
    same("mcp-memory", f"mcpm_{rand(URLSAFE, 8)}.{rand(URLSAFE, 32)}")
    same("nameless-random", mixed(40), "use {} for prod")
    same("cli-flag", mixed(14), "mysqldump --password={} shop > dump.sql")
    same("cookie", mixed(32), "Cookie: sessionid={}; csrftoken=abc")
    same("grafana", f"glsa_{rand(ALNUM, 32)}_{rand(HEX, 8)}")
    same("shopify", "shpat_" + rand(HEX, 32))
    same("linear", "lin_api_" + rand(ALNUM, 40))
    same("groq", "gsk_" + rand(ALNUM, 52))
    return s


CORPUS = _corpus()
CUT = 120          # where tool summaries were cut before redaction ran (TOOL_INPUT_CHARS / TOOL_RESULT_CHARS)


def test_corpus_is_big_and_distinct() -> None:
    assert len(CORPUS) >= 40
    assert len({s.name for s in CORPUS}) == len(CORPUS)


def unmarked(text: str) -> str:
    """The text without our markers, whose kind names ("age-secret-key") are no leak."""
    return re.sub(r"\[redacted:[a-z0-9\-]+\]", " ", text.lower())


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_every_shape_is_redacted(secret: Secret) -> None:
    out, kinds = redact(secret.line)
    assert kinds and MARKER in out, out
    assert not any(f in unmarked(out) for f in secret.fragments), out


# --- the transcript: each secret four ways ----------------------------------------------------------

def _straddle(render, value: str) -> str:
    """Padding such that `value` (its first run without white space: JSON escapes line breaks,
    summaries fold them) starts 15 characters before the cut in render(padding)."""
    value = value.split()[0]
    pad = 0
    while True:
        shown = render("x" * pad)
        at = shown.find(value)
        if at >= CUT - 15 or pad > 400:
            assert CUT - 15 <= at < CUT, (at, shown[:160])
            return "x" * pad
        pad += 1


def _lines(session: str) -> list[dict]:
    stamp = iter(f"2026-03-02T{h:02d}:{m:02d}:00Z" for h in range(24) for m in range(60))
    out: list[dict] = []

    def entry(kind: str, content) -> None:
        out.append({"type": kind, "sessionId": session, "uuid": str(uuid.uuid4()), "timestamp": next(stamp),
                    "cwd": "/home/dana/work/shop", "message": {"role": kind, "content": content}})

    for n, s in enumerate(CORPUS):
        tool = f"t{n}"
        # 1. in prose: the user says it (and some of these lines set off a trigger).
        entry("user", f"Note {n}: {s.line}")
        # 2. in a tool's input, and 3. in its output.
        entry("assistant", [{"type": "text", "text": f"Saving item {n}."},
                            {"type": "tool_use", "id": tool, "name": "Bash",
                             "input": {"command": f"cat >> .env <<'EOF'\n{s.line}\nEOF"}}])
        entry("user", [{"type": "tool_result", "tool_use_id": tool, "content": f"$ cat .env\n{s.line}\n"}])
        # 4. across the old cut, in input and in output.
        args = {"command": "echo {pad} " + s.line}
        pad_in = _straddle(lambda p, a=args: json.dumps({"command": a["command"].replace("{pad}", p)},
                                                        ensure_ascii=False), s.value)
        pad_out = _straddle(lambda p, s=s: " ".join(f"{p} {s.line}".split()), s.value)
        entry("assistant", [{"type": "tool_use", "id": tool + "c", "name": "Bash",
                             "input": {"command": args["command"].replace("{pad}", pad_in)}}])
        entry("user", [{"type": "tool_result", "tool_use_id": tool + "c", "content": f"{pad_out} {s.line}"}])
        entry("assistant", f"Done with item {n}.")
    return out


async def _scan(dsn: str) -> tuple[dict[str, int], str]:
    """Every text-like column of every table in the public schema (vectors aside), as one
    lower-cased string; and the row count per table."""
    conn = await asyncpg.connect(dsn)
    try:
        cols = await conn.fetch(
            "SELECT c.table_name, c.column_name, c.data_type, c.udt_name FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_schema, table_name) "
            "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY 1, 2")
        tables: dict[str, list[str]] = {}
        for c in cols:
            tables.setdefault(c["table_name"], [])
            if c["udt_name"] in ("vector", "halfvec", "sparsevec"):
                continue
            if c["data_type"] in ("text", "character varying", "character", "json", "jsonb", "ARRAY", "tsvector",
                                  "bytea", "USER-DEFINED", "name"):
                tables[c["table_name"]].append(c["column_name"])
        counts: dict[str, int] = {}
        texts: list[str] = []
        for table, names in tables.items():
            counts[table] = await conn.fetchval(f'SELECT count(*) FROM "{table}"')
            if names:
                expr = ", ".join(f'"{n}"::text' for n in names)
                rows = await conn.fetch(f'SELECT concat_ws(\' \', {expr}) AS t FROM "{table}"')
                texts.extend(r["t"] or "" for r in rows)
        return counts, "\n".join(texts).lower()
    finally:
        await conn.close()


async def test_no_secret_reaches_any_table(database: Database, settings: Settings, db_url: str, alice: Principal,
                                           chat: ChatAPI, tmp_path: Path) -> None:
    # Decisions on, so every write also leaves a job row: the queue is scanned too.
    s = settings.model_copy(update=dict(decisions_provider="openai-compatible", decisions_base_url=chat.url,
                                        decisions_model="judge-1", decisions_mode="async"))
    service = await MemoryService.open(database, s)
    session = str(uuid.uuid4())
    path = tmp_path / f"{session}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _lines(session)))
    report = await Capturer(service, s, "claude-code").capture(alice, transcripts.read(path),
                                                               key=f"claude-code:{session}", path=str(path))
    assert report.episodes == 2 * len(CORPUS)   # each item: the user says it, the assistant does the rest

    counts, text = await _scan(db_url)
    for table in ("memories", "memory_history", "transcript_cursors", "memory_jobs"):
        assert counts.get(table, 0) > 0, (table, counts)
    # What was around the secrets is there: the scan reads what capture stored.
    assert all(f"note {n}:" in text for n in range(len(CORPUS)))
    assert text.count(MARKER.lower()) >= 4 * len(CORPUS)
    text = unmarked(text)
    leaks = {sec.name: sorted(f for f in sec.fragments if f in text)[:3] for sec in CORPUS}
    assert {k: v for k, v in leaks.items() if v} == {}

    # No sentence that held a secret became a trigger fact.
    facts = await database.admin.fetch("SELECT content FROM memories WHERE kind <> 'episode'")
    assert not [f["content"] for f in facts if MARKER in f["content"]]


# --- tool summaries: redacted whole, then cut ---------------------------------------------------------

def test_a_token_across_the_cut_is_gone_whole() -> None:
    token = "ghp_" + "ZZYYXXWWVVUUTTSSRRQQ" + rand(ALNUM, 16)
    for shown in (transcripts._tool_call("Bash", {"command": "x" * 75 + " git push https://" + token + "@github.com"}),
                  transcripts._tool_result("y" * 105 + " " + token)):
        assert "ZZYYXXWW" not in shown and "[REDACTED:github-token]" in shown, shown


def test_a_cut_never_splits_a_marker() -> None:
    for pad in range(100, 125):
        shown = transcripts._tool_result("y" * pad + " sk-ant-api03-" + rand(URLSAFE, 40) + " tail " * 30)
        assert "[REDACTED:anthropic-key]" in shown or "[REDACTED" not in shown, shown


def test_a_private_key_in_tool_input_json_is_gone() -> None:
    key, body = pem("RSA PRIVATE KEY")
    shown = transcripts._tool_call("Write", {"file_path": "/home/dana/.ssh/id_rsa", "content": key})
    assert not any(line[:12] in shown for line in body.splitlines()), shown


def test_tool_summaries_of_a_transcript_are_redacted() -> None:
    token = "hf_" + rand(ALNUM, 34)
    line = json.dumps({"type": "assistant", "sessionId": "s", "uuid": "u", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "x" * 80 + " HF_TOKEN=" + token}}]}})
    t = parse_text(line + "\n")
    assert token[:10] not in t.turns[0].text and "[REDACTED:" in t.turns[0].text
    assert t.turns[0].redacted


def test_openclaw_tool_calls_and_results_are_redacted() -> None:
    """OpenClaw names them differently (toolCall / arguments, a toolResult message)."""
    token, pw = "sk-ant-api03-" + rand(URLSAFE, 60), mixed(16)
    messages = [{"role": "user", "content": "deploy it"},
                {"role": "assistant", "content": [{"type": "toolCall", "name": "exec", "arguments": {
                    "command": "x" * 70 + f" ANTHROPIC_API_KEY={token}"}}]},
                {"role": "toolResult", "content": [{"type": "text", "text": "y" * 100 + f" DB_PASSWORD={pw}"}]}]
    turns = transcripts.openclaw_messages(messages)
    shown = "\n".join(t.text for t in turns)
    assert token[13:21] not in shown and pw[:8] not in shown and shown.count("[REDACTED:") == 2, shown
    assert set(turns[1].redacted) == {"anthropic-key", "password"}


# --- trigger facts --------------------------------------------------------------------------------

@pytest.mark.parametrize("sentence", [
    "My slack webhook is https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEFGH2/abcdefghijklmnopqrstuvwx",
    "Remember that the staging password is Zx9kq2Lm7.",
    "My github is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "My email is dana@example.com and my password is hunter22.",
    "Remember: the deploy key is [REDACTED:private-key]",
])
def test_a_sentence_with_a_secret_is_never_a_fact(sentence: str) -> None:
    assert Matcher().find(sentence) == []


def test_the_same_sentence_without_the_secret_is_still_a_fact() -> None:
    assert [f.trigger for f in Matcher().find("My slack handle is @dana.")] == ["contact"]


# --- ordinary text stays --------------------------------------------------------------------------

BENIGN = [
    # prose about passwords and tokens, not holding one
    "The password is required for login.", "Password: required", "password is too short",
    "Enter your password below.", "The token bucket refills every second.", "The secret is to stir slowly.",
    "The pass is valid until May.", "The API key is stored in 1Password.", "my password is in the vault",
    "Set the PASSWORD environment variable.", "I like password managers.", "the key is the primary key",
    "Basic understanding of the problem helps.", "Bearer authentication is used by the API.",
    "Authorization: required for every call", "The cache_key is computed from the path.",
    # code that names secrets without holding one
    "def connect(password: str, token: str | None = None) -> None:", "password = os.environ['DB_PASSWORD']",
    "token = self.token", "connect(password=password)", "const apiKey = process.env.API_KEY;",
    "headers['Authorization'] = f'Bearer {token}'", "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: <your-password>", "primary_key: id", "sort_key = created_at", "next_page_token: 2",
    '{"idempotency_key": "3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a"}', "if key == 'enter': submit()",
    # identifiers, hashes and paths: git SHAs, UUIDs and digests are not secrets (decided: kept)
    "Fixed in commit 9f2c1a7b3e4d5f6a7b8c9d0e1f2a3b4c5d6e7f80 yesterday.",
    "git checkout 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "session 3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a ended",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "/home/dana/work/shop/src/Parser2/test_v3/LexerTests.py", "See https://example.com/docs:8080",
    "pip install detect-secrets==1.5.0", "at 2026-03-02T09:00:00Z the job ran", "Use sk-learn for this",
    "ModuleNotFoundError: No module named 'AbstractSingletonProxyFactoryBean'",
    "Run git push origin main", "ssh git@github.com -p 22", "postgres://localhost:5432/shop",
    "The build took 12.5s and used 1.2 GB.", "ValueError: invalid literal for int() with base 10: 'abc'",
    # docs and examples: placeholders where a credential goes
    "export MCP_MEMORY_KEY=mcpm_…", "MCP_MEMORY_DATABASE_URL=postgresql://user:pass@host/db",
    "postgresql://mcp_memory:${POSTGRES_PASSWORD:-mcp_memory}@db:5432/mcp_memory", "curl -u user:password URL",
    "PASSWORD: ${POSTGRES_PASSWORD:-mcp_memory}", "postgres://app:…@db/prod", "an HMAC secret: HS* only",
    'digits = "0123456789abcdefghijklmnopqrstuvwxyz"', "api_key: <your key here>", "password: ********",
    "credential = await self._credential(request)", "secret = await cursor.fetchval(query)",
    "the value must look like a secret: after `password` any literal goes",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, [])


def test_a_long_text_finds_what_a_short_one_does() -> None:
    """Past 4,096 characters a shape looks only near its needles; a token on the line after its
    scheme word ("Bearer" then a line break) is still found."""
    token = mixed(24)   # too short for the nameless random-string rule: only the Bearer shape finds it
    short = f"Authorization: Bearer\n{token}\n"
    assert token not in redact(short)[0]
    assert token not in redact("filler line\n" * 1000 + short + "filler line\n" * 1000)[0]


def test_redaction_is_idempotent() -> None:
    for s in CORPUS[:10]:
        once, _ = redact(s.line)
        assert redact(once) == (once, [])


# --- hostile text ---------------------------------------------------------------------------------

HOSTILE = {  # shapes that make a backtracking pattern rescan a long run from every start
    "prefix repeated": "eyJ" * 350_000, "openai prefix repeated": "sk-" * 350_000, "slashes": "//a" * 350_000,
    "one long run": "a" * 1_000_000, "assignments without quotes": 'password = "' * 90_000,
    "name and spaces": "ibm_api_key" + " " * 1_000_000 + "x", "keys": "key: " * 200_000,
    "no closing quote": '"' + "Ab1" * 330_000, "url without @": "http://" + "a" * 1_000_000 + ":b",
}


def test_hostile_text_takes_linear_time() -> None:
    """1 MB of each shape in a child process with a generous deadline: a pattern whose time grows
    with the square of a run (as one did: `eyJ` repeated took 13 s at 200 KB) would take minutes."""
    code = ("import sys, json; from mcp_memory.capture.redact import redact\n"
            "for text in json.load(sys.stdin).values(): redact(text)\n")
    subprocess.run([sys.executable, "-c", code], input=json.dumps(HOSTILE), text=True, check=True, timeout=90)
