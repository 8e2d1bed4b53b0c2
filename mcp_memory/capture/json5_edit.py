"""Editing a JSON5 file (OpenClaw's openclaw.json) without losing its comments, trailing commas or
unquoted keys: json-five parses it into a round-trip model; the edit is made on plain Python data
as for JSON, and only the members that changed are carried into the model, so everything else
(comments included) is written back byte for byte.

Comments belong to the member they stand above; a comment on the same line as a member belongs to
it. Taking a member out takes those with it and nothing else."""

from __future__ import annotations

import difflib
import json
from typing import Any

# json-five installs a module named `json5`, as does the unrelated `json5` package (which cannot
# keep comments). Imported lazily so Claude Code installs never need it.
_MISSING = ("OpenClaw's JSON5 config needs the json-five package (`pip install json-five`); the module "
            "`json5` here is {what}. Reinstall mcp-memory in its own environment (pipx / uv tool)")


class JSON5Error(ValueError):
    """The text is not JSON5, or an edit could not be carried into it faithfully."""


def _lib() -> Any:
    try:
        import json5
        from json5 import dumper, loader, model
    except ImportError:
        raise JSON5Error(_MISSING.format(what="missing")) from None
    if not hasattr(loader, "ModelLoader") or not hasattr(dumper, "ModelDumper"):
        raise JSON5Error(_MISSING.format(what="another package's (no round-trip model)"))
    return json5, loader, dumper, model


def parse(text: str) -> Any:
    json5, *_ = _lib()
    try:
        return json5.loads(text)
    except Exception as exc:  # json-five raises several kinds for bad input
        raise JSON5Error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def edit(text: str, new: Any) -> str:
    """`text` rewritten to hold `new`, keeping every part of it that did not change."""
    json5, loader, dumper, model = _lib()
    try:
        root = json5.loads(text, loader=loader.ModelLoader())
        old = json5.loads(text)
    except Exception as exc:
        raise JSON5Error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    step = _indent_of(root.value, model) or "  "
    root.value = _Sync(json5, loader, model, step).value(root.value, old, new, "")
    out: str = json5.dumps(root, dumper=dumper.ModelDumper())
    if parse(out) != new:   # never write a file that does not say what we meant
        raise JSON5Error("the edit could not be carried into the file's layout")
    return out


def _indent_of(node: Any, model: Any) -> str | None:
    """The indentation of a container's first member, or None when it is written on one line."""
    if not isinstance(node, (model.JSONObject, model.JSONArray)):
        return None
    first = node.keys[0] if isinstance(node, model.JSONObject) and node.keys else \
        node.values[0] if isinstance(node, model.JSONArray) and node.values else None
    before = list(node.leading_wsc) + (list(first.wsc_before) if first is not None else [])
    for item in reversed(before):
        if isinstance(item, str) and "\n" in item:
            return item.rsplit("\n", 1)[1]
    return None


def _split_line(wsc: list[Any]) -> tuple[list[Any], list[Any]]:
    """(what stays on the current line, the rest from the first line break on)."""
    for i, item in enumerate(wsc):
        if isinstance(item, str) and "\n" in item:
            return wsc[:i], wsc[i:]
    return wsc, []


