"""What Connect's plugins say about a connector config: the preview-time check of settings
that pass through the stack's catalogue (transforms, predicates, any connector key).

`PUT /connector-plugins/{class}/config/validate` reports bad values, but silently accepts keys
no definition names, so a typo would deploy and do nothing. `config_problems` adds those: a
key outside the catalogue (components/topology/settings.py) that the connector class and its
transformations do not define is rejected with a "did you mean". A transformation or predicate
class that is not installed is named with what the workers do have (`GET /connector-plugins`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from components.topology.settings import KNOWN_SETTINGS, pass_through_keys, suggest

from .client import ConnectClient
from .errors import ConfigProblem

_PLUGIN_KINDS = {"transforms": "transformation", "predicates": "predicate"}
# MirrorSourceConnector declares exactly-once support from Kafka 3.5 (KIP-618 came to Connect in
# 3.3; MM2's connectors implemented it in 3.5).
EXACTLY_ONCE_SINCE = (3, 5)


def validate_config(
    client: ConnectClient, connector_class: str, config: Mapping[str, str], managed_workers: bool = False
) -> list[ConfigProblem]:
    """Connect's problems with `config` plus keys nothing defines; asks for the installed
    plugins only when a transformation or predicate class is missing. `managed_workers`: the
    stack deploys the workers and sets their exactly-once support before the connector changes
    (see `worker_support_problems`)."""
    answer = client.validate_answer(connector_class, config)
    problems = config_problems(connector_class, answer, config)
    if config.get("exactly.once.support") == "required":
        problems = worker_support_problems(problems, client.url, managed_workers)
        problems += exactly_once_version_problems(str(client.server_info().get("version", "")), client.url)
    if any(_missing_class(p) for p in problems):
        installed = client.list_all_plugins()
        problems = [_with_installed(p, config, installed, client.url) for p in problems]
    return problems


def config_problems(connector_class: str, answer: Mapping[str, Any], config: Mapping[str, str]) -> list[ConfigProblem]:
    """Pure: the rejected keys of a validation answer, then the keys it does not define."""
    defined: set[str] = set()
    problems: list[ConfigProblem] = []
    for entry in answer.get("configs") or []:
        name = str((entry.get("definition") or {}).get("name") or (entry.get("value") or {}).get("name") or "")
        defined.add(name)
        errors = tuple(str(e) for e in (entry.get("value") or {}).get("errors") or [])
        if errors:
            problems.append(ConfigProblem(name, errors))
    broken = {p.key.rsplit(".", 1)[0] + "." for p in problems if p.key.endswith(".type")}
    short = connector_class.rsplit(".", 1)[-1]
    for key in pass_through_keys(config):
        if key in defined or key.startswith(tuple(broken)):
            continue
        hint = suggest(key, defined | KNOWN_SETTINGS)
        did = f' Did you mean "{hint}"?' if hint else ""
        problems.append(
            ConfigProblem(
                key,
                (f"{short} and its transformations define no such setting, so Connect would ignore it.{did}",),
            )
        )
    return problems


def exactly_once_version_problems(version: str, url: str) -> list[ConfigProblem]:
    """Pure: a worker group too old for an exactly-once MM2 flow (version as `GET /` gives it)."""
    numbers = re.match(r"(\d+)\.(\d+)", version)
    if numbers is None or (int(numbers[1]), int(numbers[2])) >= EXACTLY_ONCE_SINCE:
        return []
    since = ".".join(map(str, EXACTLY_ONCE_SINCE))
    return [
        ConfigProblem(
            "exactly.once.support",
            (
                f"the workers at {url} run Kafka Connect {version}; MirrorSourceConnector supports "
                f"exactly-once from {since}. Fix: upgrade the worker group to Kafka {since} or later, "
                "or set exactlyOnce: false on the flow.",
            ),
        )
    ]


# Connect's validation message for `exactly.once.support=required` on a worker that does not run
# at exactly.once.source.support=enabled (DistributedHerder.validateSourceConnectorExactlyOnceSupport).
WORKER_WITHOUT_EXACTLY_ONCE = "This worker does not have exactly-once source support enabled."


def worker_support_problems(problems: list[ConfigProblem], url: str, managed_workers: bool) -> list[ConfigProblem]:
    """Pure: Connect's "worker without exactly-once support" answer, judged.

    On workers the stack deploys it is expected while they are rolled out: the preview asks the
    running workers, which are still at `disabled` or `preparing` when this `up` rolls them to
    `enabled`, and the connector is only updated after they are. On a group the stack does not
    deploy (`external`), it is bad input: the reason and the fix."""
    out = []
    for problem in problems:
        if problem.key != "exactly.once.support" or WORKER_WITHOUT_EXACTLY_ONCE not in problem.messages:
            out.append(problem)
            continue
        others = tuple(m for m in problem.messages if m != WORKER_WITHOUT_EXACTLY_ONCE)
        if not managed_workers:
            others += (
                f"the workers at {url} do not run with exactly.once.source.support=enabled, so an exactly-once "
                "flow cannot start there. Fix: set it on every worker of the group in two rolling restarts "
                "(first exactly.once.source.support=preparing on all of them, then enabled), and grant the "
                "transactional ACLs of Kafka's exactly-once source connector documentation; or set "
                "exactlyOnce: false on the flow.",
            )
        if others:
            out.append(ConfigProblem(problem.key, others))
    return out


def unresolvable_config_text(connector: str, url: str, error: Exception) -> str:
    """Connect answered the validation with a ConfigException: its workers cannot resolve the
    config, typically a `${file:...}` placeholder whose file is not on them."""
    return (
        f"connector {connector!r}: Connect at {url} cannot resolve its config: {error}. Fix: the files the "
        "config's ${file:...} placeholders name must exist and be readable on every worker of the group "
        "(for an adopted Connect, `workerGroups.<group>.secretsFile`, holding the keys the stack's secrets use); "
        "then preview again."
    )


def _missing_class(problem: ConfigProblem) -> bool:
    return problem.key.endswith(".type") and problem.key.split(".", 1)[0] in _PLUGIN_KINDS


def _with_installed(
    problem: ConfigProblem, config: Mapping[str, str], installed: list[dict[str, Any]], url: str
) -> ConfigProblem:
    if not _missing_class(problem):
        return problem
    kind = _PLUGIN_KINDS[problem.key.split(".", 1)[0]]
    have = sorted(str(p.get("class")) for p in installed if str(p.get("type", "")).lower() == kind)
    wanted = config.get(problem.key, "?")
    message = (
        f"class {wanted!r} is not on the plugin path of the workers at {url} "
        f"({'; '.join(problem.messages)}). Installed {kind}s: {', '.join(have) or '(none)'}. "
        "Fix: correct the class name, or install its jar on every worker (plugin.path) first."
    )
    return ConfigProblem(problem.key, (message,))


def validation_failure_text(name: str, problems: list[ConfigProblem]) -> str:
    lines = "\n".join(f"  {p.key}: {'; '.join(p.messages)}" for p in problems)
    return (
        f"connector {name!r}: Connect's validation rejected its config, so nothing was created:\n{lines}\n"
        "Next step: fix these keys in `settings` / `connectorSettings` of the flow, then run `pulumi up` again."
    )
