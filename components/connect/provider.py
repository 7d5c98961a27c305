"""The Connector dynamic resource: one Kafka Connect connector managed by Pulumi.

`Connector` registers as `pulumi-python:dynamic/connect:Connector` so policies, mocks and the
Spark stage match on the type instead of sniffing properties. `ConnectorProvider` does the
work through `ConnectClient`, built inside every call: Pulumi pickles the provider with the
program (dill), and a live httpx client cannot be pickled. What the inputs mean and how they
are checked lives in `inputs`; how old and new properties differ, in `diff`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypedDict

import httpx
import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from components.kafka.acl_check import missing_access_text, transactional_access, unknown_access_text
from components.rpc_values import has_unknown, plain
from components.topology.settings import pass_through_keys
from components.topology.traces import trace_head

from .client import ConnectClient, connector_path
from .diff import ConnectorDiff, connector_diff, same_config
from .errors import (
    ConnectError,
    ConnectorFailed,
    ConnectorOperationFailed,
    ConnectRequestError,
    ConnectTimeout,
    ConnectUnavailable,
)
from .health import failed_instances, unassigned_tasks
from .inputs import DEFAULT_STATE, DEFAULT_TIMEOUT_S, DESIRED_STATES, ConnectorInputs, input_failures, state_outputs
from .plugin_validation import unresolvable_config_text, validate_config, validation_failure_text
from .stdlib_client import unanswered

__all__ = ["TYPE_TOKEN", "Connector", "ConnectorArgs", "ConnectorProvider"]

# How long each worker of the group is given to answer at all before a read calls it unreachable.
GROUP_PROBE_TIMEOUT_S = 2.0

TYPE_TOKEN = "pulumi-python:dynamic/connect:Connector"
# The property a check failure names; none: the engine then prints the reason alone instead of
# "property config value {<every key of the connector config>} has a problem: <reason>".
WHOLE_RESOURCE = ""
# Validation during check must not stall a preview: one attempt, short timeout.
_CHECK_TIMEOUT_S = 15.0
# Where the dynamic-provider machinery keeps the pickled provider among the properties.
_PROVIDER_KEY = "__provider"
# How long a refresh watches a task that no worker runs before calling it drift: a rebalance
# assigns it within seconds, a lost worker (or a group too small for its tasks) never does.
UNASSIGNED_BOUND_S = 15.0
# A stop accepted this recently in this provider host is not asked again by update (ConnectClient).
_STOP_FRESH_S = 60.0
# How long create, update and delete keep retrying a Connect endpoint that does not answer or is
# busy (409, 5xx). Read from the environment of `pulumi up`, not the stack config: it is about the
# machine and the moment (a CI job against an adopted Connect that is down can fail fast).
RETRY_SECONDS_ENV = "MM2_CONNECT_RETRY_SECONDS"
DEFAULT_RETRY_S = 60.0
# Messages for the `pulumi preview`/`up` output (the dynamic-provider host forwards this logger).
LOG = logging.getLogger("dynamic_provider.connect")


class _RequiredConnectorArgs(TypedDict):
    connect_url: pulumi.Input[str]
    """REST URL of the Connect worker group that runs the connector, e.g. http://127.0.0.1:18083.
    Changing it replaces the connector (it moves to another group)."""

    name: pulumi.Input[str]
    """Connector name in Connect. Changing it replaces the connector."""

    config: pulumi.Input[Mapping[str, pulumi.Input[str]]]
    """The connector config exactly as Connect receives it (string to string), including
    connector.class. A changed key is an in-place update."""


# total=False on a subclass rather than typing.NotRequired, which Python 3.10 lacks.
class ConnectorArgs(_RequiredConnectorArgs, total=False):
    """Inputs of a Connector: connect_url, name and config are required."""

    auth: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None
    """REST basic-auth credentials {username, password}; stored as a secret."""

    timeout_seconds: pulumi.Input[int]
    """How long create and update wait for the connector and its tasks to reach desired_state
    (default 180)."""

    desired_state: pulumi.Input[str]
    """RUNNING (default), PAUSED or STOPPED. A connector created paused or stopped never runs a
    task; on update the state is enforced (a connector paused by hand is resumed), and a refresh
    shows a live state that differs as drift."""

    ca_pem: pulumi.Input[str] | None
    """PEM CA certificate(s) to verify an https:// connect_url against (the stack's CA)."""
    managed_workers: pulumi.Input[bool] | None
    """The stack deploys the workers and sets their worker config (exactly-once support among
    it) before the connector is created or updated (plugin_validation.worker_support_problems)."""
    other_urls: pulumi.Input[Sequence[pulumi.Input[str]]] | None
    """The group's other workers' REST URLs: where create, update, refresh and delete go when
    connect_url does not answer. Not diffed: which workers answer changes no connector."""
    wait_for_state: pulumi.Input[bool] | None
    """False: create and update ask for desired_state and return without waiting for it (default
    true). For a flow whose source cluster is lost: its connectors' stop waits on that cluster."""
    access_check: pulumi.Input[Mapping[str, Any]] | None
    """An exactly-once flow's target whose ACLs the stack does not manage: {cluster, flow,
    bootstrap, client, acls}; the preview fails when the target's ACLs lack a grant in `acls`
    (components/kafka/acl_check.py). Stored as a secret (client holds a password); not diffed."""


