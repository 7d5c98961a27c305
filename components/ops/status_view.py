"""What `bin/status` shows and when a flow is unhealthy. Pure: values in, values and text out.

A flow is unhealthy when any of these holds (each gives one plain reason):
- its worker group has no worker answering (every worker asked at once, each for
  `WORKER_PROBE_TIMEOUT_S`): its connectors are shown UNREACHABLE, not read;
- a connector is missing on its worker group, FAILED or UNASSIGNED, or its state is not the state
  the stack declares for it (`mm2:flows.<flow>.state` / `connectorStates`, RUNNING by default);
- a task of a connector is FAILED (or a declared-RUNNING connector has a task not RUNNING);
- its heartbeat connector is declared RUNNING and the newest heartbeat it wrote into the target
  is older than `heartbeat_max_age_s` (or there is none);
- its worker group's lag exporter (the data-loss sentinel, components/watch/lag.py) found source
  records gone before MM2 copied them (deleted from the source, by retention or a delete-records
  call; or with a topic deleted and created again), or a replicated source topic created again,
  after the flow's loss acknowledgement (`mm2:flows.<flow>.lossAcknowledged`, none by default):
  each partition is listed with its
  offsets, count and reason. The exporter keeps what it found across restarts; what was found at
  or before the acknowledgement stays listed, marked acknowledged, and is no reason
  (docs/day2-operations.md, "Records lost before replication").
A cluster pair (`mm2:failover`) is shown after its flows: its active side, its latest switchover,
and the passive side's fence read live. It is unhealthy when that fence lacks a binding (a
declared principal may write on the passive side: what it writes diverges). A fence that could
not be read (the stack's outputs predate it, the side lost in an unplanned failover, a cluster
not answering) is a note, not a reason.
Lag, checkpoint age and heartbeat latency are shown, not judged: a catching-up flow is not broken.
A lag exporter that does not answer within `LAG_EXPORTER_TIMEOUT_S` is a note, not a reason: it
observes replication and takes no part in it, and its silence says nothing about the flow (its
own staleness is what `mm2_lag_last_read_timestamp_seconds` is for). The note says what to do
about it: at a URL only a Kubernetes cluster's DNS resolves (`<service>.<namespace>.svc`, the
lagUrl a Kubernetes stack exports, read through the API server when the kubeconfig allows), that
it runs inside the cluster and how to read it from here (`kubectl port-forward`, then
`bin/status --lag-url`); at a URL given with `--lag-url`, to check
it; else (a local exporter) that `bin/pulumi up` starts it again.

A worker group with autoRestart connectors runs a watcher; its status file (what it restarted and
when, docs/day2-operations.md) is shown under the flows, not judged: the connectors' own states
already say whether the flow is healthy.

Lag of a replicated partition: the source's end offset minus the target's end offset translated
upstream through the newest offset sync (sync.upstream + target_end - sync.downstream), never
below zero. It is an estimate: records MM2 filtered, or offsets compaction and transactions skip,
make it high by that many.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from components.mm2_records import OffsetSync
from components.ops.brokers import ClusterHealth, health_json
from components.ops.exposition import samples
from components.ops.throughput import Throughput, throughput_line
from components.topology.acknowledgement import instant_text
from components.watch.lag import RECREATED, Expiry, FlowFindings, Recreation, flow_findings

HEARTBEAT_MAX_AGE_S = 60.0
WATCHER_EVENTS_SHOWN = 5
# A status file not replaced for this long: the watcher (polling every 2 s) has likely stopped.
WATCHER_STALE_S = 30.0
STATE_OK = "RUNNING"
# Shown for the connectors of a worker group none of whose workers answered: not read, not judged.
STATE_UNREACHABLE = "UNREACHABLE"
# How long each worker of a group is given to answer `GET /` (connect and read); all are asked at
# once, so a dead group is told in about this long instead of a client's whole retry budget.
WORKER_PROBE_TIMEOUT_S = 2.0
# How long a worker group's lag exporter is given for each of /expired and /metrics; it is asked
# while the workers are probed, so a silent one costs no time beyond the probe's.
LAG_EXPORTER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class TaskView:
    id: int
    state: str
    worker: str
    trace: str = ""  # the first line of Connect's trace, when FAILED


@dataclass(frozen=True)
class ConnectorView:
    role: str
    name: str
    state: str  # RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, or MISSING (not on the worker group)
    desired: str
    worker: str = ""
    trace: str = ""
    tasks: tuple[TaskView, ...] = ()


@dataclass(frozen=True)
class TopicView:
    topic: str  # on the source
    remote: str  # on the target
    partitions: int
    lag: int | None  # None: not known (no offset sync yet, or a topic missing)
    note: str = ""


@dataclass(frozen=True)
class HeartbeatView:
    topic: str  # where the newest heartbeat was read
    age_s: float | None  # now - the newest heartbeat's timestamp; None: none found
    # Replicated heartbeats only: how far the newest one on the target trails the newest one the
    # source cluster holds (the path's delay); None when the flow has no heartbeats to replicate.
    latency_s: float | None = None


@dataclass(frozen=True)
class ExporterReading:
    """What a worker group's lag exporter answered: its /expired document (None when it did not
    answer) and its /metrics text (None when not read), or why not."""

    url: str
    expired: Mapping[str, Any] | None = None
    metrics: str | None = None
    error: str = ""
    given: bool = False  # the URL came from `bin/status --lag-url`, not the stack's outputs


@dataclass(frozen=True)
class SentinelView:
    """One flow as its worker group's lag exporter sees it."""

    url: str
    flow: str = ""
    findings: FlowFindings = field(default_factory=FlowFindings)  # against the flow's lossAcknowledged
    lag_records: int | None = None  # the flow's largest partition lag (mm2_flow_lag_records)
    lag_seconds: float | None = None
    error: str = ""  # why the exporter was not read (a note, not a problem)
    given: bool = False  # the URL came from `bin/status --lag-url`

    @property
    def found(self) -> bool:
        return self.findings.found


