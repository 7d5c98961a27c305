"""Samples of a metric in Prometheus text exposition (a lag exporter's or a worker's JMX agent's
/metrics): what `bin/status` reads from them. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterator

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _unescaped(value: str) -> str:
    return re.sub(r"\\(.)", lambda e: "\n" if e[1] == "n" else e[1], value)


def samples(text: str | None, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """Each sample of metric `name` in `text`: its labels and value (lines that do not parse, and
    values that are not numbers, are skipped)."""
    for line in (text or "").splitlines():
        m = _SAMPLE.match(line.strip())
        if m is None or m[1] != name:
            continue
        try:
            value = float(m[3])
        except ValueError:
            continue
        yield {k: _unescaped(v) for k, v in _LABEL.findall(m[2] or "")}, value
