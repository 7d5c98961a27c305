"""A Python process of a local stack, beside its JVMs: the auto-restart watcher (watcher.py) and the
lag exporter (lag_exporter.py). One dynamic provider shape for both:

- create writes the plan (no secret) and the secrets file (0600) into the process's run
  directory, starts `python -m <MODULE> --plan plan.json` in its own session carrying the stack's
  process marker (so `bin/drill`, the tests' safety net and destroy find it), and waits for its
  first status file;
- read reports `running: false` for a dead process, so refresh shows it and `up` starts it again;
- a changed plan, secret or interpreter restarts it; delete stops it and removes its directory.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from components.platform.local import process as proc
from components.platform.local.layout import WATCHER_STATUS_FILE as STATUS_FILE
from components.rpc_values import plain

PLAN_FILE = "plan.json"
_RESTART_KEYS = ("plan", "auth", "python", "project_dir")
_START_S = 30.0  # the first status file appears after one poll


def service_inputs(
    component: str,
    marker: str,
    run_dir: str,
    plan: pulumi.Input[Mapping[str, Any]],
    secrets: pulumi.Input[Mapping[str, Any]] | None,
    *outputs: str,
) -> dict[str, Any]:
    """A process resource's inputs: the secrets under `auth` (a secret), this interpreter and
    project, and the provider's outputs (`pid`, `running`, `log_file`, `status_file` and the
    subclass's `outputs`) unknown until it starts."""
    return {
        "component": component,
        "marker": marker,
        "run_dir": run_dir,
        "plan": plan,
        "auth": pulumi.Output.secret(secrets) if secrets is not None else None,
        "python": sys.executable,
        "project_dir": str(Path(__file__).resolve().parents[3]),
        **dict.fromkeys(("pid", "running", *outputs, "log_file", "status_file")),
    }


def service_options(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """`opts` with the secrets kept secret in the resource's outputs too."""
    return pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["auth"]), opts)


class ServiceProvider(ResourceProvider):
    """Subclasses name the module, the files and how the secrets are written."""

    MODULE = ""
    WHAT = ""  # "the watcher", in messages
    LOG_FILE = ""
    SECRETS_FILE = ""
    SECRETS_PLAN_KEY = ""
    HINT = ""

    def secrets_text(self, secrets: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def outputs_from_status(self, status: Mapping[str, Any]) -> dict[str, Any]:
        """Outputs a subclass reads from the first status file."""
        return {}

    def _start(self, props: Mapping[str, Any]) -> dict[str, Any]:
        run_dir = Path(props["run_dir"])
        run_dir.mkdir(parents=True, exist_ok=True)
        plan = dict(plain(props["plan"]))
        secrets = plain(props.get("auth"))
        plan["statusFile"] = str(run_dir / STATUS_FILE)
        plan[self.SECRETS_PLAN_KEY] = None
        if secrets:
            proc.write_private(run_dir / self.SECRETS_FILE, self.secrets_text(secrets))
            plan[self.SECRETS_PLAN_KEY] = str(run_dir / self.SECRETS_FILE)
        (run_dir / PLAN_FILE).write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
        (run_dir / STATUS_FILE).unlink(missing_ok=True)
        cmd = [
            props["python"],
            "-m",
            self.MODULE,
            "--plan",
            str(run_dir / PLAN_FILE),
            f"{proc.MARKER_FLAG}{props['marker']}",
        ]
        log = run_dir / self.LOG_FILE
        pid = proc.spawn(cmd, log, props["project_dir"])
        deadline = time.monotonic() + _START_S
        while not (run_dir / STATUS_FILE).exists():
            if not proc.is_alive(pid) or time.monotonic() > deadline:
                proc.stop(props["marker"], pid, grace_s=5)
                tail = log.read_text(errors="replace")[-2000:]
                raise proc.ProcessError(
                    f"{props['component']}: {self.WHAT} did not write its first status within {_START_S:g}s.\n"
                    f"{tail}\nFix: read the log above ({self.HINT})."
                )
            time.sleep(0.2)
        status = json.loads((run_dir / STATUS_FILE).read_text())
        return {
            **props,
            **self.outputs_from_status(status),
            "pid": pid,
            "running": True,
            "log_file": str(log),
            "status_file": str(run_dir / STATUS_FILE),
        }

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=props["marker"], outs=self._start(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        olds, news = plain(olds), plain(news)
        changed = [k for k in _RESTART_KEYS if (olds.get(k) or None) != (news.get(k) or None)]
        if olds.get("running") is False:
            changed.append("running")  # found dead by refresh: start it again
        replaces = ["run_dir"] if olds.get("run_dir") != news.get("run_dir") else []
        return DiffResult(changes=bool(changed or replaces), replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        proc.stop(olds["marker"], olds.get("pid"), grace_s=10)
        return UpdateResult(outs=self._start(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(
            id_=id_, outs={**props, "running": proc.is_running(props.get("pid"), props.get("marker", id_))}
        )

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        proc.stop(props["marker"], props.get("pid"), grace_s=10)
        proc.remove_run_dir(props["run_dir"])