class Connector(Resource, module="connect", name="Connector"):
    """A Kafka Connect connector, created and updated through PUT /connectors/{name}/config.

    Outputs are the inputs plus `state` (the connector's state) and `tasks`
    ([{id, state, worker_id}]).
    """

    connect_url: pulumi.Output[str]
    name: pulumi.Output[str]
    config: pulumi.Output[dict[str, str]]
    auth: pulumi.Output[dict[str, str] | None]
    timeout_seconds: pulumi.Output[int]
    desired_state: pulumi.Output[str]
    ca_pem: pulumi.Output[str | None]
    state: pulumi.Output[str]
    tasks: pulumi.Output[list[dict[str, Any]]]

    def __init__(
        self,
        resource_name: str,
        args: ConnectorArgs | None = None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        connect_url: pulumi.Input[str] | None = None,
        connector_name: pulumi.Input[str] | None = None,
        config: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        auth: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        timeout_seconds: pulumi.Input[int] | None = None,
        desired_state: pulumi.Input[str] | None = None,
        ca_pem: pulumi.Input[str] | None = None,
        managed_workers: bool | None = None,
        access_check: pulumi.Input[Mapping[str, Any]] | None = None,
        other_urls: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None,
        wait_for_state: bool | None = None,
    ) -> None:
        """Pass either args (a ConnectorArgs) or the same inputs as keywords, with the
        connector's name as connector_name (name would read as the Pulumi resource name)."""
        if args is None:
            if connect_url is None or connector_name is None or config is None:
                raise TypeError(f"Connector {resource_name!r} needs args, or connect_url, connector_name and config")
            args = {"connect_url": connect_url, "name": connector_name, "config": config}
            if auth is not None:
                args["auth"] = auth
            if timeout_seconds is not None:
                args["timeout_seconds"] = timeout_seconds
            if desired_state is not None:
                args["desired_state"] = desired_state
            if ca_pem is not None:
                args["ca_pem"] = ca_pem
            if managed_workers is not None:
                args["managed_workers"] = managed_workers
            if access_check is not None:
                args["access_check"] = access_check
            if other_urls is not None:
                args["other_urls"] = other_urls
            if wait_for_state is not None:
                args["wait_for_state"] = wait_for_state
        elif (
            managed_workers is not None
            or wait_for_state is not None
            or access_check is not None
            or other_urls is not None
            or any(
                v is not None
                for v in (connect_url, connector_name, config, auth, timeout_seconds, desired_state, ca_pem)
            )
        ):
            raise TypeError(f"Connector {resource_name!r}: pass args or keyword inputs, not both")
        auth = args.get("auth")
        props: dict[str, Any] = {
            "connect_url": args["connect_url"],
            "name": args["name"],
            "config": args["config"],
            # Secret on the way in so the engine never records it in plain text; the provider
            # (which does not accept secrets) gets the plain value and the engine re-marks it.
            "auth": pulumi.Output.secret(auth) if auth is not None else None,
            "timeout_seconds": args.get("timeout_seconds", DEFAULT_TIMEOUT_S),
            "desired_state": args.get("desired_state", DEFAULT_STATE),
            "ca_pem": args.get("ca_pem"),
            "state": None,
            "tasks": None,
        }
        if args.get("managed_workers"):
            props["managed_workers"] = True
        if args.get("other_urls"):
            props["other_urls"] = args["other_urls"]
        if args.get("wait_for_state") is False:
            props["wait_for_state"] = False
        if args.get("access_check") is not None:
            props["access_check"] = pulumi.Output.secret(args["access_check"])
        # additional_secret_outputs covers the output copies of auth and access_check.
        secret_outputs = ["auth", "access_check"]
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=secret_outputs), opts)
        super().__init__(
            ConnectorProvider(retry_budget_s=retry_budget_from_env(os.environ)), resource_name, props, opts
        )


