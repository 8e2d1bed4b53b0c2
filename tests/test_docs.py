"""The README and docs/ as a newcomer meets them: the README stays a front door, its test command
is the one CI runs, every page is reachable from it, and no link or anchor points nowhere."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted([README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_slug_matches_github() -> None:
    assert slug("What a write touches (`related`)") == "what-a-write-touches-related"
    assert slug("`/ready` components") == "ready-components"
    assert slug("Your own harness (Python, remote)") == "your-own-harness-python-remote"


def test_readme_is_a_front_door() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = README.read_text()
    assert ci in readme, f"the README's quick start no longer shows .ci/run's command: {ci}"
    assert "python3 -m pip install -e . && mcp-memory serve" in readme


def test_every_link_and_anchor_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked offline
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme_and_starts_with_its_title() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(README)}
    for page in (ROOT / "docs").glob("*.md"):
        assert page.resolve() in linked, f"README does not link {page.name}"
        assert page.read_text().startswith("# "), f"{page.name} does not start with its title"


def test_the_commands_the_readme_names_exist() -> None:
    from mcp_memory.cli import _parser

    parser = _parser()
    commands = {name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                for name in action.choices}
    for page in (README, ROOT / "docs" / "cli.md"):
        named = set(re.findall(r"`mcp-memory ([a-z]\w*)", page.read_text()))
        assert named, page.name
        assert named <= commands, f"{page.name} names commands the CLI lacks: {sorted(named - commands)}"
