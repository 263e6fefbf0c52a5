"""The explorer as a web page: Voila serves apps/explorer.ipynb on 127.0.0.1, headless Chromium opens it.

Run by ``make test-browser`` only (``pytest tests`` does not recurse here: see ``norecursedirs``).
It needs the ``browser`` extra (voila, playwright) and Chromium from the OS packages; Playwright
drives that system browser through ``executable_path`` (no browser download).  The browser is
given ``DPHIST_CHROMIUM`` or the first of chromium / chromium-browser on PATH.

The test drags the epsilon slider's handle with the mouse and checks that the histogram image
and the ledger change, and that the ledger charges the epsilon the slider now reads.  A
screenshot goes to ``test-artifacts/explorer.png`` and is copied to ``docs/figures/explorer.png``.
Then it drives the other controls as a user does: picks DAWA in the algorithm list, moves its ``ratio``
control and a share box (the other shares follow, sum 1), uploads a counts file, downloads the ledger as
JSON, and in the compare tab runs "compare at this eps" with 3 trials and waits for its figure and the
table with intervals (``test-artifacts/explorer-compare.png``).  Last, it closes the page and checks that
its kernel process ends (memory before and after printed), and that the kernel of a page that vanished
without closing is culled (Voila runs in ``apps/``, so it reads ``apps/voila.json``; the test shortens
the idle timeout on the command line).
Kills: a page whose widgets are not live (no kernel behind them), an update path that never reaches
the browser (e.g. views set on a thread that sends nothing), a ledger not following the slider,
parameter, share, upload, export or trials controls that do nothing in the page, a kernel kept alive
after its page is gone.
"""
from __future__ import annotations

import json
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
CULL_IDLE_SECONDS = 10        # the test's idle timeout (apps/voila.json: 600 s)


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


class Server(str):
    """The page's URL, and the Voila process's id (its kernels are its children)."""

    def __new__(cls, url: str, pid: int):
        obj = super().__new__(cls, url)
        obj.pid = pid
        return obj


