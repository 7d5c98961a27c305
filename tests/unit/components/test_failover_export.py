"""The program's failover export (`components.program.failover_export`) is the contract's
`PairExport` encoding: what the Switchover resource holds comes back unchanged through the
contract's decoder, cuts included, so the two encodings cannot drift apart."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pmocks

from components.outputs.contract import PairExport, PartitionCut, StackExports, cut_document
from components.program import failover_export, program
from components.switchover import pair_export
from tests.unit.mocks import EchoMocks, mocked

from .program_harness import ROOT, namespace, stack_config, yaml_config

CUT = (PartitionCut("orders", 1, 40, 38), PartitionCut("orders", 0, 250, 250))
LAST = {"from": "primary", "to": "dr", "fencedSeconds": 8.6, "rpoRecords": 2, "groups": ["app"], "unplanned": False}


class SwitchedMocks(EchoMocks):
    """As the providers answer, the Switchover after a switchover: a stored cut and its report."""

    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        id_, outs = super().new_resource(args)
        if args.typ == "pulumi-python:dynamic/failover:Switchover":
            outs = {**outs, "cuts": {"primary->dr": cut_document(CUT)}, "last": LAST}
        return id_, outs


@pytest.fixture
def switched() -> Iterator[None]:
    with mocked(SwitchedMocks()):
        yield


def decoded(name: str, doc: Any) -> PairExport:
    """One pair's export as the operator commands read it (`StackExports.from_json`)."""
    outputs = {"clusters": {"primary": {"bootstrap": "127.0.0.1:19092"}}, "flows": {}, "failover": {name: doc}}
    return StackExports.from_json(outputs).pairs[name]


@pulumi.runtime.test
def test_the_programs_export_decodes_to_what_the_switchover_holds(switched: None, tmp_path: Path) -> Any:
    config = yaml_config(ROOT / "Pulumi.dev.yaml")
    mm2 = copy.deepcopy(namespace(config, "mm2"))
    mm2["flows"]["primary->dr"]["topicsExclude"] = ["scratch.*"]
    mm2["flows"]["dr->primary"] = {**copy.deepcopy(mm2["flows"]["primary->dr"]), "topicsExclude": ["tmp.*"]}
    mm2["failover"] = {"primary<->dr": {"active": "dr", "principals": ["app"]}}
    deployed = program(stack_config(config, tmp_path, mm2=mm2))

    def check(doc: dict[str, Any]) -> None:
        assert decoded("primary<->dr", doc) == PairExport(
            "primary<->dr",
            "dr",
            {"primary->dr": tuple(sorted(CUT))},
            principals=("User:app",),
            patterns={
                "primary->dr": (("orders", "payments"), ("scratch.*",)),
                "dr->primary": (("orders", "payments"), ("tmp.*",)),
            },
            last=LAST,
        )
        assert decoded("primary<->dr", doc).to_json() == doc

    return failover_export(deployed.switchovers["primary<->dr"]).apply(check)


def test_a_switchover_state_before_any_switchover_exports_no_cut() -> None:
    state = {
        "pair": {"name": "primary<->dr", "first": "primary", "second": "dr", "active": "primary", "unplanned": True},
        "patterns": None,
        "cuts": None,
        "last": None,
    }
    export = pair_export(state)
    assert export == PairExport("primary<->dr", "primary", {}, unplanned=True)
    assert decoded("primary<->dr", export.to_json()) == export