def _access_failures(connector: str, access: Mapping[str, Any]) -> list[CheckFailure]:
    """The preview's check of an exactly-once flow's grants on a target the stack does not grant
    on: a failure naming what is missing, or a warning when it cannot tell."""
    flow, cluster = str(access.get("flow")), str(access.get("cluster"))
    verdict = transactional_access(access)
    if verdict.unknown:
        LOG.warning(unknown_access_text(flow, cluster, verdict.unknown))
    if not verdict.missing:
        return []
    return [CheckFailure(WHOLE_RESOURCE, missing_access_text(connector, flow, cluster, verdict.missing))]


def retry_budget_from_env(environ: Mapping[str, str]) -> float:
    """Seconds of retries against an unreachable or busy Connect (`MM2_CONNECT_RETRY_SECONDS`, 60)."""
    raw = environ.get(RETRY_SECONDS_ENV, "").strip()
    if not raw:
        return DEFAULT_RETRY_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(
            f"{RETRY_SECONDS_ENV}={raw!r} is not a number of seconds. Fix: unset it (the default is "
            f"{DEFAULT_RETRY_S:g}) or set it to a number >= 0."
        )
    return seconds


class ConnectorProvider(ResourceProvider):
    """Create, read, update and delete connectors over Connect's REST API.

    Holds only plain values so that dill can pickle it. `transport_factory` and `sleep` exist
    for tests (an httpx.MockTransport, a fake sleep); leave them None in programs.
    """

    def __init__(
        self,
        *,
        transport_factory: Callable[[], httpx.BaseTransport] | None = None,
        sleep: Callable[[float], None] | None = None,
        retry_budget_s: float = DEFAULT_RETRY_S,
        poll_s: float = 0.5,
    ) -> None:
        super().__init__()
        self.transport_factory = transport_factory
        self.sleep = sleep
        self.retry_budget_s = retry_budget_s
        self.poll_s = poll_s

    # -- check -----------------------------------------------------------------------------

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = dict(news)
        if inputs.get("timeout_seconds") is None:
            inputs["timeout_seconds"] = DEFAULT_TIMEOUT_S
        if inputs.get("desired_state") is None:
            inputs["desired_state"] = DEFAULT_STATE
        failures = input_failures(inputs)
        # __provider itself can be unknown in a preview; it says nothing about the connector.
        if (
            not failures
            and not has_unknown({k: v for k, v in inputs.items() if k != _PROVIDER_KEY})
            and not same_config(olds, inputs)
        ):
            failures = self._validation_failures(
                ConnectorInputs.from_props(inputs), managed_workers=bool(plain(inputs.get("managed_workers")))
            )
            if inputs.get("access_check"):
                failures += _access_failures(str(plain(inputs["name"])), plain(inputs["access_check"]))
        return CheckResult(inputs, failures)

    def _validation_failures(self, spec: ConnectorInputs, managed_workers: bool = False) -> list[CheckFailure]:
        connector_class = spec.config["connector.class"]
        try:
            with self._client(spec, retry_budget_s=0.0, timeout=_CHECK_TIMEOUT_S) as client:
                config = {**spec.config, "name": spec.name}
                problems = validate_config(client, connector_class, config, managed_workers)
        except ConnectUnavailable:
            # During a first preview the worker group does not exist yet: nothing to ask.
            return []
        except ConnectRequestError as exc:
            if exc.status in (401, 403):
                return [CheckFailure("auth", f"connector {spec.name!r}: {exc}")]
            if 400 <= exc.status < 500 and exc.status != 409:
                return [
                    CheckFailure(
                        WHOLE_RESOURCE,
                        f"connector {spec.name!r}: Connect at {spec.connect_url} cannot validate "
                        f"connector.class {connector_class!r}: {exc}",
                    )
                ]
            if exc.status >= 500 and "ConfigException" in exc.connect_message:
                # Not busy: the workers cannot resolve the config (a config provider's file is missing).
                return [CheckFailure(WHOLE_RESOURCE, unresolvable_config_text(spec.name, spec.connect_url, exc))]
            return []  # busy or rebalancing: create will find out for real
        return [
            CheckFailure(
                WHOLE_RESOURCE,
                f"connector {spec.name!r}: config key {p.key!r} is invalid: {'; '.join(p.messages)}",
            )
            for p in problems
        ]

    # -- diff ------------------------------------------------------------------------------

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> ConnectorDiff:
        return connector_diff(olds, news)

    # -- create / update -------------------------------------------------------------------

    def create(self, props: dict[str, Any]) -> CreateResult:
        spec = ConnectorInputs.from_props(props)
        with self._client(spec) as client:
            _refuse_unknown_keys(client, spec)
            try:
                existed = client.get_config(spec.name) is not None
                if existed:
                    # Adopt it: the declared config, then the declared state.
                    client.put_config(spec.name, spec.config)
                    client.set_state(spec.name, spec.desired_state)
                else:
                    # Born in the declared state: a connector declared paused never runs a task.
                    client.create(spec.name, spec.config, initial_state=spec.desired_state)
            except ConnectError as exc:
                raise ConnectorOperationFailed(
                    f"creating connector {spec.name!r} at {spec.connect_url} failed: {exc}\n"
                    "Nothing was created. Next step: fix the cause above and run `pulumi up` "
                    "again."
                ) from exc
            try:
                status = self._wait_running(client, spec)
            except ConnectError as exc:
                if existed:
                    cleanup = (
                        "The connector existed before this deployment, so it was left in place with the new config."
                    )
                else:
                    cleanup = self._roll_back(client, spec)
                raise ConnectorOperationFailed(_start_failure("create", spec, exc, cleanup)) from exc
        return CreateResult(spec.name, spec.outputs(status))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        spec = ConnectorInputs.from_props(news)
        with self._client(spec) as client:
            try:
                # An unchanged config is not PUT again: Connect would restart the connector for it.
                if not same_config(olds, news):
                    client.put_config(spec.name, spec.config)
                # Always: the declared state wins over a pause or stop done by hand. Except a stop
                # this provider host had accepted moments ago (an unplanned failover's, same `up`).
                if not (spec.desired_state == "STOPPED" and client.stop_accepted_within(spec.name, _STOP_FRESH_S)):
                    client.set_state(spec.name, spec.desired_state)
            except ConnectError as exc:
                raise ConnectorOperationFailed(
                    f"updating connector {spec.name!r} at {spec.connect_url} failed: {exc}\n"
                    "Its config is unchanged. Next step: fix the cause above and run "
                    "`pulumi up` again."
                ) from exc
            restart = False
            try:
                # Declared RUNNING with something FAILED: restart only what failed
                # (restart?includeTasks=true&onlyFailed=true); healthy tasks keep running.
                restart = spec.desired_state == "RUNNING" and bool(failed_instances(client.get_status(spec.name)))
                if restart:
                    status = client.restart_failed(
                        spec.name, spec.timeout_seconds, self.poll_s, min_tasks=spec.min_tasks
                    )
                else:
                    status = self._wait_running(client, spec)
            except ConnectError as exc:
                cleanup = (
                    "The connector keeps the new config; fix it or revert it in the stack "
                    "config, then run `pulumi up` again."
                )
                if isinstance(exc, ConnectorFailed) and restart:
                    cleanup = "Only what had FAILED was restarted, and it failed again; the connector keeps its config."
                raise ConnectorOperationFailed(_start_failure("update", spec, exc, cleanup)) from exc
        return UpdateResult(spec.outputs(status))

    # -- read / delete ---------------------------------------------------------------------

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        spec = ConnectorInputs.from_props(props, id_)
        urls = [spec.connect_url, *spec.other_urls]
        # (Over the network only: an injected transport is a test's whole Connect.)
        if self.transport_factory is None and len(unanswered(urls, spec.ca_pem, GROUP_PROBE_TIMEOUT_S)) == len(urls):
            # No worker of the group answers at all: say so now instead of spending the client's
            # retry budget (60 s) on every connector of a dead group.
            return ReadResult(id_, {**spec.outputs(None), "state": "UNREACHABLE"})
        try:
            with self._client(spec) as client:
                live = client.get_config(spec.name)
                status = client.get_status(spec.name) if live is not None else None
                if status is not None and _declared(spec) == "RUNNING":
                    status = self._past_unassigned(client, spec, status)
        except ConnectUnavailable:
            # An unreachable endpoint says nothing about the connector (its worker may just be
            # restarting); failing here would block the refresh that shows the dead worker.
            outs = {**spec.outputs(None), "state": "UNREACHABLE"}
            return ReadResult(id_, outs)
        except ConnectError as exc:
            raise ConnectorOperationFailed(
                f"reading connector {spec.name!r} at {spec.connect_url} failed: {exc}"
            ) from exc
        if live is None:
            # Empty id: the engine drops the resource, so refresh shows it deleted and the next
            # `pulumi up` creates it again.
            return ReadResult("", {})
        # Connect adds "name" to the config it stores; keep it only if the program set it.
        if "name" not in spec.config and live.get("name") == spec.name:
            live.pop("name")
        live_state = state_outputs(status)["state"]
        # A connector paused or stopped by hand shows as drift in desired_state, which the next
        # `up` puts back. So does a FAILED connector or task, or a task left UNASSIGNED past the
        # bound, spelled with its cause ("FAILED: task 0 FAILED on worker ...: <trace line>"):
        # the next `up` restarts only what failed.
        unhealthy = health_drift(status) if _declared(spec) == "RUNNING" or live_state == "FAILED" else None
        refreshed = replace(
            spec,
            config=live,
            desired_state=unhealthy or (live_state if live_state in DESIRED_STATES else spec.desired_state),
        )
        # Returning inputs too makes the CLI diff old inputs (live) against the program, so
        # the next preview names the drifted keys.
        return ReadResult(id_, refreshed.outputs(status), refreshed.inputs())

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        spec = ConnectorInputs.from_props(props, id_)
        try:
            with self._client(spec) as client:
                client.delete(spec.name, timeout_s=spec.timeout_seconds, poll_s=self.poll_s)
        except ConnectError as exc:
            raise ConnectorOperationFailed(
                f"deleting connector {spec.name!r} at {spec.connect_url} failed: {exc}\n"
                "Next step: start the worker group again and rerun the command; if the group "
                "is gone for good, drop the connector from the stack with "
                "`pulumi state delete <urn>`."
            ) from exc

    # -- internals -------------------------------------------------------------------------

    def _client(
        self,
        spec: ConnectorInputs,
        *,
        retry_budget_s: float | None = None,
        timeout: float = 10.0,
    ) -> ConnectClient:
        transport = self.transport_factory() if self.transport_factory is not None else None
        tls: dict[str, Any] = {"ca_pem": spec.ca_pem} if spec.ca_pem else {}
        return ConnectClient(
            spec.connect_url,
            auth=spec.credentials,
            transport=transport,
            timeout=timeout,
            retry_budget_s=self.retry_budget_s if retry_budget_s is None else retry_budget_s,
            sleep=self.sleep if self.sleep is not None else time.sleep,
            other_urls=spec.other_urls,
            **tls,
        )

    def _wait_running(self, client: ConnectClient, spec: ConnectorInputs) -> dict[str, Any]:
        """Wait for the declared state (RUNNING unless the stack asks for PAUSED or STOPPED);
        with wait_for_state false, the status as it is now."""
        if not spec.wait_for_state:
            return client.get_status(spec.name) or {}
        return client.wait_state(
            spec.name, spec.desired_state, spec.timeout_seconds, self.poll_s, min_tasks=spec.min_tasks
        )

    def _past_unassigned(self, client: ConnectClient, spec: ConnectorInputs, status: dict[str, Any]) -> dict[str, Any]:
        """The status once no task is UNASSIGNED, or the last one seen after UNASSIGNED_BOUND_S
        (marked with `unassigned_for_s`, so `health_drift` reports those tasks)."""
        waited = 0.0
        sleep = self.sleep if self.sleep is not None else time.sleep
        started = time.monotonic()
        while unassigned_tasks(status):
            waited = max(time.monotonic() - started, waited)
            if waited >= UNASSIGNED_BOUND_S:
                return {**status, "unassigned_for_s": UNASSIGNED_BOUND_S}
            pause = min(self.poll_s, UNASSIGNED_BOUND_S - waited)
            sleep(pause)
            waited += pause
            status = client.get_status(spec.name) or status
        return status

    def _roll_back(self, client: ConnectClient, spec: ConnectorInputs) -> str:
        try:
            client.delete(spec.name, timeout_s=spec.timeout_seconds, poll_s=self.poll_s)
        except ConnectError as exc:
            return (
                f"Deleting it again also failed ({exc}); delete it by hand with "
                f"`curl -X DELETE {client.url}{connector_path(spec.name)}`."
            )
        return "The connector was deleted again, so nothing is left half-deployed."