@pytest.fixture(scope="module")
def server():
    """Voila on 127.0.0.1 (a free port), started and stopped by this fixture only."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = _free_port()
    log = open(ARTIFACTS / "voila.log", "w")
    voila = [sys.executable, "-m", "voila", APP.name, "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
             "--show_tracebacks=True", f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_SECONDS}",
             "--MappingKernelManager.cull_interval=2"]
    proc = subprocess.Popen(voila, cwd=APP.parent, stdout=log, stderr=subprocess.STDOUT)
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
        yield Server(url, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _kernels(parent: int) -> dict[int, int]:
    """{pid: resident memory in kB} of the kernel processes started by the Voila process ``parent``."""
    out = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields["PPid"]) == parent and b"ipykernel" in cmdline:
            out[int(status.parent.name)] = int(fields.get("VmRSS", "0 kB").split()[0])
    return out


def _wait_kernels(parent: int, count: int, seconds: float) -> dict[int, int]:
    deadline = time.monotonic() + seconds
    while True:
        found = _kernels(parent)
        if len(found) == count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _drag(page, css: str, fraction: float) -> None:
    """Drag the handle of the slider ``css`` to ``fraction`` of its track, with the mouse."""
    handle = page.locator(f"{css} .noUi-handle").bounding_box()
    track = page.locator(f"{css} .noUi-base").bounding_box()
    y = handle["y"] + handle["height"] / 2
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(track["x"] + fraction * track["width"], y, steps=8)
    page.mouse.up()


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
            _drag(page, ".dphist-epsilon", 0.85)
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

            assert len(_wait_kernels(server.pid, 1, 10)) == 1          # one kernel for this page view

            # DAWA from the algorithm list: its declared parameters appear as controls
            ledger_before = page.inner_text(".dphist-ledger-view")
            page.select_option(".dphist-algorithm select", "DAWA")
            page.wait_for_selector(".dphist-param-preset-ratio", timeout=30_000)
            page.wait_for_function("l => document.querySelector('.dphist-ledger-view').innerText !== l",
                                   arg=ledger_before, timeout=60_000)
            assert page.locator(".dphist-param-partitioner-variant select").count() == 1
            # the ratio slider, dragged to 60% of its track: gamma_p follows it and the ledger charges it
            _drag(page, ".dphist-param-preset-ratio", 0.6)
            ratio = float(page.inner_text(".dphist-param-preset-ratio .widget-readout"))
            assert 0.4 < ratio < 0.8, f"the ratio slider did not move: reads {ratio}"
            page.wait_for_function("r => Math.abs(parseFloat(document.querySelector('.dphist-gamma-p input')"
                                   ".value) - r) < 1e-9", arg=ratio, timeout=30_000)
            # the ledger's per-stage totals (initializer, partitioner, finalizer): the partitioner spends ratio * eps
            page.wait_for_function(
                "e => { const c = document.querySelectorAll('.dphist-ledger-view .dphist-ledger-eps');"
                " return c.length === 3 && Math.abs(parseFloat(c[1].innerText) / e - 1) < 2e-3 }",
                arg=ratio * eps_after, timeout=60_000)
            # a share typed into its box: the others follow and the sum stays 1
            box = page.locator(".dphist-gamma-p input")
            box.fill("0.5")
            box.press("Enter")
            page.wait_for_function("() => Math.abs(parseFloat(document.querySelector('.dphist-gamma-f input')"
                                   ".value) - 0.5) < 1e-9", timeout=30_000)
            shares = [float(page.input_value(f".dphist-gamma-{s} input")) for s in ("in", "p", "f")]
            assert sum(shares) == pytest.approx(1.0)
            page.wait_for_function("() => document.querySelector('.dphist-message-view').innerText.trim() === ''",
                                   timeout=30_000)

            # an uploaded counts file becomes the dataset
            counts = "\n".join(str(v) for v in [5] * 40 + [80] * 40 + [20] * 48) + "\n"
            with page.expect_file_chooser(timeout=30_000) as chooser:
                page.click(".dphist-upload")
            chooser.value.set_files(files=[{"name": "page-upload.csv", "mimeType": "text/csv",
                                            "buffer": counts.encode()}])
            page.wait_for_function("() => document.querySelector('.dphist-dataset select').value"
                                   " === 'upload:page-upload.csv'", timeout=30_000)
            page.wait_for_function("() => document.querySelector('.dphist-status-view').innerText.includes('DAWA')",
                                   timeout=60_000)

            # the ledger as JSON, through the download link
            page.select_option(".dphist-export-format select", "ledger (json)")
            page.get_by_role("button", name="prepare download").click()
            page.wait_for_selector("a.dphist-download-link", timeout=30_000)
            with page.expect_download(timeout=30_000) as info:
                page.click("a.dphist-download-link")
            path = info.value.path()
            ledger = json.loads(Path(path).read_text())
            assert ledger["mode"] == "research" and ledger["algorithm"]["name"] == "DAWA"
            assert sum(e["epsilon"] for e in ledger["ledger"]) == pytest.approx(ledger["epsilon"])
            page.screenshot(path=str(ARTIFACTS / "explorer-controls.png"), full_page=True)

            # the compare tab: the chosen presets at the slider's eps over 3 trials, with intervals
            page.get_by_text("compare", exact=True).click()
            trials = page.locator(".dphist-trials input")
            trials.fill("3")
            trials.press("Enter")
            page.get_by_role("button", name="compare at this eps").click()
            page.wait_for_selector("img.dphist-comparison[src^='blob:']", timeout=60_000)
            page.wait_for_function("document.querySelector('.dphist-comparison-status').innerText.includes('preset')",
                                   timeout=60_000)
            table = page.inner_text(".dphist-comparison-status")
            assert "identity" in table and "uniform" in table
            assert "3 trial(s)" in table and "\u00b1" in table
            page.screenshot(path=str(ARTIFACTS / "explorer-compare.png"), full_page=True)

            # closing the page ends its kernel (Voila's beforeunload beacon)
            before = _kernels(server.pid)
            page.close(run_before_unload=True)
            after = _wait_kernels(server.pid, 0, 30)
            assert not after, f"the page's kernel is still running after the page closed: {after}"
            print(f"kernel of the closed page: {sum(before.values()) / 1024:.0f} MB resident before, "
                  f"{sum(after.values()) / 1024:.0f} MB after")

        finally:
            browser.close()
    (ROOT / "docs" / "figures").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ARTIFACTS / "explorer.png", ROOT / "docs" / "figures" / "explorer.png")
    print(f"page ready {t_loaded:.1f} s after opening; views updated {t_updated:.2f} s after the drag; "
          f"browser part {time.monotonic() - t0:.1f} s")


def test_kernel_of_a_vanished_page_is_culled(server):
    """A browser killed with its page open sends no beforeunload beacon: Voila culls the idle kernel.

    Kills: a Voila started without the culling configuration (the kernel, ~490 MB, would live until
    the server stops).  The browser here is a plain headless Chromium process, killed with SIGKILL.
    """
    assert not _kernels(server.pid), "a kernel of an earlier page is still running"
    profile = ARTIFACTS / "chromium-profile"
    shutil.rmtree(profile, ignore_errors=True)
    chromium = subprocess.Popen([_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                                 f"--user-data-dir={profile}", str(server)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = _wait_kernels(server.pid, 1, PAGE_SECONDS)
        assert len(started) == 1, "the page did not start its kernel"
        time.sleep(15)                          # the page connects and renders the explorer
    finally:
        chromium.kill()
        chromium.wait(timeout=20)
    t_killed = time.monotonic()
    left = _wait_kernels(server.pid, 0, CULL_IDLE_SECONDS + 60)
    assert not left, f"the kernel of a vanished page was not culled: {left}"
    print(f"kernel of a killed browser's page culled {time.monotonic() - t_killed:.0f} s after the kill "
          f"(idle timeout {CULL_IDLE_SECONDS} s, checked every 2 s)")
