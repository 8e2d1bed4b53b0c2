"""The largest values a tool accepts, in one place: the tools' input schemas publish them, and
the settings of the same name may tighten them, never loosen them (so what a schema promises,
the server keeps)."""

MAX_CONTENT_CHARS = 32_000
MAX_TITLE_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_QUERY_CHARS = 2000
MAX_REASON_CHARS = 1000
MAX_KEY_CHARS = 200  # idempotency keys, forget tokens
MAX_BATCH = 500
MAX_PRIORITY = 1000
