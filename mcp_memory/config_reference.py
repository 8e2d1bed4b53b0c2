"""docs/configuration.md, generated from `Settings` so the page cannot drift from the code.

    python -m mcp_memory.config_reference            # rewrite docs/configuration.md
    python -m mcp_memory.config_reference --check    # exit 1 when the page and the code disagree
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from .config import ADVANCED_SECTIONS, ENV_PREFIX, SECTIONS, Settings

PAGE = Path("docs/configuration.md")

HEADER = f"""# Configuration

Every setting is an environment variable with the prefix `{ENV_PREFIX}`, read once at start-up.
Set them where the server starts: in the `env` block of a harness's MCP entry, in the shell before
`mcp-memory serve`, or in `docker-compose.yml`. Lists and maps are JSON
(`{ENV_PREFIX}CAPTURE_EXCLUDE_PROJECTS='["secret-client"]'`). A value that cannot work stops
start-up with a message naming the variable and the fix. `mcp-memory doctor` shows what the server
sees.

This page is generated from `mcp_memory/config/`: edit the code, then run
`python -m mcp_memory.config_reference` (tests/test_config_reference.py fails while they differ).

Sections: {{toc}}.
"""


def env_name(name: str) -> str:
    return f"{ENV_PREFIX}{name.upper()}"


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join("unset" if a is type(None) else _type(a) for a in args)
    if origin in (list, dict):
        return f"{origin.__name__} (JSON)"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, Path):  # differs per machine: the description says where
            return "per platform"
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict):
        return f"`{json.dumps(value)}`"
    if value == "":
        return "`''`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    fields = Settings.model_fields
    titles = [f"[{name}{' (advanced)' if name in ADVANCED_SECTIONS else ''}](#{name})" for name in SECTIONS]
    out = [HEADER.replace("{toc}", ", ".join(titles))]
    # Advanced sections last, whatever their place in SECTIONS.
    order = sorted(SECTIONS, key=lambda name: name in ADVANCED_SECTIONS)
    for section in order:
        intro, names = SECTIONS[section]
        out += [f"## {section}", "", intro, "",
                "| Setting | Environment variable | Type | Default | Description |",
                "|---|---|---|---|---|"]
        for name in names:
            field = fields[name]
            out.append(f"| `{name}` | `{env_name(name)}` | {_type(field.annotation)} | {_default(field)} "
                       f"| {_cell(field.description or '')} |")
        out.append("")
    return "\n".join(out)


def unplaced() -> list[str]:
    """Settings no section lists, and names a section lists twice or that are no setting."""
    listed = [name for _, names in SECTIONS.values() for name in names]
    fields = set(Settings.model_fields)
    return sorted((fields - set(listed)) | (set(listed) - fields) | {n for n in listed if listed.count(n) > 1})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_memory.config_reference", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    parser.add_argument("path", nargs="?", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    args = parser.parse_args(argv)
    if wrong := unplaced():
        print(f"settings to place in exactly one of config.SECTIONS: {', '.join(wrong)}", file=sys.stderr)
        return 1
    page = render()
    if args.check:
        if not args.path.exists() or args.path.read_text() != page:
            print(f"{args.path} differs from the settings: run python -m mcp_memory.config_reference",
                  file=sys.stderr)
            return 1
        return 0
    args.path.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
