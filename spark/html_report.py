"""The validation report as one self-contained HTML page: tables and plots, readable offline.

Rendered from `Report.to_dict()` (the JSON report's shape), never from live objects, so the page
shows exactly what the JSON says and nothing more (the JSON carries no secret; neither does this).
Every field is read defensively: a field the stage did not fill (an older report, a skipped
check, a fast path that records no per-partition path) becomes a "no data" note, not an error.

Plots are drawn with matplotlib's object API (no pyplot: no global state, safe off the main
thread) into PNGs inlined as data URIs, so the page needs no network and no script to show them.
Per flow: the replication latency distribution, latency over the validated window (heartbeats
and, where the stage measured them, record timestamps), and lag per partition.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# Points drawn per latency series: beyond this the plot is no clearer, only slower to draw.
MAX_POINTS = 2000
_STATUS_CLASS = {"pass": "pass", "fail": "fail", "warn": "warn", "skip": "skip"}
# Per-partition columns in reading order; (header, keys tried in turn). The first three cover the
# fast path's names (`sourceCount`) and the exact path's (`sourceRecords`).
_PARTITION_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("partition", ("partition",)),
    ("path", ("path",)),
    ("source", ("sourceCount", "sourceRecords")),
    ("target", ("targetCount", "targetRecords")),
    ("lag", ("lag",)),
    ("matched", ("matched",)),
    ("missing", ("missing",)),
    ("moved", ("moved",)),
    ("modified", ("modified",)),
    ("duplicates", ("duplicates",)),
    ("out of order", ("outOfOrder",)),
    ("unexpected", ("unexpected",)),
    ("not replicated", ("notReplicated",)),
)
_FINDINGS = ("missing", "moved", "modified", "duplicates", "outOfOrder", "unexpected", "notReplicated")
Series = list[tuple[int, float]]  # (epoch ms, latency ms)


def write_html(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report), encoding="utf-8")


def render(report: Mapping[str, Any]) -> str:
    """The whole page for one report dict (`Report.to_dict()`)."""
    passed = bool(report.get("passed"))
    flows = _mapping(report.get("flows"))
    body = [
        f'<h1>MirrorMaker 2 replication check: <span class="verdict {"pass" if passed else "fail"}">'
        f"{'PASS' if passed else 'FAIL'}</span></h1>",
        _meta_section(_mapping(report.get("meta"))),
        _failed_section(report.get("failedChecks") or []),
        _toc(flows),
    ]
    for name, flow in flows.items():
        body.append(_flow_section(str(name), _mapping(flow)))
    body.append(_stack_section(_mapping(report.get("checks")), report.get("loops") or []))
    return _PAGE.format(title=_e(f"mm2 validation {'PASS' if passed else 'FAIL'}"), body="\n".join(body))


# --- sections --------------------------------------------------------------------------------


def _meta_section(meta: Mapping[str, Any]) -> str:
    if not meta:
        return _no_data("no run information in this report")
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(_text(v))}</td></tr>" for k, v in meta.items())
    return f'<table class="meta">{rows}</table>'


def _failed_section(failed: Iterable[Any]) -> str:
    names = [str(n) for n in failed]
    if not names:
        return '<p class="summary pass">Every check passed.</p>'
    items = "".join(f"<li>{_e(n)}</li>" for n in names)
    return f'<div class="summary fail"><p>{len(names)} failed check(s):</p><ul>{items}</ul></div>'


def _toc(flows: Mapping[str, Any]) -> str:
    if not flows:
        return _no_data("this report has no flows")
    items = "".join(f'<li><a href="#{_anchor(n)}">{_e(n)}</a> {_badges(_mapping(f))}</li>' for n, f in flows.items())
    return f'<nav><h2>Flows</h2><ul class="toc">{items}</ul></nav>'


def _flow_section(name: str, flow: Mapping[str, Any]) -> str:
    topics = _mapping(flow.get("topics"))
    head = (
        f'<section class="flow" id="{_anchor(name)}"><h2>Flow {_e(name)}</h2>'
        f"<p>{_e(flow.get('source', '?'))} &rarr; {_e(flow.get('target', '?'))}, "
        f"exactly-once {_e(_text(flow.get('exactlyOnce')))}</p>"
    )
    parts = [
        head,
        "<h3>Flow checks</h3>",
        _checks_table(_mapping(flow.get("checks"))),
        _sentinel(_mapping(flow.get("sentinel"))),
        _catch_up(_mapping(flow.get("catchUp"))),
        "<h3>Replication latency</h3>",
        _latency_table(_mapping(_mapping(flow.get("heartbeats")).get("latencyMs"))),
        _plots(name, flow),
    ]
    for topic, t in topics.items():
        parts.append(_topic_section(str(topic), _mapping(t)))
    parts.append("</section>")
    return "\n".join(parts)


def _topic_section(topic: str, t: Mapping[str, Any]) -> str:
    return (
        f'<div class="topic"><h3>Topic {_e(topic)} &rarr; {_e(t.get("remoteTopic", "?"))}</h3>'
        + _checks_table(_mapping(t.get("checks")))
        + _partitions_table(t.get("partitions"))
        + "</div>"
    )


def _stack_section(checks: Mapping[str, Any], loops: list[Any]) -> str:
    out = ["<section><h2>Across the stack</h2>", _checks_table(checks)]
    if loops:
        rows = [[_text(r.get("cluster")), _text(r.get("topic")), _text(r.get("reason"))] for r in loops]
        out.append(_table(["cluster", "topic", "reason"], rows))
    out.append("</section>")
    return "\n".join(out)


# --- tables ----------------------------------------------------------------------------------


def _checks_table(checks: Mapping[str, Any]) -> str:
    if not checks:
        return _no_data("no checks recorded")
    rows = []
    for name, c in checks.items():
        c = _mapping(c)
        status = str(c.get("status", "?"))
        rows.append(
            f'<tr class="{_STATUS_CLASS.get(status, "")}"><td>{_e(name)}</td>'
            f'<td class="status">{_e(status.upper())}</td><td>{_e(c.get("detail", ""))}</td></tr>'
        )
    return '<table class="checks"><tr><th>check</th><th>status</th><th>detail</th></tr>' + "".join(rows) + "</table>"


def _partitions_table(partitions: Any) -> str:
    rows = [p for p in partitions or [] if isinstance(p, Mapping)]
    if not rows:
        return _no_data("no per-partition data for this topic")
    cols = [(h, keys) for h, keys in _PARTITION_COLUMNS if any(_first(r, keys) is not None for r in rows)]
    head = "".join(f"<th>{_e(h)}</th>" for h, _ in cols)
    body = []
    for r in rows:
        cells = "".join(f"<td>{_e(_text(_first(r, keys)))}</td>" for _, keys in cols)
        body.append(f'<tr class="{"finding" if _has_finding(r) else "clean"}">{cells}</tr>')
    return (
        '<label class="filter"><input type="checkbox" class="only-findings"> only partitions with findings</label>'
        f'<table class="partitions"><tr>{head}</tr>{"".join(body)}</table>'
    )


def _latency_table(latency: Mapping[str, Any]) -> str:
    if not latency:
        return _no_data("no latency measured (heartbeats skipped, or --latency-window 0)")
    rows = []
    for topic, v in latency.items():
        v = _mapping(v)
        rows.append([topic, *(_text(v.get(k)) for k in ("samples", "p50", "p99", "max")), _text(v.get("measures"))])
    return _table(["topic", "samples", "p50 ms", "p99 ms", "max ms", "measures"], rows)


def _sentinel(sentinel: Mapping[str, Any]) -> str:
    """The source records gone before MM2 copied them (spark.expired), one row per range; nothing
    when there are none (the check's row says whether it ran)."""
    expired = [e for e in sentinel.get("expired") or [] if isinstance(e, Mapping)]
    recreated = [r for r in sentinel.get("recreated") or [] if isinstance(r, Mapping)]
    if not expired and not recreated:
        return ""
    acknowledged_at = _text(sentinel.get("lossAcknowledgedAt"))
    rows = [
        [_text(e.get(k)) for k in ("topic", "partition", "first")]
        + [_text(int(e.get("end", 0)) - 1), _text(e.get("count")), _text(e.get("reason"))]
        + [f"acknowledged ({acknowledged_at})" if e.get("acknowledged") else ""]
        for e in expired
    ]
    out = ["<h3>Source records gone before replication</h3>"]
    if rows:
        header = ["topic", "partition", "first offset", "last offset", "records", "reason", "lossAcknowledged"]
        out.append(_table(header, rows))
    out += [
        f"<p>Source topic {_e(r.get('topic'))} deleted and created again {_e(_text(r.get('count')))} time(s)"
        + (f" (acknowledged: lossAcknowledged {_e(acknowledged_at)})" if r.get("acknowledged") else "")
        + ".</p>"
        for r in recreated
    ]
    return "\n".join(out)


def _catch_up(catch_up: Mapping[str, Any]) -> str:
    if not catch_up:
        return ""
    return "<p>Catch-up: " + ", ".join(f"{_e(k)} {_e(_text(v))}" for k, v in catch_up.items()) + "</p>"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


# --- plots -----------------------------------------------------------------------------------


def latency_series(flow: Mapping[str, Any]) -> dict[str, Series]:
    """Every latency series of a flow, labelled: heartbeat topics, then record timestamps per topic."""
    out: dict[str, Series] = {}
    for topic, samples in _mapping(_mapping(flow.get("heartbeats")).get("samples")).items():
        out[f"heartbeats: {topic}"] = _pairs(samples)
    for topic, t in _mapping(flow.get("topics")).items():
        samples = _mapping(_mapping(t).get("latencyMs")).get("samples")
        if isinstance(samples, list):
            out[f"records: {topic}"] = _pairs(samples)
    return {k: v for k, v in out.items() if v}


def partition_lags(flow: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(label, lag, path) per partition of every topic with a numeric lag."""
    out = []
    for topic, t in _mapping(flow.get("topics")).items():
        for p in _mapping(t).get("partitions") or []:
            if isinstance(p, Mapping) and isinstance(p.get("lag"), int | float):
                out.append((f"{topic}-{p.get('partition')}", int(p["lag"]), str(p.get("path") or "")))
    return out


def _plots(name: str, flow: Mapping[str, Any]) -> str:
    series = latency_series(flow)
    lags = partition_lags(flow)
    figures = [
        _figure(_latency_histogram(series), f"{name}: latency distribution")
        if series
        else _no_data("latency distribution: no latency samples in this report"),
        _figure(_latency_over_time(series), f"{name}: latency over the validated window")
        if series
        else _no_data("latency over time: no latency samples in this report"),
        _figure(_lag_bars(lags), f"{name}: lag per partition (records behind the cut)")
        if lags
        else _no_data("lag per partition: no per-partition lag in this report"),
    ]
    return '<div class="plots">' + "".join(figures) + "</div>"


def _figure(png: bytes, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{_e(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def preload() -> None:
    """Import the plotting library ahead (about a second): the stage calls this while Spark works."""
    import matplotlib.dates
    import matplotlib.figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401


def _new_figure(height: float = 3.2) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, height), dpi=96, layout="constrained")
    return fig, fig.add_subplot()


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _latency_histogram(series: Mapping[str, Series]) -> bytes:
    fig, ax = _new_figure()
    top = max(max(v for _, v in s) for s in series.values())
    bins = max(10, min(60, int(sum(len(s) for s in series.values()) ** 0.5)))
    edges = [top * i / bins for i in range(bins + 1)] if top > 0 else [0.0, 1.0]
    for label, s in series.items():
        values = [v for _, v in s]
        ax.hist(values, bins=edges, histtype="step", linewidth=1.6, label=f"{label} (n={len(values)})")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("samples")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _png(fig)


def _latency_over_time(series: Mapping[str, Series]) -> bytes:
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    fig, ax = _new_figure()
    for label, s in series.items():
        step = max(1, len(s) // MAX_POINTS)
        pts = sorted(s)[::step]
        times = [datetime.fromtimestamp(t / 1000, tz=timezone.utc) for t, _ in pts]
        ax.plot(times, [v for _, v in pts], marker=".", markersize=3, linewidth=0.8, label=label)
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("latency (ms)")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _png(fig)


def _lag_bars(lags: list[tuple[str, int, str]]) -> bytes:
    colours = {"fast": "#2a7ab9", "exact": "#d9822b"}
    fig, ax = _new_figure(height=min(12.0, 1.2 + 0.22 * len(lags)))
    labels = [label for label, _, _ in lags]
    ax.barh(range(len(lags)), [lag for _, lag, _ in lags], color=[colours.get(p, "#777777") for _, _, p in lags])
    ax.set_yticks(range(len(lags)), labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("lag (records)")
    if not any(lag for _, lag, _ in lags):
        ax.set_xlim(0, 1)
        ax.text(0.5, 0.5, "every partition caught up (lag 0)", transform=ax.transAxes, ha="center", va="center")
    paths = sorted({p for _, _, p in lags} & set(colours))
    if paths:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=colours[p], label=f"{p} path") for p in paths], fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


# --- small helpers ---------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pairs(samples: Any) -> Series:
    out: Series = []
    for s in samples if isinstance(samples, list) else []:
        if isinstance(s, list | tuple) and len(s) == 2 and all(isinstance(x, int | float) for x in s):
            out.append((int(s[0]), float(s[1])))
    return out


def _first(row: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if row.get(k) is not None), None)


def _has_finding(row: Mapping[str, Any]) -> bool:
    if any(row.get(k) for k in _FINDINGS) or row.get("lag"):
        return True
    src, tgt = _first(row, ("sourceCount", "sourceRecords")), _first(row, ("targetCount", "targetRecords"))
    return src is not None and tgt is not None and src != tgt


def _badges(flow: Mapping[str, Any]) -> str:
    """Counts of the flow's check statuses, its topics' checks included."""
    checks = list(_mapping(flow.get("checks")).values())
    for t in _mapping(flow.get("topics")).values():
        checks += list(_mapping(_mapping(t).get("checks")).values())
    statuses = [str(_mapping(c).get("status")) for c in checks]
    return " ".join(
        f'<span class="badge {s}">{statuses.count(s)} {s}</span>'
        for s in ("fail", "warn", "pass", "skip")
        if s in statuses
    )


def _no_data(what: str) -> str:
    return f'<p class="no-data">No data: {_e(what)}.</p>'


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | dict):
        return ", ".join(_text(v) for v in value) if isinstance(value, list) else str(value)
    return str(value)


def _anchor(name: str) -> str:
    return "flow-" + "".join(c if c.isalnum() else "-" for c in name)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 70em; color: #222; padding: 0 1em; }}
h1 {{ font-size: 1.5em; }} h2 {{ border-bottom: 1px solid #ccc; margin-top: 2em; }} h3 {{ margin-bottom: .3em; }}
table {{ border-collapse: collapse; margin: .4em 0 1em; }}
th, td {{ border: 1px solid #ddd; padding: .2em .6em; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} table.partitions td {{ text-align: right; font-variant-numeric: tabular-nums; }}
.verdict.pass, .summary.pass {{ color: #1a7f37; }} .verdict.fail, .summary.fail {{ color: #cf222e; }}
tr.pass .status {{ color: #1a7f37; }} tr.fail {{ background: #ffebe9; }} tr.fail .status {{ color: #cf222e; }}
tr.warn {{ background: #fff8c5; }} tr.skip .status {{ color: #777; }} tr.finding td {{ background: #fff1e5; }}
.badge {{ border-radius: .8em; padding: 0 .5em; font-size: .85em; }} .badge.pass {{ background: #dafbe1; }}
.badge.fail {{ background: #ffcecb; }} .badge.warn {{ background: #fff8c5; }} .badge.skip {{ background: #eee; }}
.no-data {{ color: #777; font-style: italic; }} .plots {{ display: flex; flex-wrap: wrap; gap: 1em; }}
figure {{ margin: 0; }} figure img {{ max-width: 100%; border: 1px solid #eee; }}
figcaption {{ font-size: .9em; color: #555; }} .filter {{ font-size: .9em; color: #555; }}
body.only-findings tr.clean {{ display: none; }}
</style></head>
<body>
{body}
<script>
// One switch for every partition table: show only the partitions where something is off.
document.querySelectorAll("input.only-findings").forEach(function (box) {{
  box.addEventListener("change", function () {{
    document.body.classList.toggle("only-findings", box.checked);
    document.querySelectorAll("input.only-findings").forEach(function (b) {{ b.checked = box.checked; }});
  }});
}});
</script>
</body></html>
"""
