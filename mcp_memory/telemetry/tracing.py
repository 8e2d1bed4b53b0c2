"""OpenTelemetry spans. The code always asks the API for spans (free when no SDK is set up); the
SDK is installed only when the standard OTEL_* variables ask for an exporter, so tracing is off
by default. Span attributes carry names, counts and ids, never memory text, queries or secrets."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from .context import request_id

log = logging.getLogger(__name__)
tracer = trace.get_tracer("mcp_memory")
_configured = False


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Span]:
    """A span named `name` with `attributes` and the current request id; an exception marks it
    failed with the exception's type only (its message may quote the input)."""
    rid = request_id()
    attrs = {k: v for k, v in attributes.items() if v is not None}
    if rid:
        attrs["mcp_memory.request_id"] = rid
    with tracer.start_as_current_span(name, attributes=attrs, record_exception=False,
                                      set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__qualname__)
            current.set_status(Status(StatusCode.ERROR))
            raise


def wanted() -> bool:
    """The OTEL_* variables ask for traces: an exporter other than none, or an OTLP endpoint."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure() -> bool:
    """Install the SDK's tracer provider and the asyncpg instrumentation when `wanted()`, once per
    process. True when tracing is on. Without the SDK installed (pip install 'mcp-memory[otel]')
    it says so on stderr and stays off."""
    global _configured
    if _configured or not wanted():
        return _configured
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        log.warning("OTEL_* variables ask for traces but the OpenTelemetry SDK is not installed: "
                    "pip install 'mcp-memory[otel]'")
        return False
    names = [n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").lower().split(",") if n.strip()]
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "console":
            exporters.append(ConsoleSpanExporter(out=sys.stderr))  # stdout is the stdio protocol's
        elif name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError:
                log.warning("OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http: "
                            "pip install 'mcp-memory[otel]'")
                continue
            exporters.append(OTLPSpanExporter())
        else:
            log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console)", name)
    if not exporters:
        return False
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "mcp-memory")})
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    instrument_asyncpg()
    _configured = True
    log.info("OpenTelemetry tracing on (%s)", ", ".join(names))
    return True


def instrument_asyncpg(provider: Any = None) -> bool:
    """Spans for SQL through asyncpg. The instrumentation records the statement text (with $n
    placeholders; values are never in it: every query here passes them as arguments) and no
    parameters. Literals in statements are only model names and the caller's scope ids (sql.literal)."""
    try:
        from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    except ImportError:
        return False
    instrumentor = AsyncPGInstrumentor(capture_parameters=False)
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(**({"tracer_provider": provider} if provider is not None else {}))
    return True
