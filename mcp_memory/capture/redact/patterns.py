"""Secrets recognisable by their shape: vendor token formats, key blocks, credentials in URLs and
headers. Each row names a kind, the pattern, and literals one of which the text must hold
(lower-cased) before the pattern runs at all: most text holds none, and `in` is far cheaper
than a regular expression over a long transcript. A named group `secret` marks the part
replaced; without one the whole match goes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .named import placeholder


@dataclass(frozen=True)
class Shape:
    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]   # lower-cased literals, any one of which the text must contain
    check: Callable[[str], bool] | None = None   # the part found must pass this too


# Not in the middle of a longer word. A look-behind, not a check after the match: inside a long run
# ("eyJeyJeyJ…") every later start fails at once instead of scanning to the run's end again.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"


def _shape(kind: str, pattern: str, *needles: str, flags: int = 0, check: Callable[[str], bool] | None = None
           ) -> Shape:
    return Shape(kind, re.compile(pattern, flags), needles, check)


def _real(value: str) -> bool:
    return not placeholder(value)


def _not_a_word(value: str) -> bool:
    """A credential, not prose: "Basic understanding", "Bearer authentication", "Authorization:
    required" name a word; a token has a digit, a capital inside, or token punctuation."""
    return (any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])
            or any(c in "._~+/=-" for c in value.strip("=")))


# Token bodies stop at anything a token does not hold, so a token glued to punctuation in prose
# ("…key was sk-ant-…." ) loses only the token.

