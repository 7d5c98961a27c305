"""Source records gone before MM2 copied them: the data-loss sentinel's verdict in the stage.

The flow's worker group runs a lag exporter (`connect.<group>.lagUrl`, components/ops/lag_exporter.py)
that finds, per source partition, records deleted from the source before MM2 copied them (by
retention or a delete-records call: a log start does not say which) and records lost with a
topic deleted and created again. Those records are on neither cluster
any more: the cut starts at each source partition's log start, and Spark's Kafka source reads a
record deleted after the cut as absent (failOnDataLoss=false), so completeness and the other
record checks never count them. This check names them instead, per partition with offsets and
counts, as a verdict of its own, apart from records MM2 lost (completeness):

- FAIL: the exporter found records of this flow gone before replication, or a replicated source
  topic created again (what was written to the old topic after the exporter's last reading of it
  is not known, so a re-creation fails even when no record is counted), after the flow's loss
  acknowledgement (`mm2:flows.<flow>.lossAcknowledged`, exported as `lossAcknowledgedAt`; none
  by default);
- PASS: it found none, or only ones found at or before the acknowledgement (the detail names
  those ranges, acknowledged);
- SKIP, with the reason: the exporter did not answer, or the outputs carry no lagUrl for the
  flow's worker group (an external group, outputs written before the exporter).

Read once per flow, beside the other flow-level checks, after the wait for the target: what the
exporter found while the stage waited is in the verdict. The standard library and the pure
components/watch/lag.py only (no Spark, no Kafka client).
"""

from __future__ import annotations

import http.client
import json
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.connect.stdlib_client import send
from components.outputs.contract import FlowExport
from components.watch.lag import CAUSE, DELETED, RECREATED, Expiry, FlowFindings, flow_findings
from spark.report import Check, Status

CHECK = "source_records_expired"
TIMEOUT_S = 3.0
SHOWN = 10  # partitions the check's detail names; the report's `sentinel` lists every one

Fetch = Callable[[str, float], bytes]


@dataclass(frozen=True)
class SentinelReading:
    """What the flow's worker group's lag exporter answered for this flow."""

    url: str  # "": the outputs carry no lagUrl for the group
    findings: FlowFindings = field(default_factory=FlowFindings)  # against the flow's lossAcknowledged
    acknowledged_at: str = ""  # the flow's lossAcknowledgedAt as the outputs write it; "": none
    error: str = ""  # why the exporter was not read

    def to_json(self) -> dict[str, Any]:
        f = self.findings
        return {
            "lagUrl": self.url,
            "error": self.error,
            "lossAcknowledgedAt": self.acknowledged_at or None,
            "expired": [{**e.to_json(), "detail": e.describe(), "acknowledged": f.acknowledged(e)} for e in f.expired],
            "recreated": [
                {"topic": r.topic, "count": r.count, "lastAtMs": r.last_at_ms, "acknowledged": f.acknowledged(r)}
                for r in f.recreated
            ],
        }


def from_document(url: str, doc: Mapping[str, Any], flow: FlowExport) -> SentinelReading:
    """This flow's findings in the exporter's /expired document (it serves every flow of its group),
    against the flow's loss acknowledgement."""
    findings = flow_findings(doc, flow.name, flow.loss_acknowledged_at_ms)
    return SentinelReading(url, findings, flow.loss_acknowledged_at or "")


def _fetch(url: str, timeout: float) -> bytes:
    status, body = send(urllib.request.Request(url, method="GET"), timeout, None)
    if status != 200:
        raise OSError(f"HTTP {status}")
    return body


def read_sentinel(url: str, flow: FlowExport, timeout: float = TIMEOUT_S, fetch: Fetch = _fetch) -> SentinelReading:
    """`GET <url>/expired` once; a reading with `error` when it does not answer as the exporter does."""
    if not url:
        return SentinelReading("", acknowledged_at=flow.loss_acknowledged_at or "")
    try:
        doc = json.loads(fetch(f"{url.rstrip('/')}/expired", timeout))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return from_document(url, doc, flow)
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException) as exc:
        why = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
        return SentinelReading(
            url,
            acknowledged_at=flow.loss_acknowledged_at or "",
            error=f"did not answer within {timeout:g} s as the exporter does ({why})",
        )


def check(reading: SentinelReading, group: str) -> Check:
    """The verdict (module docstring); the detail names partitions, offsets and counts."""
    if not reading.url:
        return Check(
            CHECK,
            Status.SKIP,
            f"no lag exporter in the outputs (worker group {group} exports no lagUrl: an external group, or "
            "outputs written before the exporter): records gone from the source before replication not checked",
        )
    if reading.error:
        return Check(CHECK, Status.SKIP, f"lag exporter {reading.url} {reading.error}: not checked")
    if not reading.findings.found:
        return Check(CHECK, Status.PASS, f"lag exporter {reading.url}: no source record gone before replication")
    if not reading.findings.open:
        return Check(CHECK, Status.PASS, _acknowledged_detail(reading))
    return Check(CHECK, Status.FAIL, _detail(reading))


def headline(reading: SentinelReading) -> str:
    """What a failed check found, in one clause (the console's line; the detail goes on from it):
    the findings the flow's loss acknowledgement does not cover."""
    expired = reading.findings.open_expired
    if not expired:
        return "source topic(s) deleted and created again: records MM2 had not copied went with them"
    total = sum(e.count for e in expired)
    deleted = sum(e.count for e in expired if e.reason == DELETED)
    reasons = [f"{n} {CAUSE[why]}" for n, why in ((deleted, DELETED), (total - deleted, RECREATED)) if n]
    parts = len({(e.topic, e.partition) for e in expired})
    since = f" after the loss acknowledged at {reading.acknowledged_at}" if reading.acknowledged_at else ""
    return (
        f"{total} source record(s) in {parts} partition(s) gone before MM2 copied them{since} "
        f"({', '.join(reasons)}), apart from records MM2 lost (completeness)"
    )


def _named(expired: tuple[Expiry, ...], recreated: list[tuple[str, int]]) -> list[str]:
    named = [e.describe() for e in expired[:SHOWN]]
    if len(expired) > SHOWN:
        named.append(f"{len(expired) - SHOWN} more range(s) in the report's sentinel")
    return named + [f"source topic {t} deleted and created again {n} time(s)" for t, n in recreated]


def _detail(reading: SentinelReading) -> str:
    f = reading.findings
    named = _named(f.open_expired, [(r.topic, r.count) for r in f.open_recreated])
    covered = len(f.expired) - len(f.open_expired) + len(f.recreated) - len(f.open_recreated)
    also = f"; {covered} finding(s) acknowledged (lossAcknowledged {reading.acknowledged_at})" if covered else ""
    return f"{headline(reading)}: {'; '.join(named)}{also} (lag exporter {reading.url})"


def _acknowledged_detail(reading: SentinelReading) -> str:
    """A pass on acknowledged findings alone: they stay named."""
    f = reading.findings
    named = _named(f.expired, [(r.topic, r.count) for r in f.recreated])
    return (
        f"lag exporter {reading.url}: no source record gone before replication since the loss acknowledged at "
        f"{reading.acknowledged_at} (lossAcknowledged); acknowledged: {'; '.join(named)}"
    )


def console_line(flow: str, reading: SentinelReading, result: Check) -> str:
    """The flow's one progress line for this check."""
    if result.status is Status.FAIL:
        return f"{flow}: {CHECK} FAIL: {headline(reading)}"
    if result.status is Status.SKIP:
        return f"{flow}: {CHECK} not run: {result.detail}"
    return f"{flow}: {CHECK} pass: {result.detail}"
