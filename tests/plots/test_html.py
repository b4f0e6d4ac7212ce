"""Issue 28, item 2 (part): report.html, one self-contained file beside report.md, opened in a real
browser (headless Chromium from Debian's packages): screenshot taken, no console message, every
figure decoded.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
import pytest
from plots.cli import plot_command
from tests.plots.test_compare import medium_run


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


REQUIRED = os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1"   # .ci/run installs chromium: fail, not skip


# set on load by the probe the test adds to a copy of the page: how many images did not decode
PROBE = ('<script>window.addEventListener("load", () => { document.body.dataset.broken = '
         '[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length; });</script>')


def browser(tmp: Path, page: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``page`` with its console logged to stderr (its own profile under ``tmp``)."""
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("chromium is not installed (.ci/run installs it: apt-get install chromium)")
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium; .ci/run does)")
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
                           *args, page.as_uri()], capture_output=True, text=True, timeout=120)


def console(stderr: str) -> list[str]:
    """The page's console messages in Chromium's log (``INFO:CONSOLE:<line>] "text", source: ...``)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def plotted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run on the medium (late frames: the report has a warning) with its report written."""
    run = medium_run(tmp_path_factory.mktemp("html"), "a", losses=[1, 2], retries=[3, 400], late_us=500.0)
    assert plot_command([run]) == 0
    return run


def test_report_html_is_self_contained(plotted: Path, tmp_path: Path) -> None:
    run = plotted
    md, page = (run / "report.md").read_text(), (run / "report.html").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(images) >= 8 and page.count("<img ") == len(images)
    assert page.count('src="data:image/png;base64,') == len(images) and "figures/" not in page
    assert page.count("<table>") == md.count("\n|---")
    assert "<blockquote>" in page        # the lateness warning
    out = tmp_path / "cmp"
    assert plot_command([run, run], out=out, labels=["x", "y"]) == 0
    assert (out / "report.html").read_text().count('src="data:image/png;base64,') == \
        len(re.findall(r"!\[", (out / "report.md").read_text()))


def test_report_html_in_a_real_browser(plotted: Path, tmp_path: Path) -> None:
    page = plotted / "report.html"
    shot = tmp_path / "report.png"
    r = browser(tmp_path, page, "--window-size=1280,2400", f"--screenshot={shot}")
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert console(r.stderr) == [], console(r.stderr)
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    r = browser(tmp_path, probed, "--dump-dom")
    assert 'data-broken="0"' in r.stdout, "an inlined figure did not decode"
    assert r.stdout.count("<table>") == page.read_text().count("<table>")


def test_the_console_check_sees_a_console_message(tmp_path: Path) -> None:
    """The check above can fail: a page that logs to the console is seen."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><script>console.error("first-look boom")</script></body></html>')
    r = browser(tmp_path, bad, "--dump-dom")
    assert any("first-look boom" in line for line in console(r.stderr))
