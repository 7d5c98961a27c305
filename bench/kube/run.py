"""bin/kube benchmark: the cost of `bin/bootstrap --kubernetes` cold and warm, and of the node's life.

    source .mm2/env && python bench/kube/run.py [--repeats 3] [--skip-cold] [--out-dir bench/results]

Builds: `bin/bootstrap --kubernetes` run as it is, with a scratch MM2_CACHE, GOCACHE and GOMODCACHE
(the Pulumi CLI already built is put first on PATH, so bootstrap does not rebuild it), three times:
`cold` (empty caches: module downloads and every package compiled), `relink` (the build markers
removed, the Go caches warm: what a changed build key costs) and `warm` (nothing to do). Each
binary's seconds come from bootstrap's own "building X ... done in Ns" lines; Go runs under
`nice -n 19` there, so the figures depend on what else the machine runs (the load is recorded).
Node: per repeat, `bin/kube up` from nothing, a second `up` (a no-op), `bin/kube load` of the
watcher image, a pod of it applied until Ready, and `bin/kube down`. Idle: for 1 and for 3 nodes
(`--nodes`), the cluster up with nothing deployed, its processes' resident memory summed and
their CPU over IDLE_S seconds (every process of the cluster: its daemons, in its network
namespaces or its cgroups). Needs root. Writes <out-dir>/kube-<date>.{json,md}
(`--skip-builds`: the node and idle figures only, to <out-dir>/kube-<date>-nodes.{json,md}).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUILT = re.compile(r"\[bootstrap\] building (\S+) from Go modules .* done in (\d+)s")
sys.path.insert(0, str(ROOT))

from bench.machine import hardware, hardware_text  # noqa: E402
from bench.proc_stats import cpu_seconds, rss_mib  # noqa: E402
from components.platform.image_layout import WATCHER_IMAGE  # noqa: E402 (the project's watcher image)

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "bench"},
    "spec": {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "http",
                "image": WATCHER_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["python", "-m", "http.server", "8080", "--directory", "/tmp"],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
            }
        ],
    },
}


def timed(argv: list[str], **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return time.monotonic() - t0, out


def bootstrap(env: dict[str, str]) -> dict[str, Any]:
    wall, out = timed([str(ROOT / "bin" / "bootstrap"), "--kubernetes"], env=env)
    return {"wall_s": round(wall, 1), "binaries_s": {m[1]: int(m[2]) for m in BUILT.finditer(out.stderr)}}


def builds(skip_cold: bool) -> dict[str, Any]:
    env_file = ROOT / ".mm2" / "env"
    saved = env_file.read_text()  # bootstrap rewrites it with the scratch cache's paths
    scratch = Path(tempfile.mkdtemp(prefix="kube-bench-"))
    pulumi_bin = Path(shutil.which("pulumi") or "").parent
    env = {
        **os.environ,
        "MM2_CACHE": str(scratch / "cache"),
        "GOCACHE": str(scratch / "go-build"),
        "GOMODCACHE": str(scratch / "mod"),
        "PATH": f"{pulumi_bin}:{os.environ['PATH']}",
    }
    result: dict[str, Any] = {}
    try:
        if skip_cold:
            env.pop("GOCACHE"), env.pop("GOMODCACHE")
        result["cold" if not skip_cold else "first (shared Go caches)"] = bootstrap(env)
        for key in (scratch / "cache").glob("*/bin/*.key"):
            key.unlink()
        result["relink"] = bootstrap(env)
        result["warm"] = bootstrap(env)
        result["go_build_cache_gib"] = round(_du(scratch / "go-build") / 2**30, 2) if not skip_cold else None
        result["go_module_cache_gib"] = round(_du(scratch / "mod") / 2**30, 2) if not skip_cold else None
        built = sorted(p for p in (scratch / "cache").glob("*/bin/*") if p.suffix not in (".key", ".tar"))
        result["binaries_mib"] = {p.name: round(p.stat().st_size / 2**20, 1) for p in built}
    finally:
        env_file.write_text(saved)
        subprocess.run(["chmod", "-R", "u+w", str(scratch)], check=False)  # the module cache is read-only
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def node(repeats: int, archive: Path) -> dict[str, Any]:
    kube = str(ROOT / "bin" / "kube")
    rows: list[dict[str, float]] = []
    for _ in range(repeats):
        subprocess.run([kube, "down"], capture_output=True, check=True)
        up, out = timed([kube, "up"])
        kubeconfig = out.stdout.strip()
        kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={Path(kubeconfig).parent / 'kubectl-cache'}"]
        again, _ = timed([kube, "up"])
        load, _ = timed([kube, "load", str(archive)])
        pod, _ = timed([*kubectl, "apply", "-f", "-"], input=json.dumps(POD))
        ready, _ = timed([*kubectl, "wait", "--for=condition=Ready", "pod/bench", "--timeout=120s"])
        down, _ = timed([kube, "down"])
        rows.append(
            {"up_s": up, "up_again_s": again, "load_watcher_image_s": load, "pod_ready_s": pod + ready, "down_s": down}
        )
    return {k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0]} | {"repeats": repeats}


IDLE_S = 30.0


def cluster_pids() -> set[int]:
    from toolchain.kubernetes import node as kube_node  # needs root's view of /proc and /sys

    return kube_node.stray_pids(kube_node.LAYOUT)


def idle(counts: list[int]) -> dict[str, Any]:
    """Per node count: the idle cluster's memory (MiB, summed RSS) and CPU (cores over IDLE_S)."""
    kube = str(ROOT / "bin" / "kube")
    out: dict[str, Any] = {}
    for count in counts:
        subprocess.run([kube, "down"], capture_output=True, check=True)
        up, _ = timed([kube, "up", "--nodes", str(count)])
        pids = cluster_pids()
        before = {p: cpu_seconds(p) for p in pids}
        t0 = time.monotonic()
        time.sleep(IDLE_S)  # the measuring window itself, not a wait for a condition
        cores = sum(cpu_seconds(p) - before[p] for p in pids) / (time.monotonic() - t0)
        memory = sum(rss_mib(p) for p in cluster_pids())
        subprocess.run([kube, "down"], capture_output=True, check=True)
        figures = {"up_s": round(up, 1), "processes": len(pids), "rss_mib": round(memory)}
        out[str(count)] = figures | {"cores": round(cores, 3)}
    return out


