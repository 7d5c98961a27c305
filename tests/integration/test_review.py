"""Review material on real previews: the blast radius in `pulumi preview --diff`, and the
pull-request comment bin/review-comment renders from `pulumi preview --json` plus the policy
pack's events.

One lean stack (two single-broker clusters, one worker, one flow a->b) is deployed once; each
test edits a copy of its config, previews (nothing is applied) and puts the config back.
Set MM2_REVIEW_FIXTURES=<dir> to save the previews' JSON (machine paths replaced) as the unit
tests' fixtures.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import ROOT, TestStack, free_port_block, running

pytestmark = pytest.mark.integration

FLOW = "a->b"
PACK = ROOT / "policies"


def lean_config() -> dict[str, Any]:
    cluster = {"platform": "local", "brokers": 1, "datacenter": "dc1", "security": {"protocol": "PLAINTEXT"}}
    return {
        "config": {
            "mm2:clusters": {
                "a": {**cluster, "port": free_port_block(2), "topics": {"orders": {"partitions": 1}}},
                "b": {**cluster, "port": free_port_block(2), "topics": {"invoices": {"partitions": 1}}},
            },
            "mm2:workerGroups": {"mm2": {"cluster": "b", "workers": 1, "restPort": free_port_block(1)}},
            "mm2:flows": {FLOW: {"workerGroup": "mm2", "topics": ["orders"], "groups": [".*"]}},
        }
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    with running(tmp_path_factory.mktemp("review"), lean_config()) as s:
        # The dynamic-provider host this checkout ships (it passes detailed diffs and impacts
        # on), even when the shared toolchain cache holds another checkout's copy.
        s.env["PATH"] = f"{ROOT / 'toolchain' / 'pulumi' / 'python'}{os.pathsep}{s.env['PATH']}"
        # `--event-log` (the only place policy violations reach) is behind this switch in the CLI,
        # as in Pulumi's Automation API, which sets it for every stack command.
        s.env["PULUMI_DEBUG_COMMANDS"] = "true"
        yield s


@contextmanager
def with_change(stack: TestStack, change: Any) -> Iterator[None]:
    base = copy.deepcopy(stack.config)
    change(stack.config["config"])
    stack.write_config()
    try:
        yield
    finally:
        stack.config = base
        stack.write_config()


def preview_diff(stack: TestStack, change: Any) -> str:
    with with_change(stack, change):
        out = stack.pulumi("preview", "--diff")
    # The diff display writes diagnostics (the blast radius among them) to stderr, the resource
    # diffs to stdout: a terminal shows both, interleaved.
    return out.stdout + out.stderr


def preview_review(stack: TestStack, change: Any, name: str) -> tuple[Path, Path, str]:
    """`pulumi preview --json` with the policy pack and an event log, then bin/review-comment."""
    preview, events = stack.tmp / f"{name}.json", stack.tmp / f"{name}.events.jsonl"
    events.unlink(missing_ok=True)
    pack_config = stack.tmp / "policy-config.json"
    pack_config.write_text(json.dumps({"connect-rest-requires-auth": {"devStacks": [stack.name]}}))
    with with_change(stack, change):
        out = stack.pulumi(
            "preview",
            "--json",
            "--policy-pack",
            str(PACK),
            "--policy-pack-config",
            str(pack_config),
            "--event-log",
            str(events),
            check=False,
        )
        preview.write_text(out.stdout)
    assert json.loads(preview.read_text()).get("steps"), out.stdout[-3000:] + out.stderr[-3000:]
    save_fixture(stack, preview, events, name)
    rendered = subprocess.run(
        [str(ROOT / "bin" / "review-comment"), "--preview", str(preview), "--events", str(events)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    return preview, events, rendered.stdout


def save_fixture(stack: TestStack, preview: Path, events: Path, name: str) -> None:
    target = os.environ.get("MM2_REVIEW_FIXTURES")
    if target:
        write_fixture(Path(target), name, json.loads(preview.read_text()), events.read_text().splitlines(), stack)


def write_fixture(target: Path, name: str, preview: dict[str, Any], events: list[str], stack: TestStack) -> None:
    """What the renderer reads of a preview, with machine paths and the stack name replaced:
    steps (op, urn, diffs, type, parent, inputs of changed properties), diagnostics, summary,
    and the event log's policy events only."""
    slim: dict[str, Any] = {"changeSummary": preview.get("changeSummary"), "diagnostics": preview.get("diagnostics")}
    slim["steps"] = [
        {
            **{k: step[k] for k in ("op", "urn", "detailedDiff", "diffReasons") if k in step},
            **{key: slim_state(step[key], step) for key in ("oldState", "newState") if step.get(key)},
        }
        for step in preview.get("steps") or ()
    ]
    policy = [line for line in events if '"policyEvent"' in line]
    replacements = {str(ROOT): "<repo>", str(stack.tmp): "<tmp>", str(Path.home()): "<home>", stack.name: "review"}
    for suffix, text in ((".json", json.dumps(slim, indent=1, sort_keys=True)), (".events.jsonl", "\n".join(policy))):
        for old, new in replacements.items():
            text = text.replace(old, new)
        leaks = [p for p in ("/work/", "/root/", "/tmp/", "/home/") if p in text]
        assert not leaks, f"fixture {name}{suffix} would name machine paths {leaks}"
        (target / f"{name}{suffix}").write_text(text + "\n")


