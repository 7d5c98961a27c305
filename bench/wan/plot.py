"""The WAN benchmark's figure: throughput as a fraction of the link rate against the round trip,
one line per variant and loss, as a self-contained SVG (no plotting library)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

WIDTH, HEIGHT, PAD = 640, 360, 50
COLOURS = {"seed": "#c0392b", "derived": "#2471a3"}


def _point(rtt: float, fraction: float, top_rtt: float) -> tuple[float, float]:
    x = PAD + (WIDTH - 2 * PAD) * rtt / max(top_rtt, 1.0)
    y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * min(fraction, 1.2) / 1.2
    return x, y


def write_svg(rows: Sequence[dict[str, Any]], path: Path) -> None:
    top_rtt = max(r["rtt_ms"] for r in rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f'<text x="{PAD}" y="20">MM2 across an emulated link: throughput / link rate against rtt</text>',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="black"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="black"/>',
    ]
    for fraction in (0.2, 0.4, 0.6, 0.8, 1.0):
        _, y = _point(0, fraction, top_rtt)
        parts.append(f'<line x1="{PAD}" y1="{y:.0f}" x2="{WIDTH - PAD}" y2="{y:.0f}" stroke="#ddd"/>')
        parts.append(f'<text x="{PAD - 30}" y="{y + 4:.0f}">{fraction:.1f}</text>')
    for rtt in sorted({r["rtt_ms"] for r in rows}):
        x, _ = _point(rtt, 0, top_rtt)
        parts.append(f'<text x="{x - 8:.0f}" y="{HEIGHT - PAD + 18}">{rtt:g}</text>')
    parts.append(f'<text x="{WIDTH / 2 - 20:.0f}" y="{HEIGHT - 10}">rtt (ms)</text>')
    legend_y = 40
    for variant in ("seed", "derived"):
        for loss in sorted({r["loss_pct"] for r in rows}):
            line = [r for r in rows if r["variant"] == variant and r["loss_pct"] == loss]
            line.sort(key=lambda r: r["rtt_ms"])
            xy = (_point(r["rtt_ms"], r["of_link"], top_rtt) for r in line)
            points = " ".join(f"{x:.0f},{y:.0f}" for x, y in xy)
            dash = ' stroke-dasharray="6,4"' if loss else ""
            colour = COLOURS[variant]
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            parts.append(
                f'<line x1="{WIDTH - 190}" y1="{legend_y}" x2="{WIDTH - 160}" y2="{legend_y}" stroke="{colour}" '
                f'stroke-width="2"{dash}/><text x="{WIDTH - 155}" y="{legend_y + 4}">{variant}, loss {loss:g}%</text>'
            )
            legend_y += 16
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")