@dataclass(frozen=True)
class FlowStatus:
    name: str
    worker_group: str
    connectors: tuple[ConnectorView, ...]
    topics: tuple[TopicView, ...] = ()
    checkpoint_age_s: float | None = None
    heartbeat: HeartbeatView | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    sentinel: SentinelView | None = None  # None: the worker group exports no lag exporter
    throughput: Throughput | None = None  # None: its workers serve no metrics (no metricsPort)

    @property
    def healthy(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class PairView:
    """A cluster pair as `bin/status` read it."""

    name: str
    active: str
    passive: str
    principals: tuple[str, ...]
    fence_missing: tuple[str, ...] | None  # bindings the passive side lacks ("User:app on orders"); None: not read
    not_read: str = ""  # why the fence was not read
    last: Mapping[str, Any] | None = None  # the latest switchover's report

    @property
    def problems(self) -> tuple[str, ...]:
        if not self.fence_missing:
            return ()
        return (
            f"the fence on {self.passive} lacks {', '.join(self.fence_missing)}: that principal may write on the "
            f"passive side, and what it writes diverges from {self.active}. Next step: `bin/pulumi up` puts the "
            "missing bindings back (the others stay in place)",
        )

    @property
    def healthy(self) -> bool:
        return not self.problems


def pair_lines(pairs: Sequence[PairView]) -> list[str]:
    """Per pair: its sides and verdict, the fence, the latest switchover."""
    lines: list[str] = []
    for v in pairs:
        verdict = "healthy" if v.healthy else "UNHEALTHY"
        lines.append(f"pair {v.name}  active {v.active}, passive {v.passive}  {verdict}")
        if v.fence_missing is None:
            lines.append(f"  fence on {v.passive}: not read ({v.not_read})")
        elif not v.fence_missing:
            who = ", ".join(v.principals)
            lines.append(f"  fence on {v.passive}: WRITE denied to {who} on {v.passive}->{v.active}'s topics")
        lines.append(f"  {_switchover_text(v.last)}")
        lines += [f"  why unhealthy: {problem}" for problem in v.problems]
    return lines


def _switchover_text(last: Mapping[str, Any] | None) -> str:
    if not last:
        return "no switchover yet"
    sides = f"{last.get('from')} -> {last.get('to')}"
    rpo = last.get("rpoRecords")
    moved = ", ".join(last.get("groups") or ()) or "none"
    outcome = f"RPO {'unknown' if rpo is None else f'{rpo} record(s)'}, groups moved: {moved}"
    if last.get("unplanned"):
        return f"last unplanned failover: {sides}, {outcome}"
    return f"last switchover: {sides}, writes fenced {last.get('fencedSeconds')}s, {outcome}"


def pair_json(v: PairView) -> dict[str, Any]:
    return {**asdict(v), "problems": list(v.problems), "healthy": v.healthy}


def partition_lag(source_end: int, target_end: int, sync: OffsetSync | None) -> int | None:
    """The estimated lag of one partition (module docstring); None without an offset sync,
    unless the source partition holds nothing yet."""
    if sync is None:
        return 0 if source_end == 0 else None
    position = sync.upstream_offset + max(0, target_end - sync.downstream_offset)
    return max(0, source_end - position)


def newest_syncs(syncs: Sequence[OffsetSync]) -> dict[tuple[str, int], OffsetSync]:
    """The last sync per (upstream topic, partition), in the order they were read."""
    out: dict[tuple[str, int], OffsetSync] = {}
    for sync in syncs:
        out[(sync.topic, sync.partition)] = sync
    return out


def topic_view(
    topic: str,
    remote: str,
    source_ends: Mapping[int, int] | None,
    target_ends: Mapping[int, int] | None,
    syncs: Mapping[tuple[str, int], OffsetSync],
) -> TopicView:
    """One replicated topic: the sum of its partitions' lags (None if any is unknown)."""
    if source_ends is None:
        return TopicView(topic, remote, 0, None, "missing on the source")
    if target_ends is None:
        return TopicView(topic, remote, len(source_ends), None, "not yet created on the target")
    lags = [partition_lag(end, target_ends.get(p, 0), syncs.get((topic, p))) for p, end in sorted(source_ends.items())]
    if any(lag is None for lag in lags):
        return TopicView(topic, remote, len(source_ends), None, "no offset sync yet")
    return TopicView(topic, remote, len(source_ends), sum(lag for lag in lags if lag is not None))


def group_down_problem(group: str, unanswered: Mapping[str, str]) -> str:
    """The reason a flow on a worker group none of whose workers answered is unhealthy."""
    tried = "; ".join(f"{url}: {why}" for url, why in sorted(unanswered.items()))
    return (
        f"worker group {group}: no worker answered within {WORKER_PROBE_TIMEOUT_S:g} s ({tried}). "
        "Next step: check its worker processes (locally the watcher restarts them; `bin/pulumi up --refresh` does too)"
    )


def unreachable_views(roles: Mapping[str, str], desired: Mapping[str, str]) -> tuple[ConnectorView, ...]:
    """The connectors of a flow whose worker group did not answer: named, state unknown."""
    return tuple(
        ConnectorView(role, name, STATE_UNREACHABLE, desired.get(role, STATE_OK)) for role, name in roles.items()
    )


def problems_of(
    connectors: Sequence[ConnectorView], heartbeat: HeartbeatView | None, heartbeat_max_age_s: float
) -> tuple[str, ...]:
    """Why the flow is unhealthy (module docstring); empty when it is healthy."""
    found: list[str] = []
    for c in connectors:
        if c.state == STATE_UNREACHABLE:
            continue  # the group's own problem says it once
        if c.state == "MISSING":
            found.append(f"{c.role} connector {c.name} does not exist on its worker group (run `bin/pulumi up`)")
        elif c.state == "FAILED":
            found.append(f"{c.role} connector {c.name} is FAILED: {c.trace or 'no trace'}")
        elif c.state != c.desired:
            found.append(f"{c.role} connector {c.name} is {c.state}, the stack declares {c.desired}")
        for t in c.tasks:
            if t.state == "FAILED":
                found.append(f"{c.role} task {t.id} on {t.worker} is FAILED: {t.trace or 'no trace'}")
            elif c.desired == STATE_OK and c.state == STATE_OK and t.state != STATE_OK:
                found.append(f"{c.role} task {t.id} is {t.state}")
    beats = next((c for c in connectors if c.role == "heartbeat"), None)
    if beats is not None and beats.desired == STATE_OK and heartbeat is not None:
        if heartbeat.age_s is None:
            found.append(f"no heartbeat in {heartbeat.topic} yet")
        elif heartbeat.age_s > heartbeat_max_age_s:
            found.append(
                f"the newest heartbeat in {heartbeat.topic} is {heartbeat.age_s:.0f} s old "
                f"(more than {heartbeat_max_age_s:.0f} s)"
            )
    return tuple(found)


def flow_lag(metrics: str | None, flow: str) -> tuple[int | None, float | None]:
    """The flow's largest partition lag in records and seconds from the exporter's /metrics text
    (None each when it is not there: no reading of the flow yet)."""
    found = {
        name: value
        for name in ("mm2_flow_lag_records", "mm2_flow_lag_seconds")
        for labels, value in samples(metrics, name)
        if labels.get("flow") == flow
    }
    records = found.get("mm2_flow_lag_records")
    return (None if records is None else int(records)), found.get("mm2_flow_lag_seconds")


def sentinel_view(reading: ExporterReading, flow: str, acknowledged_at_ms: int | None = None) -> SentinelView:
    """What the exporter found for one flow (it serves every flow of its worker group), against the
    flow's loss acknowledgement; ranges of a partition found one reading after another as one."""
    if reading.expired is None:
        return SentinelView(reading.url, flow, error=reading.error or "no answer", given=reading.given)
    findings = flow_findings(reading.expired, flow, acknowledged_at_ms)
    records, seconds = flow_lag(reading.metrics, flow)
    return SentinelView(reading.url, flow, findings, records, seconds, given=reading.given)


def sentinel_problems(view: SentinelView | None) -> tuple[str, ...]:
    """Why the sentinel makes a flow unhealthy (module docstring): the findings its loss
    acknowledgement does not cover; the partitions are listed apart."""
    if view is None or view.error:
        return ()
    found = []
    open_expired = view.findings.open_expired
    lost = [e for e in open_expired if e.reason != RECREATED]
    if lost:
        parts = len({(e.topic, e.partition) for e in lost})
        found.append(
            f"{sum(e.count for e in lost)} source record(s) in {parts} partition(s) were deleted from the source "
            "before MM2 copied them, by retention or by a delete-records call (listed under `expired`). The "
            "records are gone from the source. Next step: if retention deleted them, raise the source topics' "
            "retention.ms above the flow's outage budget; if a delete-records call did (kafka-delete-records, "
            "an admin client's deleteRecords), find who made it on the source cluster"
        )
    for r in view.findings.open_recreated:
        with_it = sum(e.count for e in open_expired if e.reason == RECREATED and e.topic == r.topic)
        found.append(
            f"source topic {r.topic} was deleted and created again ({r.count} time(s)): {with_it} record(s) MM2 "
            "had not copied by the exporter's reading before were lost with it (records written after that "
            "reading are not known)"
        )
    return tuple(found)


def _how_to_acknowledge(view: SentinelView) -> str:
    times = [e.at_ms for e in view.findings.open_expired]
    times += [r.last_at_ms for r in view.findings.open_recreated if r.last_at_ms is not None]
    unknown = any(r.last_at_ms is None for r in view.findings.open_recreated)
    if unknown or not times:
        # Served by an exporter started before re-creations carried a time: a restarted one
        # stamps them with the time it loaded its state.
        when = "an instant after the lag exporter is restarted (it does not say when a re-creation was found)"
    else:
        last = -(-max(times) // 1000) * 1000  # the whole second at or after the last finding
        when = f'"{instant_text(last)}" (when the last was found) or later'
    return (
        f"to acknowledge: once the losses above are reviewed, declare mm2:flows.{view.flow}.lossAcknowledged "
        f"{when} and `bin/pulumi up`: what was found by then stays listed, marked acknowledged, and no longer "
        "makes the flow unhealthy"
    )


def _found_at(ms: int | None) -> str:
    return "not known" if ms is None else instant_text(ms - ms % 1000)


def _acknowledged_mark(view: SentinelView, finding: Expiry | Recreation) -> str:
    at = view.findings.acknowledged_at_ms
    return (
        f"; acknowledged by lossAcknowledged {instant_text(at)}"
        if at is not None and view.findings.acknowledged(finding)
        else ""
    )


@dataclass(frozen=True)
class InClusterService:
    """Where a URL only a Kubernetes cluster's DNS resolves points: a Service in a namespace."""

    service: str
    namespace: str  # "<namespace>" when the host does not name it
    port: int


def in_cluster_service(url: str) -> InClusterService | None:
    """The Service of a URL whose host ends in `.svc`, `.svc.cluster.local` or `.cluster.local`
    (`<service>.<namespace>.svc[.cluster.local]`, as a Kubernetes stack exports its lagUrl); None
    for any other URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".").lower()
    if not host.endswith((".svc", ".cluster.local")):
        return None
    labels = host.split(".")
    namespace = labels[1] if len(labels) > 2 and labels[2] == "svc" else "<namespace>"
    return InClusterService(labels[0], namespace, port)


def _unanswered_note(view: SentinelView, group: str) -> str:
    """The note of an exporter that was not read, with what to do about it (module docstring)."""
    service = in_cluster_service(view.url)
    if service is not None and not view.given:
        forward = f"kubectl port-forward -n {service.namespace} svc/{service.service} {service.port}"
        return (
            f"note: lag exporter {view.url} runs inside the Kubernetes cluster and is not reachable from here "
            f"({view.error}): expired records not checked. To read it from here: `{forward}` in another shell, "
            f"then `bin/status --lag-url {group}=http://127.0.0.1:{service.port}` with this run's other options"
        )
    unanswered = f"note: lag exporter {view.url} did not answer within {LAG_EXPORTER_TIMEOUT_S:g} s ({view.error})"
    if view.given:
        return f"{unanswered}: expired records not checked (given with --lag-url: check it, or the port-forward)"
    return f"{unanswered}: expired records not checked (`bin/pulumi up` starts it again)"


def sentinel_lines(view: SentinelView | None, group: str = "<group>") -> list[str]:
    """The table lines of a flow's sentinel (`group`: its worker group): the exporter, the flow's
    lag, each finding (marked when the flow's loss acknowledgement covers it)."""
    if view is None:
        return []
    if view.error:
        return [f"  {_unanswered_note(view, group)}"]
    records = "-" if view.lag_records is None else str(view.lag_records)
    lines = [f"  lag exporter {view.url}: flow lag {records} record(s), {_age(view.lag_seconds)}"]
    for e in view.findings.expired:
        lines.append(f"  expired: {e.describe()} (first found {_found_at(e.at_ms)}{_acknowledged_mark(view, e)})")
    lines += [
        f"  re-created: source topic {r.topic} ({r.count} time(s), last found {_found_at(r.last_at_ms)}"
        f"{_acknowledged_mark(view, r)})"
        for r in view.findings.recreated
    ]
    if view.findings.open:
        lines.append(f"  {_how_to_acknowledge(view)}")
    return lines


def sentinel_json(view: SentinelView | None) -> dict[str, Any] | None:
    """A flow's sentinel in --json: expiries as the exporter serves them, each with its description
    and whether the flow's loss acknowledgement covers it."""
    if view is None:
        return None
    findings = view.findings
    at = findings.acknowledged_at_ms
    return {
        "url": view.url,
        "error": view.error,
        "lag_records": view.lag_records,
        "lag_seconds": view.lag_seconds,
        "loss_acknowledged_at": None if at is None else instant_text(at),
        "expired": [
            {**e.to_json(), "detail": e.describe(), "acknowledged": findings.acknowledged(e)} for e in findings.expired
        ],
        "recreated": [
            {"topic": r.topic, "count": r.count, "lastAtMs": r.last_at_ms, "acknowledged": findings.acknowledged(r)}
            for r in findings.recreated
        ],
    }


def _age(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


def render_status_table(flows: Sequence[FlowStatus]) -> str:
    """The human view: per flow a verdict, its connectors and tasks, then its topics."""
    lines: list[str] = []
    for f in flows:
        verdict = "healthy" if f.healthy else "UNHEALTHY"
        lines.append(f"flow {f.name}  (worker group {f.worker_group})  {verdict}")
        for c in f.connectors:
            declared = "" if c.state == c.desired else f"  (declared {c.desired})"
            lines.append(f"  {c.role:<10} {c.name:<36} {c.state:<10} {c.worker}{declared}")
            if c.trace:
                lines.append(f"      {c.trace}")
            for task in c.tasks:
                lines.append(f"      task {task.id:<3} {task.state:<10} {task.worker}")
                if task.trace:
                    lines.append(f"          {task.trace}")
        lines.append(f"  {'topic':<24} {'remote':<32} {'parts':>5} {'lag':>10}")
        for t in f.topics:
            lag = "-" if t.lag is None else str(t.lag)
            note = f"  ({t.note})" if t.note else ""
            lines.append(f"  {t.topic:<24} {t.remote:<32} {t.partitions:>5} {lag:>10}{note}")
        hb = f.heartbeat
        beat = (
            "heartbeat -" if hb is None else f"heartbeat age {_age(hb.age_s)} latency {_age(hb.latency_s)} ({hb.topic})"
        )
        lines.append(f"  newest checkpoint age {_age(f.checkpoint_age_s)}; {beat}")
        lines += sentinel_lines(f.sentinel, f.worker_group)
        lines += [line] if (line := throughput_line(f.throughput)) else []
        for note in f.notes:
            lines.append(f"  note: {note}")
        for problem in f.problems:
            lines.append(f"  why unhealthy: {problem}")
    return "\n".join(lines) if lines else "(no flows)"


def to_json(
    flows: Sequence[FlowStatus], pairs: Sequence[PairView] = (), clusters: Sequence[ClusterHealth] = ()
) -> dict[str, Any]:
    return {
        "healthy": all(f.healthy for f in flows) and all(p.healthy for p in pairs) and all(c.healthy for c in clusters),
        "flows": {f.name: {**asdict(f), "sentinel": sentinel_json(f.sentinel), "healthy": f.healthy} for f in flows},
        **({"clusters": {c.alias: health_json(c) for c in clusters}} if clusters else {}),
        **({"failover": {p.name: pair_json(p) for p in pairs}} if pairs else {}),
    }


def _iso_epoch(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None


def watcher_lines(group: str, doc: Mapping[str, Any] | None, now: float) -> list[str]:
    """The auto-restart watcher of `group` from its status file (None: there is none yet, or it
    could not be read): its freshness, each watched connector's restarts, and the newest events."""
    if doc is None:
        return [f"watcher {group}: no status file yet (it writes one after its first poll)"]
    updated = _iso_epoch(doc.get("updatedAt"))
    age = None if updated is None else max(0.0, now - updated)
    reach = "" if doc.get("reachable", True) else ", Connect NOT reachable"
    stale = ""
    if age is None or age > WATCHER_STALE_S:
        stale = "  STALE: the watcher may have stopped (`bin/pulumi refresh` shows it, `bin/pulumi up` restarts it)"
    lines = [f"watcher {group}  (auto-restart, pid {doc.get('pid', '-')}, status {_age(age)} old{reach}){stale}"]
    for name, view in sorted((doc.get("connectors") or {}).items()):
        limit = view.get("maxRestarts")
        restarts = f"restarts {view.get('restarts', 0)}" + ("" if limit is None else f" of {limit}")
        extra = "  GAVE UP" if view.get("gaveUp") else ""
        if view.get("nextRestartAt"):
            extra += f"  next restart {view['nextRestartAt']}"
        lines.append(f"  {name:<36} {view.get('state', '-')!s:<10} {restarts}{extra}")
    for name, view in sorted((doc.get("workers") or {}).items()):
        state = {True: "alive", False: "DEAD", None: "-"}.get(view.get("alive"), "-")
        extra = f"  next restart {view['nextRestartAt']}" if view.get("nextRestartAt") else ""
        lines.append(f"  {name:<36} {state:<10} restarts {view.get('restarts', 0)}{extra}")
    events = list(doc.get("events") or [])[-WATCHER_EVENTS_SHOWN:]
    for e in events:
        what = e.get("action", "?") + (f" {e['restart']}" if e.get("restart") is not None else "")
        cause = f": {e['cause']}" if e.get("cause") else ""
        lines.append(f"  {e.get('at', '-')}  {e.get('connector') or e.get('worker') or '-'}  {what}{cause}")
    if not events:
        lines.append("  nothing restarted yet")
    return lines