SHAPES: list[Shape] = [
    _shape("private-key", r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY"
           r"(?: BLOCK)?-----|\Z)", "private key", flags=re.S),
    _shape("private-key", r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: *[0-9a-fA-F]+|\Z)", "putty-user-key",
           flags=re.S),
    _shape("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}", "age-secret-key"),
    _shape("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_\-]{16,}", "sk-ant-"),
    _shape("openai-key", _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", "sk-"),
    _shape("mcp-memory-key", _B + r"mcpm_[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}", "mcpm_"),
    _shape("aws-access-key", _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)"
           r"[0-9A-Z]{16}" + _E, "akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "aipa", "anpa",
           "anva", "apka"),
    _shape("github-token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})", "ghp_", "gho_",
           "ghu_", "ghs_", "ghr_", "github_pat_"),
    _shape("gitlab-token", _B + r"(?:gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct)-[A-Za-z0-9_\-]{20,}"
           r"|GR1348941[A-Za-z0-9_\-]{20,})", "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-",
           "glptt-", "glagent-", "gloas-", "glffct-", "gr1348941"),
    _shape("slack-token", _B + r"xox[abposrce]-[A-Za-z0-9\-]{10,}", "xox"),
    _shape("slack-token", _B + r"xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+", "xapp-"),
    _shape("slack-webhook", r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+",
           "hooks.slack.com"),
    _shape("discord-webhook", r"(?:https?://)?(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/"
           r"[A-Za-z0-9_\-]+", "/api/webhooks/"),
    _shape("teams-webhook", r"https?://[\w.\-]+\.webhook\.office\.com/webhook\w*/[^\s\"'<>]+", "webhook.office.com"),
    _shape("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}", "aiza"),
    _shape("google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{20,}", "gocspx-"),
    _shape("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_\-]{20,}", "ya29."),
    _shape("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", "_live_", "_test_"),
    _shape("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{20,}", "whsec_"),
    _shape("huggingface-token", _B + r"(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})", "hf_", "api_org_"),
    _shape("npm-token", _B + r"npm_[A-Za-z0-9]{30,}", "npm_"),
    _shape("npm-token", r"(?i)_authToken\s*=\s*(?P<secret>[^\s\"']{8,})", "_authtoken"),
    _shape("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-"),
    _shape("sendgrid-key", _B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", "sg."),
    _shape("twilio-key", _B + r"(?:AC|SK)[0-9a-fA-F]{32}" + _E, "ac", "sk"),
    _shape("mailgun-key", _B + r"key-[0-9a-f]{32}" + _E, "key-"),
    _shape("mailchimp-key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, "-us"),
    _shape("databricks-token", _B + r"dapi[0-9a-f]{32}(?:-\d)?" + _E, "dapi"),
    _shape("digitalocean-token", _B + r"do[por]_v1_[0-9a-f]{64}", "_v1_"),
    _shape("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}", "shp"),
    _shape("linear-key", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}", "lin_"),
    _shape("doppler-token", _B + r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{32,}", "dp."),
    _shape("vault-token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", "hvs.", "hvb.", "hvr."),
    _shape("telegram-bot-token", _B + r"\d{8,10}:AA[0-9A-Za-z_\-]{32,}", ":aa"),
    _shape("square-token", _B + r"(?:sq0csp|sq0atp|EAAA)[0-9A-Za-z_\-]{22,}", "sq0", "eaaa"),
    _shape("grafana-token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
           "glsa_", "glc_"),
    _shape("sentry-token", _B + r"sntr[ysu]_[A-Za-z0-9+/=_\-]{30,}", "sntr"),
    _shape("postman-key", _B + r"PMAK-[0-9a-fA-F]{24}-[0-9a-fA-F]{34}", "pmak-"),
    _shape("atlassian-token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}", "atatt3"),
    _shape("groq-key", _B + r"gsk_[A-Za-z0-9]{40,}", "gsk_"),
    _shape("xai-key", _B + r"xai-[A-Za-z0-9]{50,}", "xai-"),
    _shape("perplexity-key", _B + r"pplx-[A-Za-z0-9]{40,}", "pplx-"),
    _shape("replicate-token", _B + r"r8_[A-Za-z0-9]{30,}", "r8_"),
    _shape("notion-token", _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})", "secret_", "ntn_"),
    _shape("figma-token", _B + r"figd_[A-Za-z0-9_\-]{30,}", "figd_"),
    _shape("airtable-token", _B + r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}", "pat"),
    _shape("supabase-token", _B + r"sbp_[0-9a-f]{40}", "sbp_"),
    _shape("planetscale-token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-=.]{32,}", "pscale_"),
    _shape("pulumi-token", _B + r"pul-[0-9a-f]{40}", "pul-"),
    _shape("tailscale-key", _B + r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]+-[A-Za-z0-9]+", "tskey-"),
    _shape("netlify-token", _B + r"nfp_[A-Za-z0-9]{36,}", "nfp_"),
    _shape("fly-token", r"\bFlyV1 fm\d_[A-Za-z0-9+/=_,\-]{30,}", "flyv1"),
    _shape("onepassword-token", _B + r"ops_eyJ[A-Za-z0-9+/=_\-]{30,}", "ops_eyj"),
    _shape("azure-ad-secret", _B + r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _E, "q~"),
    _shape("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", "eyj"),
    # Azure connection strings and SAS URLs, and any connection string's password field.
    _shape("azure-key", r"(?i)(?:AccountKey|SharedAccessKey|SharedSecret)\s*=\s*(?P<secret>[A-Za-z0-9+/=]{16,})",
           "accountkey", "sharedaccesskey", "sharedsecret"),
    _shape("azure-sas", r"(?i)(?:SharedAccessSignature\s*=\s*|[?&;]sig=)(?P<secret>[A-Za-z0-9%+/=]{16,})",
           "sharedaccesssignature", "sig="),
    # Credentials in headers: Basic and Bearer schemes, and token / key schemes after Authorization.
    _shape("basic-auth", r"(?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", "basic",
           check=_not_a_word),
    _shape("bearer-token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)", "bearer", check=_not_a_word),
    _shape("authorization", r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:token|digest|apikey|key"
           r"|sso-key|splunk|ssws|dsn)\s+)?(?P<secret>[^\s\"',;]{8,})", "authorization", check=_not_a_word),
    # A Cookie header's name=value pairs (the word in prose has no `=` after it).
    _shape("cookie", r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*[\"']?(?P<secret>[\w.\-]+=[^\r\n\"']{8,})", "cookie"),
    # user:password@ in any URL (database URLs, git remotes, proxies): the password part, or a
    # lone token before the @ of an https URL (https://<token>@github.com).
    _shape("url-password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@", "://",
           check=_real),
    _shape("url-token", r"(?i)\bhttps?://(?P<secret>[A-Za-z0-9_\-]{20,})@", "://"),
    # curl -u user:password, --user user:password
    _shape("cli-password", r"(?:^|\s)(?:-u|--user|--proxy-user)[\s=][\"']?[^\s:\"']+:(?P<secret>[^\s\"']+)",
           "-u", "--user", "--proxy-user", check=_real),
]
