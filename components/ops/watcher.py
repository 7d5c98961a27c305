"""The auto-restart watcher: restarts FAILED connectors of one worker group, and on the local
platform the group's worker processes that died, with a back-off.

    bin/watcher --plan <run>/watcher-mm2/plan.json       what the stack runs (local process, k8s pod)
    bin/watcher --stack dev --group mm2 [--max-restarts 3] [--connector NAME ...]   by hand, foreground

Every `poll` seconds it reads each watched connector's status (from the group's first worker,
or the next one when that one does not answer: components/connect/stdlib_client.py). Anything FAILED is restarted with
`POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true` when the back-off planner
(`components.watch.backoff.plan`) says it is due; after `maxRestarts` it gives up and says so. It never
changes a config or a declared state and ignores PAUSED or STOPPED connectors: those belong to
`pulumi up` (docs/day2-operations.md, "Watcher and pulumi up").

A local plan also lists the group's worker processes: one whose process is gone (killed,
crashed) while the stack still means it to run is started again with its last command line
(`components.platform.local.process.restart_dead`), on the same back-off, without limit, as
Kubernetes restarts a pod.

What it did goes to its log (stdout, one line per event) and to a status file, replaced
atomically after every poll (format in docs/day2-operations.md):

    {"group": "mm2", "pid": 123, "updatedAt": "...Z", "connectors": {"<name>": {"state": "RUNNING",
     "restarts": 1, "maxRestarts": 3, "gaveUp": false, "nextRestartAt": null, "lastFailure": "..."}},
     "events": [{"at": "...Z", "connector": "<name>", "action": "restart", "restart": 1, "cause": "..."}]}
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from components.connect.health import failed_instances
from components.ops.errors import OpsError
from components.watch.backoff import Backoff, RestartAction, RestartTrack, plan
from components.watch.plan import WatchPlan, plan_from_document

EVENTS_KEPT = 50
# Environment variables a rendered workload passes the REST credentials in (never on a command line).
AUTH_USER_ENV = "MM2_WATCHER_REST_USERNAME"
AUTH_PASSWORD_ENV = "MM2_WATCHER_REST_PASSWORD"


def read_plan(path: str) -> WatchPlan:
    """A plan file written by the stack; credentials from its authFile or the environment."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise OpsError(
            f"watcher: cannot read the plan {path}: {exc}. Next step: run `bin/pulumi up` for the stack."
        ) from exc
    auth = _env_auth()
    if doc.get("authFile"):
        values = _properties(Path(doc["authFile"]).read_text())
        auth = (values["username"], values["password"])
    return plan_from_document(doc, auth)


def _env_auth() -> tuple[str, str] | None:
    """REST credentials from the environment (a Kubernetes Secret, or a person's shell)."""
    password = os.environ.get(AUTH_PASSWORD_ENV)
    return (os.environ.get(AUTH_USER_ENV, ""), password) if password else None


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.lstrip().startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


