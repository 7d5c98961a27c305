"""Which side of a cluster pair is active, kept by `pulumi up` (type
``pulumi-python:dynamic/failover:Switchover``, one per `mm2:failover.<a><->b>`).

- create: the passive side's topics refuse the application principals' writes (the fence);
- diff: a changed `active` is a planned switchover; the preview reads both clusters and shows
  the plan (fence, drain, groups and where they resume, divergence) as blast-radius lines, and
  fails when it cannot run (a group pattern that matches nothing, undecided divergence);
- update: runs it (components/ops/switchover.py) and keeps, per flow it stopped, the cut it
  stopped at: the way back reads it (the divergence, the groups' positions on their own topics);
  with `active` unchanged it only re-applies the fence to the declared principals;
- delete: lifts the fence on both sides.

The flows' Connector resources depend on this one, so the flow that stops is stopped here, after
its drain, and the flow that starts starts after the groups moved. The inputs carry the
clusters' admin settings and Connect's credentials (the stack outputs' shape): a secret.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.outputs.contract import PairExport, cut_from_document, pattern_document, patterns_from_document
from components.rpc_values import Refused, has_unknown, plain
from components.topology.model import Divergence, Pair, Topology

LOG = logging.getLogger("dynamic_provider.switchover")
_PAIR_KEYS = ("active", "principals", "groups", "drainTimeoutS", "divergence", "unplanned")


class SwitchoverDiff(DiffResult):
    """DiffResult plus the plan's lines as impacts (the project's dynamic-provider host shows them)."""

    def __init__(self, *, changes: bool, impacts: list[tuple[str, str]]) -> None:
        super().__init__(changes=changes, replaces=[], stables=[], delete_before_replace=False)
        self.impacts = impacts


def _request(props: Mapping[str, Any], old: str, new: str) -> Any:
    from components.ops.switchover_plan import Request

    pair = plain(props["pair"])
    policy = pair.get("divergence")
    return Request(
        pair=str(pair["name"]),
        old=old,
        new=new,
        principals=tuple(pair["principals"]),
        groups=tuple(pair.get("groups") or ()),
        drain_timeout_s=int(pair["drainTimeoutS"]),
        policy=Divergence(policy) if policy else None,
        patterns=patterns_from_document(plain(props["patterns"])),
        cuts={name: cut_from_document(doc) for name, doc in (plain(props.get("cuts")) or {}).items()},
        unplanned=bool(pair.get("unplanned")),
    )


def _exports(props: Mapping[str, Any]) -> Any:
    from components.outputs.contract import StackExports

    return StackExports.from_json(plain(props["exports"]))


def _sides(props: Mapping[str, Any]) -> tuple[str, str]:
    """(active, passive) as declared."""
    pair = plain(props["pair"])
    active = str(pair["active"])
    return active, str(pair["second"] if active == pair["first"] else pair["first"])


class SwitchoverProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        from components.ops.switchover import fence_side

        active, passive = _sides(props)
        topics = fence_side(_exports(props), _request(props, passive, active), passive, on=True)
        LOG.info(
            f"failover {plain(props['pair'])['name']}: {active} is active; writes to {', '.join(topics)} on "
            f"{passive} are fenced"
        )
        outs = {**props, "cuts": {}, "last": None, "fenceMissing": []}
        return CreateResult(id_=str(plain(props["pair"])["name"]), outs=outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old_pair, new_pair = plain(olds.get("pair")) or {}, plain(news.get("pair")) or {}
        changed = [k for k in _PAIR_KEYS if old_pair.get(k) != new_pair.get(k)]
        if "active" not in changed:
            # New credentials in the exports are kept too: delete lifts the fence with them.
            moved = bool(changed) or plain(olds.get("exports")) != plain(news.get("exports"))
            lost = list(plain(olds.get("fenceMissing")) or [])
            impacts = []
            if lost:
                impacts.append(
                    (
                        "warning",
                        f"failover {new_pair.get('name')}: the passive side's fence lacks "
                        f"{', '.join(lost)} (refresh found it gone): up puts it back",
                    )
                )
            return SwitchoverDiff(changes=moved or bool(lost), impacts=impacts)
        if has_unknown(news.get("exports")):
            return SwitchoverDiff(changes=True, impacts=[("warning", "switchover planned: its plan shows at `up`")])
        from components.ops.switchover import preview, preview_unplanned
        from components.ops.switchover_plan import plan_lines

        state = {**news, "cuts": olds.get("cuts")}
        request = _request(state, str(old_pair["active"]), str(new_pair["active"]))
        if request.unplanned:
            return SwitchoverDiff(
                changes=True, impacts=[("warning", "\n".join(preview_unplanned(_exports(state), request)))]
            )
        plan = preview(_exports(state), request)
        if plan.problems:
            raise Refused("\n".join(plan_lines(plan)))
        return SwitchoverDiff(changes=True, impacts=[("warning", "\n".join(plan_lines(plan)))])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from components.ops.switchover import fence_side, run, run_unplanned
        from components.outputs.contract import cut_document

        old_active, _ = _sides(olds)
        active, passive = _sides(news)
        cuts = dict(plain(olds.get("cuts")) or {})
        last = plain(olds.get("last"))
        exports = _exports(news)
        if old_active == active:
            if not plain(news["pair"]).get("unplanned"):
                # The fence holds exactly the declared principals: what is missing is added (drift,
                # a new principal, the lost side back), then a principal no longer declared is let go;
                # the others' bindings stay in place throughout.
                declared = _request(news, active, passive)
                fence_side(exports, declared, passive, on=True)
                before = _request(olds, active, passive)
                gone = tuple(p for p in before.principals if p not in declared.principals)
                if gone and not plain(olds["pair"]).get("unplanned"):
                    fence_side(_exports(olds), replace(before, principals=gone), passive, on=False)
            return UpdateResult(outs={**news, "cuts": cuts, "last": last, "fenceMissing": []})
        request = _request({**news, "cuts": cuts}, old_active, active)
        report = (run_unplanned if request.unplanned else run)(exports, request, LOG.info)
        cuts[request.stops] = cut_document(report.cut)
        last = {
            "from": request.old,
            "to": request.new,
            "fencedSeconds": round(report.fenced_s, 3),
            **{f"{part}Seconds": round(s, 3) for part, s in report.seconds.items()},
            "rpoRecords": report.rpo_records,
            "groups": list(report.moved),
            "divergentRecords": report.divergent,
            "unplanned": request.unplanned,
        }
        return UpdateResult(outs={**news, "cuts": cuts, "last": last, "fenceMissing": []})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh: the passive side's fence as the cluster has it (a binding gone is drift)."""
        from components.ops.switchover import missing_fence

        active, passive = _sides(props)
        if plain(props["pair"]).get("unplanned"):
            return ReadResult(id_=id_, outs=props)  # the lost side cannot be asked
        try:
            lost = missing_fence(_exports(props), _request(props, passive, active), passive)
        except Exception as exc:  # a refresh must not fail on a cluster that does not answer
            LOG.warning(f"failover {plain(props['pair'])['name']}: could not read the fence on {passive}: {exc}")
            return ReadResult(id_=id_, outs=props)
        return ReadResult(id_=id_, outs={**props, "fenceMissing": lost})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from components.ops.switchover import fence_side

        active, passive = _sides(props)
        try:
            fence_side(_exports(props), _request(props, active, passive), passive, on=False)
        except Exception as exc:  # the clusters go with the stack: nothing left to lift
            LOG.warning(f"failover {plain(props['pair'])['name']}: lifting the fence on {passive} failed: {exc}")


