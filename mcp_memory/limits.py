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
MAX_ABOUT = 10  # entities a memory is said to be about
MAX_NAME_CHARS = 100  # one entity's name, as the writer gives it
MAX_KEY_WORDS_CHARS = 60  # an attribute, in the writer's words ('home city')
MAX_PRIORITY = 1000
# A request's line and headers as the HTTP parser buffers them (h11's own default is 16 KiB): room
# for a browser's URL with an over-long query, so the console can answer it with a 400 naming the
# field instead of the parser's bare "Invalid HTTP request received."
MAX_REQUEST_HEAD_BYTES = 256 * 1024
