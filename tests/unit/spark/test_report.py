"""Report.write: the JSON report and its HTML page side by side; the page never costs the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark import html_report
from tests.unit.spark.report_samples import full_report


def test_write_puts_the_html_beside_the_json_with_the_same_stem(tmp_path: Path) -> None:
    report = full_report()
    path = tmp_path / "reports" / "20260921T120000Z.json"
    written = report.write(path)
    assert written == tmp_path / "reports" / "20260921T120000Z.html"
    assert json.loads(path.read_text()) == json.loads(json.dumps(report.to_dict()))
    page = written.read_text()
    assert page.startswith("<!DOCTYPE html>") and "primary-&gt;dr" in page
    assert sorted(p.name for p in path.parent.iterdir()) == ["20260921T120000Z.html", "20260921T120000Z.json"]


def test_a_failing_page_leaves_the_json_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_report: Any, path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("no backend")

    monkeypatch.setattr(html_report, "write_html", broken)
    path = tmp_path / "r.json"
    assert full_report().write(path) is None
    assert json.loads(path.read_text())["passed"] is False
    assert not (tmp_path / "r.html").exists()
    err = capsys.readouterr().err
    assert "HTML report not written (RuntimeError: no backend)" in err and str(path) in err