def slim_state(state: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    inputs = state.get("inputs") or {}
    if state.get("custom"):  # a component's inputs are its summary; a resource's, only what changed
        changed = {p.split("[", 1)[0] for p in step.get("detailedDiff") or {}} | set(step.get("diffReasons") or ())
        inputs = {k: v for k, v in inputs.items() if k in changed}
    return {"type": state.get("type"), "parent": state.get("parent"), "custom": state.get("custom"), "inputs": inputs}


# -- blast radius in `pulumi preview --diff` -------------------------------------------------


def test_setting_change_names_the_key_and_the_task_restart(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        cfg["mm2:flows"][FLOW]["settings"] = {"sync.group.offsets.enabled": "true"}

    text = preview_diff(stack, change)
    assert 'sync.group.offsets.enabled: "true"' in text, text[-4000:]
    assert "connector mm2-a-to-b-checkpoint: config keys sync.group.offsets.enabled change" in text, text[-4000:]
    assert "Connect restarts the connector" in text, text[-4000:]
    assert "offsets are re-translated" in text, text[-4000:]
    # Only the changed key, not the whole config map.
    assert "replication.policy.separator" not in text, text[-4000:]


def test_worker_change_says_which_process_restarts_and_how(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        cfg["mm2:workerGroups"]["mm2"]["workerConfig"] = {"offset.flush.interval.ms": "7000"}

    text = preview_diff(stack, change)
    assert 'offset.flush.interval.ms: "5000" => "7000"' in text, text[-4000:]
    assert "ConnectWorkerGroup 'mm2', worker 0: restarts" in text, text[-4000:]
    assert "all at once: it is the only one, so every connector of the group stops" in text, text[-4000:]


def test_separator_change_warns_remote_topic_names_change(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        cfg["mm2:flows"][FLOW]["replicationPolicy"] = {"class": "default", "separator": "_"}

    text = preview_diff(stack, change)
    assert "remote topic names change (a.orders -> a_orders)" in text, text[-4000:]
    assert "checkpoints move to a_checkpoints_internal (was a.checkpoints.internal)" in text, text[-4000:]


# -- the pull-request comment from `pulumi preview --json` + the pack's events -----------------


def test_comment_for_a_setting_change(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        cfg["mm2:flows"][FLOW]["settings"] = {"sync.group.offsets.enabled": "true"}

    _, _, md = preview_review(stack, change, "setting-change")
    changes, blast, violations = sections(md)
    assert "#### flow a->b" in changes, md
    assert '`config["sync.group.offsets.enabled"]` = "true"' in changes or "sync.group.offsets.enabled" in changes, md
    assert "`mm2-a-to-b-checkpoint`" in changes, md
    assert "mm2-a-to-b-source" not in changes, md  # untouched connectors are not listed
    assert "connector mm2-a-to-b-checkpoint: config keys sync.group.offsets.enabled change" in blast, md
    assert "⚠️ connector mm2-a-to-b-checkpoint: offsets are re-translated" in blast, md
    # A single-task source outside a dev stack: the pack's advisory rule, with its fix.
    assert "`source-connector-min-tasks` | advisory | `mm2-a-to-b-source`" in violations, md
    assert "set tasksMax (tasks.max) to at least 2" in violations, md


def test_comment_for_a_new_flow(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        cfg["mm2:flows"]["b->a"] = {"workerGroup": "mm2", "topics": ["invoices"], "groups": [".*"]}

    _, _, md = preview_review(stack, change, "new-flow")
    changes, blast, _ = sections(md)
    assert "#### flow b->a" in changes, md
    for role in ("source", "checkpoint", "heartbeat"):
        assert f"| + create | `mm2-b-to-a-{role}` | Connector |" in changes, md
    assert "#### flow a->b" not in changes, md  # the existing flow does not change
    assert "new flow b->a: its source, checkpoint and heartbeat connectors are created" in blast, md


def test_comment_for_a_policy_violation(stack: TestStack) -> None:
    def change(cfg: dict[str, Any]) -> None:
        flow = cfg["mm2:flows"][FLOW]
        flow["disasterRecovery"] = True
        flow["settings"] = {"sync.group.offsets.enabled": "false"}

    _, _, md = preview_review(stack, change, "policy-violation")
    _, _, violations = sections(md)
    row = next((line for line in violations.splitlines() if "`disaster-recovery-syncs-group-offsets`" in line), "")
    assert "| advisory | `mm2-a-to-b-checkpoint` |" in row, md
    assert "sync.group.offsets.enabled is not true" in row, md
    assert 'set sync.group.offsets.enabled: "true"' in row.rsplit("|", 2)[-2], md  # the fix column


def sections(md: str) -> tuple[str, str, str]:
    """The comment's three parts, in order; fails if one is missing or out of place."""
    assert md.startswith("<!-- mm2-review -->"), md[:200]
    _, rest = md.split("### Changes by flow", 1)
    changes, rest = rest.split("### Blast radius", 1)
    blast, violations = rest.split("### Policy violations", 1)
    return changes, blast, violations