# -- pure helpers ----------------------------------------------------------------------------


def _start_failure(operation: str, spec: ConnectorInputs, exc: Exception, cleanup: str) -> str:
    """Error text for a connector that was accepted but did not reach RUNNING."""
    if isinstance(exc, ConnectorFailed):
        where = "the connector" if exc.task_id is None else f"task {exc.task_id}"
        cause = f"{where} FAILED on worker {exc.worker_id or '?'}:\n{trace_head(exc.trace)}"
        step = (
            "read the trace above (the full one is in that worker's log), fix the connector "
            "config or the cluster it cannot reach, then run `pulumi up` again"
        )
    elif isinstance(exc, ConnectTimeout):
        cause = str(exc)
        step = (
            "check the Connect worker logs and that both clusters are reachable from the "
            f"workers, or raise timeout_seconds (now {spec.timeout_seconds})"
        )
        if _runs_without_tasks(exc.last_status):
            step += (
                "; a connector RUNNING with no tasks has nothing to do - for "
                "MirrorSourceConnector that means no source topic matched `topics`"
            )
    else:
        cause = str(exc)
        step = "fix the cause above and run `pulumi up` again"
    return (
        f"{operation} of connector {spec.name!r} at {spec.connect_url} failed: {cause}\n{cleanup}\nNext step: {step}."
    )