class Watcher:
    """The loop's state and one poll (`tick`); clocks and the client are injectable for tests."""

    def __init__(
        self,
        plan_: WatchPlan,
        client_factory: Callable[[], Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        log: Callable[[str], None] = print,
    ) -> None:
        self.plan = plan_
        self.client_factory = client_factory
        self.clock, self.wall, self.log = clock, wall, log
        self.tracks: dict[str, RestartTrack] = {name: RestartTrack() for name in plan_.connectors}
        self.view: dict[str, dict[str, Any]] = {name: {"state": "UNKNOWN"} for name in plan_.connectors}
        self.events: list[dict[str, Any]] = []
        self._unreachable = False
        self.worker_tracks: dict[str, RestartTrack] = {w.name: RestartTrack() for w in plan_.workers}
        self.worker_view: dict[str, dict[str, Any]] = {w.name: {"alive": None} for w in plan_.workers}

    def tick(self) -> None:
        """Restart due dead workers, read every watched connector once, act on what is due, write
        the status file."""
        from components.connect.errors import ConnectError

        self._workers()
        try:
            with self.client_factory() as client:
                for name in self.plan.connectors:
                    self._one(client, name)
            if self._unreachable:
                self._event(None, "reachable", f"Connect at {self.plan.url} answers again")
            self._unreachable = False
        except ConnectError as exc:
            if not self._unreachable:
                self._event(None, "unreachable", f"{exc}; retrying every {self.plan.poll_s:g}s")
            self._unreachable = True
        self.write_status()

    def _workers(self) -> None:
        """Each local worker process: alive, or started again when the back-off says it is due."""
        if not self.plan.workers:
            return
        # Local plans only (the Kubernetes pod's plan lists no workers and ships no such module).
        from components.platform.local import process as proc

        for w in self.plan.workers:
            alive = bool(proc.find_pids(w.marker))
            now = self.clock()
            decision = plan(
                self.worker_tracks[w.name], failed=not alive, now=now, max_restarts=None, backoff=self.plan.backoff
            )
            self.worker_tracks[w.name] = decision.track
            view = self.worker_view[w.name]
            view.update(
                alive=alive,
                restarts=decision.track.restarts,
                nextRestartAt=_iso(self.wall() + decision.due - now) if decision.due is not None else None,
            )
            if decision.action is RestartAction.RESTART:
                try:
                    pid = proc.restart_dead(w.run_dir)
                except (OSError, ValueError, KeyError) as exc:
                    self._event(
                        None,
                        "worker-restart-failed",
                        str(exc),
                        worker=w.name,
                        text=f"could not start {w.name} again: {exc}",
                    )
                    continue
                if pid is None:
                    continue  # the stack stopped it, or is acting on it: not ours to start
                view["alive"] = True
                self._event(
                    None,
                    "worker-restart",
                    "its process was gone",
                    restart=decision.track.restarts,
                    worker=w.name,
                    text=f"restarted {w.name} (pid {pid}, restart {decision.track.restarts}): its process was gone",
                )
            elif decision.action is RestartAction.WAIT and view.get("reported") != decision.track.failed_since:
                view["reported"] = decision.track.failed_since
                self._event(
                    None,
                    "worker-dead",
                    "its process is gone",
                    worker=w.name,
                    text=f"{w.name} is dead: restart {decision.track.restarts + 1} due at {view['nextRestartAt']}",
                )

    def _one(self, client: Any, name: str) -> None:
        status = client.get_status(name)
        failed = failed_instances(status)
        connector_state = (status or {}).get("connector", {}).get("state", "MISSING") if status else "MISSING"
        now = self.clock()
        limit = self.plan.connectors[name]
        decision = plan(self.tracks[name], failed=bool(failed), now=now, max_restarts=limit, backoff=self.plan.backoff)
        self.tracks[name] = decision.track
        cause = failed[0].summary() if failed else None
        view = self.view[name]
        view.update(
            state="FAILED" if failed else connector_state,
            restarts=decision.track.restarts,
            maxRestarts=limit,
            gaveUp=decision.track.gave_up,
            nextRestartAt=_iso(self.wall() + decision.due - now) if decision.due is not None else None,
        )
        if cause:
            view["lastFailure"] = cause
        of = f" of {limit}" if limit is not None else ""
        if decision.action is RestartAction.RESTART:
            client.restart(name, include_tasks=True, only_failed=True)
            self._event(
                name,
                "restart",
                cause,
                restart=decision.track.restarts,
                text=f"restarted {name} (restart {decision.track.restarts}{of}): {cause}",
            )
        elif decision.action is RestartAction.GIVE_UP:
            self._event(
                name,
                "give-up",
                cause,
                text=f"gave up on {name} after {decision.track.restarts} restart(s){of}: {cause}. Next step: fix the "
                "cause, then `bin/connectors restart --failed-only` or `bin/pulumi up --refresh`",
            )
        elif decision.action is RestartAction.RESET:
            self._event(
                name, "reset", None, text=f"{name} healthy for {self.plan.backoff.stable_s:g}s: restart count reset"
            )

    def _event(
        self,
        name: str | None,
        action: str,
        cause: str | None,
        *,
        restart: int | None = None,
        text: str | None = None,
        worker: str | None = None,
    ) -> None:
        at = self.wall()
        event: dict[str, Any] = {"at": _iso(at), "connector": name, "action": action, "cause": cause}
        if restart is not None:
            event["restart"] = restart
        if worker is not None:
            event["worker"] = worker
        self.events = [*self.events, event][-EVENTS_KEPT:]
        self.log(f"{_iso(at)} watcher[{self.plan.group}]: {text or f'{action}: {cause}'}")

    def status_document(self) -> dict[str, Any]:
        return {
            "group": self.plan.group,
            "url": self.plan.url,
            "pid": os.getpid(),
            "updatedAt": _iso(self.wall()),
            "reachable": not self._unreachable,
            "connectors": self.view,
            "workers": {
                name: {k: v for k, v in view.items() if k != "reported"} for name, view in self.worker_view.items()
            },
            "events": self.events,
        }

    def write_status(self) -> None:
        if not self.plan.status_file:
            return
        target = Path(self.plan.status_file)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(self.status_document(), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, target)  # readers see the old or the new status, never half of one

    def run(self, should_stop: Callable[[], bool], max_seconds: float | None = None) -> None:
        started = self.clock()
        self.log(
            f"{_iso(self.wall())} watcher[{self.plan.group}]: watching "
            f"{', '.join([*sorted(self.plan.connectors), *(w.name for w in self.plan.workers)]) or 'nothing'} "
            f"at {self.plan.url} every {self.plan.poll_s:g}s"
        )
        while not should_stop():
            self.tick()
            if max_seconds is not None and self.clock() - started >= max_seconds:
                return
            # Short sleeps so a stop request is honoured promptly.
            deadline = self.clock() + self.plan.poll_s
            while not should_stop() and self.clock() < deadline:
                time.sleep(min(0.2, self.plan.poll_s))


def plan_from_outputs(
    outputs: Any,
    group: str,
    connectors: Sequence[str],
    max_restarts: int | None,
    backoff: Backoff,
    status_file: str | None,
    poll_s: float,
) -> WatchPlan:
    """A plan for a foreground watcher: the group's endpoint and credentials from the stack outputs,
    every connector of the flows it runs unless `connectors` names some."""
    from components.ops.clients import connect_auth, connect_ca_pem, connect_url

    names = list(connectors) or sorted(
        name for f in outputs.flows.values() if f.worker_group == group and f.enabled for name in f.connectors.values()
    )
    if not names:
        raise OpsError(
            f"watcher: worker group {group!r} runs no connector of this stack. "
            "Next step: pass --group with a group that runs a flow."
        )
    return WatchPlan(
        group=group,
        url=connect_url(outputs, group),
        connectors=dict.fromkeys(names, max_restarts),
        auth=connect_auth(outputs, group) or _env_auth(),
        ca_pem=connect_ca_pem(outputs, group),
        status_file=status_file,
        backoff=backoff,
        poll_s=poll_s,
    )


def _client_factory(plan_: WatchPlan) -> Callable[[], Any]:
    """One client for every poll (it remembers which worker answered last); no retry budget: an
    unreachable group is reported and asked again on the next poll."""
    from components.connect.stdlib_client import StdlibConnectClient

    client = StdlibConnectClient([plan_.url, *plan_.other_urls], auth=plan_.auth, ca_pem=plan_.ca_pem, timeout=5.0)
    return lambda: client


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bin/watcher", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", help="plan file the stack wrote (local: <run>/watcher-<group>/plan.json)")
    parser.add_argument("--stack", help="stack whose outputs name the worker group's endpoint")
    parser.add_argument("--outputs", help="stack outputs as a JSON file instead of `pulumi stack output`")
    parser.add_argument("--group", default="mm2", help="worker group to watch (default mm2)")
    parser.add_argument("--connector", action="append", default=[], help="watch only this connector (repeatable)")
    parser.add_argument(
        "--max-restarts", type=int, default=None, help="give up after this many restarts (default: no limit)"
    )
    parser.add_argument("--status-file", help="where to write the status JSON")
    parser.add_argument("--first-s", type=float, default=Backoff.first_s, help="delay before the first restart")
    parser.add_argument(
        "--unit-s", type=float, default=Backoff.unit_s, help="back-off unit: restart n+1 waits unit*(n*n+n)"
    )
    parser.add_argument("--stable-s", type=float, default=Backoff.stable_s, help="healthy this long resets the count")
    parser.add_argument("--poll-s", type=float, default=2.0, help="seconds between status reads")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop after this long (default: run until stopped)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0 when stopped (SIGTERM, SIGINT, --max-seconds), 1 when the plan cannot be read.

    Imports only the standard library and its own modules (connect's stdlib_client, health and
    errors, ops' errors, components/watch/) for --plan: the Kubernetes workload ships just those
    files and installs nothing."""
    # The stack's process marker (-Dmm2.process=...) only makes the process findable.
    args = _args([a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-Dmm2.process=")])
    try:
        if args.plan:
            plan_ = read_plan(args.plan)
        elif args.stack or args.outputs:
            from components.outputs.loader import load_exports

            backoff = Backoff(first_s=args.first_s, unit_s=args.unit_s, stable_s=args.stable_s)
            plan_ = plan_from_outputs(
                load_exports(args.stack, args.outputs),
                args.group,
                args.connector,
                args.max_restarts,
                backoff,
                args.status_file,
                args.poll_s,
            )
        else:
            raise OpsError("watcher: pass --plan FILE, or --stack NAME (or --outputs FILE) with --group.")
    except (OpsError, KeyError, ValueError) as exc:  # OutputsError is a ValueError
        print(str(exc), file=sys.stderr)
        return 1
    stopping = [False]

    def stop(_signum: int, _frame: Any) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    Watcher(plan_, _client_factory(plan_), log=lambda line: print(line, flush=True)).run(
        lambda: stopping[0], args.max_seconds
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
