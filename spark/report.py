"""The validation report: checks with a status, per-partition numbers, JSON and a table.

Statuses: pass, fail, warn (reported, does not fail the run: e.g. duplicates under
at-least-once), skip (could not be evaluated and says why).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


@dataclass
class Check:
    name: str
    status: Status
    detail: str = ""


@dataclass
class TopicReport:
    source_topic: str
    remote_topic: str
    partitions: list[dict[str, Any]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    offset_syncs: dict[str, Any] = field(default_factory=dict)
    checkpoints: dict[str, Any] = field(default_factory=dict)


@dataclass
class FlowReport:
    name: str
    source: str
    target: str
    exactly_once: bool
    topics: list[TopicReport] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    catch_up: dict[str, Any] = field(default_factory=dict)
    group_offsets: dict[str, Any] = field(default_factory=dict)
    heartbeats: dict[str, Any] = field(default_factory=dict)
    # The isolation level each side was read with ({"source": ..., "target": ...}).
    isolation: dict[str, str] = field(default_factory=dict)
    # What the worker group's lag exporter found for the flow (spark.expired.SentinelReading.to_json).
    sentinel: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    meta: dict[str, Any]
    flows: list[FlowReport] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)  # global: loops
    loops: list[dict[str, str]] = field(default_factory=list)

    def failed_checks(self) -> list[str]:
        out = [f"{c.name}" for c in self.checks if c.status is Status.FAIL]
        for f in self.flows:
            out += [f"{f.name}: {c.name}" for c in f.checks if c.status is Status.FAIL]
            for t in f.topics:
                out += [f"{f.name}: {t.source_topic}: {c.name}" for c in t.checks if c.status is Status.FAIL]
        return out

    @property
    def passed(self) -> bool:
        return not self.failed_checks()

    def to_dict(self) -> dict[str, Any]:
        def checks(cs: list[Check]) -> dict[str, Any]:
            return {c.name: {"status": c.status.value, "detail": c.detail} for c in cs}

        return {
            "passed": self.passed,
            "failedChecks": self.failed_checks(),
            "meta": self.meta,
            "checks": checks(self.checks),
            "loops": self.loops,
            "flows": {
                f.name: {
                    "source": f.source,
                    "target": f.target,
                    "exactlyOnce": f.exactly_once,
                    "isolation": f.isolation,
                    "checks": checks(f.checks),
                    "catchUp": f.catch_up,
                    "groupOffsets": f.group_offsets,
                    "heartbeats": f.heartbeats,
                    "sentinel": f.sentinel,
                    "topics": {
                        t.source_topic: {
                            "remoteTopic": t.remote_topic,
                            "checks": checks(t.checks),
                            "partitions": t.partitions,
                            "offsetSyncs": t.offset_syncs,
                            "checkpoints": t.checkpoints,
                        }
                        for t in f.topics
                    },
                }
                for f in self.flows
            },
        }

    def write(self, path: Path) -> Path | None:
        """The JSON report at `path` and the HTML page beside it (`path.with_suffix('.html')`);
        returns the page's path, None when it could not be drawn.

        The verdict lives in the JSON and the exit code; a page that cannot be drawn (a plotting
        library missing or failing) is reported on stderr and does not change either.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_dict()
        path.write_text(json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")
        html_path = path.with_suffix(".html")
        try:
            from spark.html_report import write_html

            write_html(json.loads(path.read_text()), html_path)
        except Exception as exc:  # the page is a view of the JSON; never lose the verdict over it
            html_path.unlink(missing_ok=True)
            print(
                f"[validate] HTML report not written ({type(exc).__name__}: {exc}); the JSON report {path} is "
                "complete. Fix: bin/bootstrap installs matplotlib from requirements.lock",
                file=sys.stderr,
            )
            return None
        return html_path


def _json_default(o: Any) -> Any:
    if isinstance(o, Enum):
        return o.value
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


_COLUMNS = (
    ("part", "partition"),
    ("source", "sourceRecords"),
    ("target", "targetRecords"),
    ("matched", "matched"),
    ("missing", "missing"),
    ("moved", "moved"),
    ("modified", "modified"),
    ("dups", "duplicates"),
    ("order", "outOfOrder"),
    ("unexp", "unexpected"),
    ("lag", "lag"),
)

_MARK = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.WARN: "WARN", Status.SKIP: "skip"}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def render_table(report: Report) -> str:
    lines: list[str] = []
    for f in report.flows:
        lines.append(f"flow {f.name} ({f.source} -> {f.target}, exactlyOnce={str(f.exactly_once).lower()})")
        if f.isolation:
            lines.append(f"  read {f.isolation['source']} on {f.source}, {f.isolation['target']} on {f.target}")
        for t in f.topics:
            lines.append(f"  topic {t.source_topic} -> {t.remote_topic}")
            rows = [[h for h, _ in _COLUMNS]]
            for p in t.partitions:
                rows.append([str(p.get(k, "")) for _, k in _COLUMNS])
            if len(rows) > 1:
                lines += ["    " + ln for ln in _table(rows)]
            for c in t.checks:
                lines.append(f"    {_MARK[c.status]:4}  {c.name:20} {c.detail}")
        for c in f.checks:
            lines.append(f"  {_MARK[c.status]:4}  {c.name:22} {c.detail}")
    for c in report.checks:
        lines.append(f"{_MARK[c.status]:4}  {c.name:24} {c.detail}")
    failed = report.failed_checks()
    lines.append("")
    lines.append("RESULT: PASS" if not failed else f"RESULT: FAIL ({len(failed)} failed check(s))")
    lines += [f"  - {name}" for name in failed]
    return "\n".join(lines)
