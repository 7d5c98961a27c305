"""java.util.Properties syntax, as MirrorMaker 2 reads mm2.properties: strings in, strings out."""

from __future__ import annotations

import re
from collections.abc import Iterable


def _logical_lines(text: str) -> Iterable[str]:
    """Physical lines joined where a line ends in an odd number of backslashes."""
    pending: str | None = None
    # Only \n, \r and \r\n end lines in java.util.Properties (not str.splitlines' extras).
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> list[tuple[str, str]]:
    """Key/value pairs in file order, with java.util.Properties syntax: `#`/`!` comments,
    backslash continuations, `key=value`, `key: value` and `key value` separators, escapes."""
    pairs: list[tuple[str, str]] = []
    for line in _logical_lines(text):
        i = 0
        key_chars: list[str] = []
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if ch in "=: \t\f":
                break
            key_chars.append(ch)
            i += 1
        # skip whitespace, then at most one '=' or ':', then whitespace
        while i < len(line) and line[i] in " \t\f":
            i += 1
        if i < len(line) and line[i] in "=:":
            i += 1
            while i < len(line) and line[i] in " \t\f":
                i += 1
        key = _unescape("".join(key_chars))
        # Trailing whitespace is kept, as Java does; readers strip where MM2's ConfigDef would.
        value = _unescape(line[i:])
        pairs.append((key, value))
    return pairs


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ch in "=:#!" and is_key:
            out.append("\\" + ch)
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        else:
            out.append(ch)
    return "".join(out)


def render_properties(pairs: Iterable[tuple[str, str]]) -> str:
    return "".join(f"{_escape(k, True)} = {_escape(v, False)}\n" for k, v in pairs)


__all__ = ["parse_properties", "render_properties"]