class _Sync:
    def __init__(self, json5: Any, loader: Any, model: Any, step: str) -> None:
        self.json5, self.loader, self.model, self.step = json5, loader, model, step

    def value(self, node: Any, old: Any, new: Any, indent: str) -> Any:
        m = self.model
        if old == new and type(old) is type(new):
            return node
        if isinstance(node, m.JSONObject) and isinstance(old, dict) and isinstance(new, dict):
            self._object(node, old, new, indent)
            return node
        if isinstance(node, m.JSONArray) and isinstance(old, list) and isinstance(new, list):
            self._array(node, old, new, indent)
            return node
        fresh = self._node(new, indent, multiline=_indent_of(node, m) is not None or isinstance(new, (dict, list)))
        fresh.wsc_before, fresh.wsc_after = node.wsc_before, node.wsc_after
        return fresh

    # --- building new nodes ------------------------------------------------------------------

    def _node(self, value: Any, indent: str, multiline: bool = True) -> Any:
        text = json.dumps(value, indent=len(self.step) if multiline else None, ensure_ascii=False)
        if multiline:
            text = text.replace("\n", "\n" + indent)
        return self.json5.loads(text, loader=self.loader.ModelLoader()).value

    def _key(self, name: str, bare: bool) -> Any:
        identifier = bare and name.isidentifier()
        text = f"{{{name if identifier else json.dumps(name, ensure_ascii=False)}: 0}}"
        return self.json5.loads(text, loader=self.loader.ModelLoader()).value.keys[0]

    # --- objects and arrays ------------------------------------------------------------------

    def _object(self, node: Any, old: dict[str, Any], new: dict[str, Any], indent: str) -> None:
        inner = _indent_of(node, self.model)
        member = inner if inner is not None else indent + self.step
        for name in [k for k in old if k not in new]:
            self._remove(node, self._index(node, name))
        for name in [k for k in new if k in old and old[k] != new[k]]:
            i = self._index(node, name)
            node.values[i] = self.value(node.values[i], old[name], new[name], member)
        for name in [k for k in new if k not in old]:
            # Written as the container's first key is (unquoted when it is, quoted otherwise).
            key = self._key(name, bool(node.keys) and isinstance(node.keys[0], self.model.Identifier))
            key.wsc_after = []
            value = self._node(new[name], member, multiline=inner is not None or not node.keys)
            value.wsc_before = [" "]
            self._append(node, key, value, inner, indent, not node.keys)

    def _array(self, node: Any, old: list[Any], new: list[Any], indent: str) -> None:
        inner = _indent_of(node, self.model)
        member = inner if inner is not None else indent + self.step
        keys = [json.dumps(v, sort_keys=True) for v in old]
        ops = difflib.SequenceMatcher(a=keys, b=[json.dumps(v, sort_keys=True) for v in new], autojunk=False)
        for tag, i1, i2, j1, j2 in reversed(ops.get_opcodes()):
            if tag == "equal":
                continue
            for i in reversed(range(i1, i2)):
                self._remove(node, i)
            for j in range(j1, j2):
                at = i1 + (j - j1)
                item = self._node(new[j], member, multiline=inner is not None)
                if at >= len(node.values):
                    inner = _indent_of(node, self.model)
                    self._append(node, None, item, inner, indent, not node.values)
                else:   # before an existing item, laid out like it
                    item.wsc_before = list(node.values[at].wsc_before) if at else []
                    node.values.insert(at, item)

    def _index(self, node: Any, name: str) -> int:
        names = [k.name if isinstance(k, self.model.Identifier) else k.characters for k in node.keys]
        return len(names) - 1 - names[::-1].index(name)   # a repeated key: the last one counts

    def _heads(self, node: Any) -> list[Any]:
        return node.keys if isinstance(node, self.model.JSONObject) else node.values

    def _before(self, node: Any, i: int) -> list[Any]:
        return node.leading_wsc + self._heads(node)[0].wsc_before if i == 0 else self._heads(node)[i].wsc_before

    def _set_before(self, node: Any, i: int, wsc: list[Any]) -> None:
        if i == 0:
            node.leading_wsc, self._heads(node)[0].wsc_before = wsc, []
        else:
            self._heads(node)[i].wsc_before = wsc

    def _tail(self, node: Any) -> list[Any]:
        """Everything between the last member and the closing bracket, taken off the model."""
        tail: list[Any] = []
        if node.values:
            tail += node.values[-1].wsc_after
            node.values[-1].wsc_after = []
        if node.trailing_comma is not None:
            tail += node.trailing_comma.wsc_before + node.trailing_comma.wsc_after
            node.trailing_comma.wsc_before, node.trailing_comma.wsc_after = [], []
        if not node.values:
            tail = node.leading_wsc + tail
            node.leading_wsc = []
        return tail

    def _set_tail(self, node: Any, tail: list[Any]) -> None:
        if not node.values:
            node.trailing_comma = None   # `{,}` is not JSON5
            node.leading_wsc = [] if all(isinstance(x, str) and not x.strip() for x in tail) else tail
        elif node.trailing_comma is not None:
            node.trailing_comma.wsc_after = tail
        else:
            node.values[-1].wsc_after = tail

    def _remove(self, node: Any, i: int) -> None:
        heads = self._heads(node)
        last = i == len(heads) - 1
        keep, _ = _split_line(self._before(node, i))   # the line before's own comment stays
        if i == 0:
            node.leading_wsc = []
        if last:
            tail = self._tail(node)
            del heads[i]
            if heads is not node.values:
                del node.values[i]
            _, rest = _split_line(tail)   # drop the removed member's same-line comment
            self._set_tail(node, self._tail(node) + keep + rest)
        else:
            _, rest = _split_line(self._before(node, i + 1))
            del heads[i]
            if heads is not node.values:
                del node.values[i]
            self._set_before(node, i, keep + rest)

    def _append(self, node: Any, key: Any, value: Any, inner: str | None, indent: str, empty: bool) -> None:
        head = key if key is not None else value
        tail = self._tail(node)
        body, close = (tail[:-1], tail[-1]) if tail and isinstance(tail[-1], str) else (tail, "")
        if inner is None and empty:   # an empty container: open it onto lines of its own
            body, close = [], "\n" + indent
            inner = indent + self.step
        if inner is None:
            head.wsc_before = [*body, " "] if node.values else body
        else:
            head.wsc_before = [*body, "\n" + inner]
        if key is not None:
            node.keys.append(key)
        node.values.append(value)
        self._set_tail(node, [close] if close else [])
