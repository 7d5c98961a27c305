"""The integration harness's failure evidence: the last WARN/ERROR lines of each process log."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.integration.harness import EVIDENCE_LINES, log_evidence


def test_evidence_keeps_the_last_warnings_and_errors_of_each_process(tmp_path: Path) -> None:
    worker = tmp_path / "connect" / "mm2" / "worker-0" / "logs"
    broker = tmp_path / "kafka" / "dr" / "broker-0" / "logs"
    worker.mkdir(parents=True)
    broker.mkdir(parents=True)
    lines = [f"[2026-11-25 17:00:{i:02d},000] INFO ok {i} (x)" for i in range(30)]
    lines += [f"[2026-11-25 17:01:{i:02d},000] WARN retry {i} (x)" for i in range(EVIDENCE_LINES + 5)]
    lines.append("[2026-11-25 17:02:00,000] ERROR WorkerSourceTask{id=a-0} Task threw (x)")
    (worker / "server.log").write_text("\n".join(lines))
    (broker / "server.log").write_text("[2026-11-25 17:00:00,000] INFO quiet (x)\n")

    text = log_evidence(SimpleNamespace(name="itest-x", run_dir=tmp_path))  # type: ignore[arg-type]

    assert "== stack itest-x ==" in text
    assert f"connect/mm2/worker-0/logs/server.log (last {EVIDENCE_LINES} of {EVIDENCE_LINES + 6} WARN/ERROR)" in text
    assert "Task threw" in text and "retry 5 " not in text and f"retry {EVIDENCE_LINES + 4}" in text
    assert "kafka/dr/broker-0/logs/server.log (last 20 of 0 WARN/ERROR)" in text
    assert "INFO" not in text
