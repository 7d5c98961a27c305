"""Realistic validation reports, built with the report's own dataclasses, in the JSON shape the
stage writes: per topic `partitions` rows with `sourceCount`/`targetCount`/`lag`/`path`, per flow
`heartbeats.samples` and `heartbeats.latencyMs`, per topic `latencyMs.samples`.

`full_report()` has a flow with every field (one partition deferred to the exact path with two
missing records) and a flow with none of the optional ones, so both the plots and the "no data"
notes are exercised. Shared by the unit tests and the browser test.
"""

from __future__ import annotations

from spark.report import Check, FlowReport, Report, Status, TopicReport

START_MS = 1_790_000_000_000  # a fixed instant: the plots are deterministic
PARTITIONS = 8
FAULTY = 5


def _samples(n: int, step_ms: int, base: float) -> list[list[float]]:
    return [[START_MS + i * step_ms, base + (i * 37 % 23) + (40 if i % 17 == 0 else 0)] for i in range(n)]


def _partitions() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for p in range(PARTITIONS):
        faulty = p == FAULTY
        rows.append(
            {
                "partition": p,
                "sourceCount": 1250,
                "targetCount": 1248 if faulty else 1250,
                "lag": 2 if faulty else 0,
                "path": "exact" if faulty else "fast",
                **({"missing": 2, "matched": 1248} if faulty else {}),
            }
        )
    return rows


def full_flow() -> FlowReport:
    flow = FlowReport("primary->dr", "primary", "dr", exactly_once=False)
    orders = TopicReport("orders", "primary.orders", partitions=_partitions())
    orders.checks = [
        Check("completeness", Status.FAIL, f"2 record(s) missing in partition {FAULTY}: src@812, src@813"),
        Check("order", Status.PASS, "10000 record(s) in source order"),
        Check("duplicates", Status.WARN, "3 duplicate(s) (at-least-once)"),
    ]
    payments = TopicReport(
        "payments",
        "primary.payments",
        partitions=[{"partition": 0, "sourceCount": 0, "targetCount": 0, "lag": 0, "path": "fast"}],
        checks=[Check("completeness", Status.PASS, "empty topic")],
    )
    flow.topics = [orders, payments]
    flow.checks = [
        Check("group_offsets", Status.PASS, "4 committed offset(s) of 1 group(s) within the log end"),
        Check("heartbeats", Status.PASS, "newest heartbeat 0.8s old"),
    ]
    flow.catch_up = {"caughtUp": True, "waitedSeconds": 1.5, "lag": 2}
    hb = _samples(60, 1000, 15.0)
    flow.heartbeats = {
        "topic": "heartbeats",
        "samples": {"heartbeats": hb, "primary.heartbeats": _samples(60, 1000, 180.0)},
        "latencyMs": {
            "heartbeats": {"samples": 60, "p50": 27, "p99": 77, "max": 77, "measures": "connector emission"},
            "primary.heartbeats": {"samples": 60, "p50": 192, "p99": 242, "max": 242, "measures": "MM2 data path"},
        },
    }
    return flow


def bare_flow() -> FlowReport:
    """A flow with none of the optional fields: only checks."""
    flow = FlowReport("dr->primary", "dr", "primary", exactly_once=True)
    flow.topics = [TopicReport("audit", "dr.audit", checks=[Check("completeness", Status.SKIP, "skipped")])]
    flow.checks = [Check("heartbeats", Status.SKIP, "skipped")]
    return flow


def full_report() -> Report:
    report = Report(
        meta={"generatedAt": "2026-09-21T12:00:00+00:00", "master": "local[2]", "pyspark": "4.0.0", "seconds": 12.5}
    )
    report.flows = [full_flow(), bare_flow()]
    report.checks = [Check("loops", Status.PASS, "no stray remote topics on 2 cluster(s)")]
    return report


def report_with_record_latency() -> dict[str, object]:
    """`full_report()` as a dict, plus record-timestamp latency samples on `orders`."""
    data = full_report().to_dict()
    orders = data["flows"]["primary->dr"]["topics"]["orders"]  # type: ignore[index]
    orders["latencyMs"] = {"p50": 120, "samples": _samples(200, 300, 100.0)}
    return data
