"""What the server tells its operator: Prometheus metrics, OpenTelemetry spans, request ids and
JSON-lines logs, readiness checks. Every layer reports through here; it imports nothing above
`config`, so any module may use it without an import circle."""
