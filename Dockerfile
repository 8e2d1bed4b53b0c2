# mcp-memory over streamable HTTP (/mcp), SSE (/sse) and GET /health on port 8765.
# Needs a PostgreSQL with pgvector: see docker-compose.yml. The first start prints an admin API key.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Build from a copy of only what the package is made of (README.md is its long description), then
# drop the copy: the image runs the installed package.
COPY pyproject.toml README.md /tmp/src/
COPY mcp_memory /tmp/src/mcp_memory
COPY sql /tmp/src/sql
RUN pip install /tmp/src \
    && rm -rf /tmp/src

WORKDIR /app
COPY docker/entrypoint.sh /app/docker/entrypoint.sh
RUN chmod 0755 /app/docker/entrypoint.sh \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /home/mcp --shell /usr/sbin/nologin mcp \
    && mkdir -p /data \
    && chown mcp:mcp /data

# A named volume mounted at /data starts out with this directory's owner, so `mcp` can write it.
ENV MCP_MEMORY_DATA_DIR=/data \
    MCP_MEMORY_HOST=0.0.0.0 \
    MCP_MEMORY_PORT=8765

USER mcp
EXPOSE 8765
ENTRYPOINT ["/app/docker/entrypoint.sh"]