def _declared(spec: ConnectorInputs) -> str:
    """The state the stack declared; a state a refresh recorded as drift ("FAILED: ...") was RUNNING."""
    return spec.desired_state if spec.desired_state in DESIRED_STATES else "RUNNING"


def health_drift(status: Mapping[str, Any] | None) -> str | None:
    """What a refresh reports for an unhealthy connector, or None: the first FAILED instance
    with the first line of its trace, else the tasks UNASSIGNED past the bound."""
    failed = failed_instances(status)
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        return f"FAILED: {failed[0].summary()}{more}"
    if isinstance(status, Mapping) and "unassigned_for_s" in status:
        ids = ", ".join(str(i) for i in unassigned_tasks(status))
        return (
            f"UNASSIGNED: task(s) {ids} ran on no worker for {status['unassigned_for_s']:g}s "
            "(a worker is down, or the group lost its leader)"
        )
    return None


def _runs_without_tasks(status: Any) -> bool:
    return (
        isinstance(status, Mapping)
        and (status.get("connector") or {}).get("state") == "RUNNING"
        and not status.get("tasks")
    )


def _refuse_unknown_keys(client: ConnectClient, spec: ConnectorInputs) -> None:
    """At first deploy (the preview could not reach the workers): the same validation as check,
    before anything is created. Only configs with keys outside the catalogue need it."""
    if not pass_through_keys(spec.config):
        return
    connector_class = spec.config["connector.class"]
    try:
        problems = validate_config(client, connector_class, {**spec.config, "name": spec.name})
    except ConnectError as exc:
        raise ConnectorOperationFailed(
            f"validating connector {spec.name!r} at {spec.connect_url} failed: {exc}\nNothing was created."
        ) from exc
    if problems:
        raise ConnectorOperationFailed(validation_failure_text(spec.name, problems))
