"""The explorer as a web page: Voila serves apps/explorer.ipynb on 127.0.0.1, headless Chromium opens it.

Run by ``make test-browser`` only (``pytest tests`` does not recurse here: see ``norecursedirs``).
It needs the ``browser`` extra (voila, playwright) and Chromium from the OS packages; Playwright
drives that system browser through ``executable_path`` (no browser download).  The browser is
given ``DPHIST_CHROMIUM`` or the first of chromium / chromium-browser on PATH.

The test drags the epsilon slider's handle with the mouse and checks that the histogram image
and the ledger change, and that the ledger charges the epsilon the slider now reads.  A
screenshot goes to ``test-artifacts/explorer.png`` and is copied to ``docs/figures/explorer.png``.
Then it opens the compare tab, runs "compare at this eps" and waits for its figure and table
(``test-artifacts/explorer-compare.png``).
Kills: a page whose widgets are not live (no kernel behind them), an update path that never reaches
the browser (e.g. views set on a thread that sends nothing), a ledger not following the slider.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
APP = ROOT / "apps" / "explorer.ipynb"
SERVER_START_SECONDS = 90
PAGE_SECONDS = 120


def _chromium() -> str:
    path = os.environ.get("DPHIST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no Chromium found: `make test-browser` installs the Debian package `chromium`, "
                    "or set DPHIST_CHROMIUM to the browser's path")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """Voila on 127.0.0.1 (a free port), started and stopped by this fixture only."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = _free_port()
    log = open(ARTIFACTS / "voila.log", "w")
    voila = [sys.executable, "-m", "voila", str(APP), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
             "--show_tracebacks=True"]
    proc = subprocess.Popen(voila, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + SERVER_START_SECONDS
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"voila exited with {proc.returncode}; see {ARTIFACTS / 'voila.log'}")
            try:   # a TCP connection is enough: a GET of the page would start a kernel
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"voila did not answer on {url} within {SERVER_START_SECONDS} s")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _ledger_epsilon(text: str) -> tuple[float, float]:
    """(eps, charged) as the ledger view states them."""
    m = re.search(r"share of eps = ([0-9.eE+-]+); charged ([0-9.eE+-]+)", text)
    assert m, f"ledger text not understood: {text[:200]!r}"
    return float(m.group(1)), float(m.group(2))


def test_explorer_page_follows_the_epsilon_slider(server):
    from playwright.sync_api import sync_playwright
    t0 = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1200})
            page.goto(server, timeout=PAGE_SECONDS * 1000)
            page.wait_for_selector("img.dphist-histogram[src^='blob:']", timeout=PAGE_SECONDS * 1000)
            page.wait_for_function("document.querySelector('.dphist-ledger-view').innerText.includes('charged')",
                                   timeout=PAGE_SECONDS * 1000)
            t_loaded = time.monotonic() - t0
            src_before = page.get_attribute("img.dphist-histogram", "src")
            ledger_before = page.inner_text(".dphist-ledger-view")
            eps_before, charged_before = _ledger_epsilon(ledger_before)
            assert eps_before == pytest.approx(0.1) and charged_before == pytest.approx(0.1)

            # drag the handle to 85% of the track: log10(eps) = -3 + 0.85 * 4, eps ~ 2.5
            handle = page.locator(".dphist-epsilon .noUi-handle").bounding_box()
            track = page.locator(".dphist-epsilon .noUi-base").bounding_box()
            y = handle["y"] + handle["height"] / 2
            page.mouse.move(handle["x"] + handle["width"] / 2, y)
            page.mouse.down()
            page.mouse.move(track["x"] + 0.85 * track["width"], y, steps=8)
            page.mouse.up()
            t_moved = time.monotonic()
            page.wait_for_function(
                "([src, ledger]) => document.querySelector('img.dphist-histogram').src !== src"
                " && document.querySelector('.dphist-ledger-view').innerText !== ledger",
                arg=[src_before, ledger_before], timeout=30_000)
            readout = float(page.inner_text(".dphist-epsilon .widget-readout"))
            assert readout > 1.0, f"the slider did not move far enough: reads {readout}"
            # the views may still be on an intermediate value of the drag: wait for the final one
            page.wait_for_function(
                "eps => { const m = document.querySelector('.dphist-ledger-view').innerText"
                ".match(/share of eps = ([0-9.eE+-]+)/); return m && Math.abs(parseFloat(m[1]) / eps - 1) < 0.01 }",
                arg=readout, timeout=30_000)
            t_updated = time.monotonic() - t_moved
            eps_after, charged_after = _ledger_epsilon(page.inner_text(".dphist-ledger-view"))
            assert charged_after == pytest.approx(eps_after)
            assert eps_after == pytest.approx(readout, rel=0.01)
            assert page.inner_text(".dphist-message-view").strip() == ""
            assert page.get_attribute("img.dphist-histogram", "src") != src_before
            status = page.inner_text(".dphist-status-view")
            assert "research mode" in status and "never be published" in status
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)

            # the compare tab: the chosen presets at the slider's eps, drawn by the comparison thread
            page.get_by_text("compare", exact=True).click()
            page.get_by_role("button", name="compare at this eps").click()
            page.wait_for_selector("img.dphist-comparison[src^='blob:']", timeout=60_000)
            page.wait_for_function("document.querySelector('.dphist-comparison-status').innerText.includes('preset')",
                                   timeout=60_000)
            table = page.inner_text(".dphist-comparison-status")
            assert "identity" in table and "uniform" in table
            page.screenshot(path=str(ARTIFACTS / "explorer-compare.png"), full_page=True)
        finally:
            browser.close()
    (ROOT / "docs" / "figures").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ARTIFACTS / "explorer.png", ROOT / "docs" / "figures" / "explorer.png")
    print(f"page ready {t_loaded:.1f} s after opening; views updated {t_updated:.2f} s after the drag; "
          f"browser part {time.monotonic() - t0:.1f} s")
