"""The HTML validation report in a real browser: Debian's headless Chromium, driven over the
DevTools protocol (a websocket on a free loopback port).

A report with every plot is written by `Report.write` (the stage's own code path) and opened from
disk: no script error and no failed load may be logged, every plot image must have decoded to a
non-blank picture, the page's one script must work (the "only partitions with findings" switch
hides exactly the clean rows), and a screenshot is taken and must not be blank. A deliberately
broken page proves each of these checks can fail. Chromium is always killed afterwards.
"""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import free_port_block, wait_until
from tests.tools import required_tool
from tests.unit.spark.report_samples import FAULTY, PARTITIONS, full_report

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking")


class DevTools:
    """One page target of a running Chromium: commands in, events collected on the side."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        # Chromium refuses websocket upgrades carrying an Origin it was not told to allow.
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:  # bounded by the socket timeout
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise AssertionError(f"DevTools {method} failed: {msg['error']}")
                return dict(msg.get("result") or {})
            self.events.append(msg)

    def wait_event(self, method: str) -> dict[str, Any]:
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv()))  # bounded by the socket timeout

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"evaluating in the page failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Uncaught exceptions, console errors and failed loads seen so far."""
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append("exception: " + str(p.get("exceptionDetails", {}).get("exception", {}).get("description")))
            elif method == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console.error: " + " ".join(str(a.get("value")) for a in p.get("args", [])))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + str(p["entry"].get("text")))
        return out

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A headless Chromium with DevTools on a free loopback port; its /json endpoint URL."""
    exe = required_tool("chromium", "chromium")
    port = free_port_block(1)
    profile = tmp_path_factory.mktemp("chromium-profile")
    log = (profile.parent / "chromium.log").open("wb")
    child = subprocess.Popen(
        [exe, *CHROMIUM_FLAGS, f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
         f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert child.poll() is None, f"chromium exited ({child.returncode}), see {log.name}"
            try:
                return httpx.get(f"{base}/json/version", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 60, f"chromium's DevTools endpoint on port {port}", poll_s=0.2)
        yield base
    finally:
        # Chromium forks a zygote and renderers into its session: end the whole group.
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # renderers that outlived the browser process
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def _open(base: str, page: Path) -> DevTools:
    target = httpx.put(f"{base}/json/new?about:blank", timeout=10).json()
    tools = DevTools(target["webSocketDebuggerUrl"])
    for domain in ("Page", "Runtime", "Log"):
        tools.send(f"{domain}.enable")
    tools.send("Page.navigate", url=page.as_uri())
    tools.wait_event("Page.loadEventFired")
    return tools


# Each plot drawn onto a canvas: its size and how many distinct colours it has (1 = blank).
_IMAGES_JS = """
Array.from(document.images).map(function (img) {
  var c = document.createElement("canvas"); c.width = img.naturalWidth; c.height = img.naturalHeight;
  var colours = new Set();
  if (img.complete && img.naturalWidth > 0) {
    var ctx = c.getContext("2d"); ctx.drawImage(img, 0, 0);
    var px = ctx.getImageData(0, 0, c.width, c.height).data;
    for (var i = 0; i < px.length; i += 4 * 7) colours.add(px[i] << 16 | px[i + 1] << 8 | px[i + 2]);
  }
  return {alt: img.alt, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
          colours: colours.size};
})
"""


def _screenshot_colours(tools: DevTools, out: Path) -> int:
    from PIL import Image

    png = base64.b64decode(tools.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
    out.write_bytes(png)
    with Image.open(io.BytesIO(png)) as img:
        return len(img.convert("RGB").getcolors(maxcolors=1 << 20) or [])


def test_report_plots_render_in_chromium(browser: str, tmp_path: Path) -> None:
    report = tmp_path / "20260921T120000Z.json"
    full_report().write(report)
    tools = _open(browser, report.with_suffix(".html"))
    try:
        images = tools.evaluate(_IMAGES_JS)
        assert len(images) == 3, images  # the full flow's three plots; the bare flow has none
        for img in images:
            assert img["complete"] and img["width"] > 300 and img["height"] > 150, img
            assert img["colours"] > 8, f"plot {img['alt']!r} is blank: {img}"
        assert tools.evaluate("document.querySelectorAll('p.no-data').length") >= 4  # the bare flow's notes

        visible = "Array.from(document.querySelectorAll('table.partitions tr')).filter(r => r.offsetParent).length"
        before = tools.evaluate(visible)
        tools.evaluate("document.querySelector('input.only-findings').click()")
        after = tools.evaluate(visible)
        # Two partition tables (orders: 8 rows, payments: 1) and their header rows; one finding stays.
        assert (before, after) == (PARTITIONS + 1 + 2, 1 + 2), (before, after)
        assert tools.evaluate("document.querySelector('tr.finding td').textContent") == str(FAULTY)

        shot = tmp_path / "report.png"
        assert _screenshot_colours(tools, shot) > 50, f"blank screenshot {shot}"
        assert tools.errors() == []
    finally:
        tools.close()


def test_the_checks_see_a_broken_page(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img alt="truncated" src="data:image/png;base64,iVBORw0KGgo=">'
        '<img alt="white" src="data:image/svg+xml,'
        "%3Csvg xmlns='http://www.w3.org/2000/svg' width='400' height='200'%3E"
        "%3Crect width='400' height='200' fill='white'/%3E%3C/svg%3E\">"
        "<script>drawPlots();</script></body></html>"
    )
    tools = _open(browser, page)
    try:
        broken, white = tools.evaluate(_IMAGES_JS)
        assert broken["width"] == 0  # a picture that did not decode
        assert white["width"] == 400 and white["colours"] == 1  # a picture with nothing on it
        errors = tools.errors()
        assert any("drawPlots is not defined" in e for e in errors), errors
    finally:
        tools.close()