def watcher_archive() -> Path:
    cache = Path(os.environ.get("MM2_CACHE", Path.home() / ".cache" / "mm2-iac")) / "images"
    found = [
        Path(r["archive"])
        for r in (json.loads(p.read_text()) for p in cache.glob("*/record.json"))
        if r.get("tag") == WATCHER_IMAGE and Path(r["archive"]).is_file()
    ]
    if not found:
        raise SystemExit("no built watcher image: run bin/bootstrap --images")
    return max(found, key=lambda p: p.stat().st_mtime)


def machine() -> str:
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    return f"{hardware_text(hardware())}; {go}, kernel {platform.release()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-cold", action="store_true", help="use the shared Go caches (no cold figures)")
    parser.add_argument("--skip-builds", action="store_true", help="the node and idle figures only")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 3], help="node counts of the idle figures")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    start_load = os.getloadavg()
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_at_start": [round(x, 1) for x in start_load],
        "builds": None if args.skip_builds else builds(args.skip_cold),
        "node": node(args.repeats, watcher_archive()),
        "idle": idle(args.nodes),
    }
    result["load_at_end"] = [round(x, 1) for x in os.getloadavg()]
    stem = args.out_dir / f"kube-{datetime.now(timezone.utc):%Y%m%d}{'-nodes' if args.skip_builds else ''}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# bin/kube benchmark ({r['date'][:10]})",
        "",
        f"Machine: {r['machine']}; load average {r['load_at_start']} at start, {r['load_at_end']} at end. "
        "Command: `python bench/kube/run.py`.",
    ]
    if r["builds"] is not None:
        lines += _builds_markdown(r["builds"])
    n = r["node"]
    lines += ["", f"Node (medians of {n['repeats']}):", "", "| step | seconds |", "|---|---:|"]
    lines += [f"| {k.removesuffix('_s').replace('_', ' ')} | {v} |" for k, v in n.items() if k != "repeats"]
    lines += [
        "",
        f"Idle cluster, nothing deployed (memory: resident, summed over its processes; CPU: over {IDLE_S:.0f} s):",
        "",
        "| nodes | up (s) | processes | memory (MiB) | CPU (cores) |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {k} | {v['up_s']} | {v['processes']} | {v['rss_mib']} | {v['cores']} |" for k, v in r["idle"].items()]
    return "\n".join(lines) + "\n"


def _builds_markdown(b: dict[str, Any]) -> list[str]:
    runs = [k for k in b if isinstance(b[k], dict) and "wall_s" in b[k]]
    names = list(b[runs[0]]["binaries_s"])  # the first run built every binary, in bootstrap's order
    lines = [
        "",
        "Builds: `bin/bootstrap --kubernetes` on scratch caches "
        "(Go under nice 19, in bootstrap's order: later binaries reuse the packages earlier ones compiled); "
        "seconds per binary as bootstrap reports them (cold includes the module downloads; - = not built: its "
        "build key was current).",
        "",
        "| binary | " + " | ".join(f"{k} (s)" for k in runs) + " | size (MiB) |",
        "|---|" + "---:|" * (len(runs) + 1),
    ]
    for n in names:
        lines.append(
            f"| {n} | "
            + " | ".join(str(b[k]["binaries_s"].get(n, "-")) for k in runs)
            + f" | {b['binaries_mib'].get(n, '')} |"
        )
    lines.append("| bootstrap wall | " + " | ".join(str(b[k]["wall_s"]) for k in runs) + " | |")
    if b.get("go_build_cache_gib") is not None:
        lines += [
            "",
            f"Go build cache after the cold run: {b['go_build_cache_gib']} GiB; module cache "
            f"{b['go_module_cache_gib']} GiB.",
        ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