def pair_inputs(pair: Pair, topology: Topology) -> dict[str, Any]:
    """The pair's declared fields and its flows' topic patterns (no secret)."""
    patterns = {
        name: pattern_document(f.topics, f.topics_exclude)
        for name in (pair.active_flow, pair.standby_flow)
        for f in [topology.flow(name)]
    }
    return {
        "pair": {
            "name": pair.name,
            "first": pair.first,
            "second": pair.second,
            "active": pair.active,
            "principals": list(pair.principals),
            "groups": list(pair.groups),
            "drainTimeoutS": pair.drain_timeout_s,
            "divergence": pair.divergence.value if pair.divergence else None,
            "unplanned": pair.unplanned,
        },
        "patterns": patterns,
    }


def pair_export(state: Mapping[str, Any]) -> PairExport:
    """The pair's failover export from the resource's outputs (pair, cuts, patterns, last): the
    cuts and patterns decoded with the contract's decoders, so `to_json` re-encodes them as stored."""
    pair = state["pair"]
    last = state.get("last")
    return PairExport(
        name=str(pair["name"]),
        active=str(pair["active"]),
        cuts={str(flow): cut_from_document(doc) for flow, doc in (state.get("cuts") or {}).items()},
        principals=tuple(str(p) for p in pair.get("principals") or ()),
        patterns=patterns_from_document(state.get("patterns")),
        unplanned=bool(pair.get("unplanned")),
        last=dict(last) if last is not None else None,
    )


class Switchover(Resource, module="failover", name="Switchover"):
    """The active side of one cluster pair; `last` reports the latest switchover and `cuts` where
    each flow it stopped stopped."""

    pair: pulumi.Output[dict[str, Any]]
    patterns: pulumi.Output[dict[str, Any]]
    cuts: pulumi.Output[dict[str, Any]]
    last: pulumi.Output[dict[str, Any] | None]

    def __init__(
        self,
        name: str,
        pair: Pair,
        topology: Topology,
        exports: pulumi.Input[dict[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {**pair_inputs(pair, topology), "exports": pulumi.Output.secret(exports), "cuts": None, "last": None}
        super().__init__(SwitchoverProvider(), name, props, opts)
