"""components/ops/rehearsal.py: `bin/deploy-dev --link` turns the dev stack into dev-wan, dr
behind the declared link, and refuses a link that is not one with the flag and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.ops.rehearsal import RehearsalError, main, parse_link, rehearsal_config, write
from components.topology import parse_topology, worker_metrics_urls
from components.topology.emulation import with_network

ROOT = Path(__file__).resolve().parents[3]


def test_a_link_is_read_as_the_mm2_links_entry_it_declares() -> None:
    assert parse_link("50ms,200Mbit") == {"rtt": "50ms", "bandwidth": "200Mbit"}
    assert parse_link("100ms, 50Mbit, 0.1%") == {"rtt": "100ms", "bandwidth": "50Mbit", "loss": "0.1%"}


@pytest.mark.parametrize(
    ("text", "named"),
    [("50ms", "two or three values"), ("50,200Mbit", "rtt '50'"), ("50ms,fast", "bandwidth 'fast'"),
     ("50ms,200Mbit,100%", "loss '100%'"), ("0ms,200Mbit", "rtt '0ms'")],
)  # fmt: skip
def test_what_is_not_a_link_is_refused_with_the_fix(text: str, named: str) -> None:
    with pytest.raises(RehearsalError) as raised:
        parse_link(text)
    assert named in str(raised.value) and "Fix: give --link RTT,BANDWIDTH[,LOSS]" in str(raised.value)


def test_the_dev_stack_behind_a_link_is_emulated_and_keeps_no_fixed_loopback_port() -> None:
    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = rehearsal_config(dev, parse_link("50ms,200Mbit"), salt=None)
    assert "encryptionsalt" not in config  # dev's salt is not dev-wan's
    mm2 = {key.split(":", 1)[1]: value for key, value in config["config"].items() if key.startswith("mm2:")}
    topology = with_network(parse_topology(mm2), "dev-wan", "/projects/mm2/.mm2/run/dev-wan")
    assert topology.network is not None
    assert [dc.name for dc in topology.network.datacenters] == ["dc1", "dc2"]
    assert topology.clusters["primary"].host != topology.clusters["dr"].host
    assert all(group.lag_port is None for group in topology.worker_groups.values())
    # bin/status shows the flow's copy rate against the link from the workers' metrics
    assert (
        worker_metrics_urls(topology.worker_groups["mm2"])[0] == f"http://{topology.clusters['dr'].host}:19410/metrics"
    )


def test_dev_wan_keeps_its_own_salt_when_written_again(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    first = write("50ms,200Mbit", tmp_path)
    with_salt = {**yaml.safe_load(first.read_text()), "encryptionsalt": "v1:own:salt"}
    first.write_text(yaml.safe_dump(with_salt))
    again = yaml.safe_load(write("80ms,100Mbit", tmp_path).read_text())
    assert again["encryptionsalt"] == "v1:own:salt"
    assert again["config"]["mm2:links"] == {"dc1<->dc2": {"rtt": "80ms", "bandwidth": "100Mbit"}}


def test_the_command_exits_2_with_the_message_on_a_bad_link(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--link", "fast"]) == 2
    assert "deploy-dev: --link 'fast'" in capsys.readouterr().err
