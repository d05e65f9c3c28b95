"""What a run's Allure HTML report shows, read as a person reads it: rendered in headless Chromium.

The report (`<run dir>/allure-report/index.html`, one self-contained file written by
conformance/report/allure_html.py) builds its page with JavaScript from data embedded in it,
so only the DOM after its scripts ran says what a reader sees: "Total 0 / No results", or the
run's tests. Offline: Chromium starts with a fresh profile and no background networking.

    from allure_check import allure_html_test_count
    assert allure_html_test_count(run_dir) == junit_tests

Its SVG charts are checked the same way: each one the report embeds, decoded from the report's
own data inside its page and drawn by Chromium (`allure_chart_images`).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tenacity import retry, retry_if_exception_type, stop_after_attempt

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ENV = "CHROMIUM"  # another Chrome binary, where Debian's chromium is not installed
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
# Virtual time runs the page's scripts to completion without waiting in real time.
VIRTUAL_TIME_BUDGET_MS = 30000
RENDER_TIMEOUT_S = 180

_SCRIPT = re.compile(r"<script\b[^>]*>[\s\S]*?</script>")
_METADATA = re.compile(
    r'data-testid="metadata-item-(\w+)"[\s\S]*?data-testid="metadata-value"[^>]*>'
    r"(?:<div[^>]*></div>)?<span[^>]*>(\d+)<"
)
_SECTION_TITLE = re.compile(r'data-testid="tree-section-title"[^>]*>([^<]*)<')
_CATEGORY = re.compile(r'<div[^>]*\bid="cat:[^>]*>')
_TAG = re.compile(r"<[^>]+>")
_CHART_RESULT = re.compile(r'<pre id="dra-chart-check">([^<]*)</pre>')
# Run inside the report's page once it loaded: every SVG attachment in the report's embedded
# data (window.allureReportData, path -> base64) decoded as an image and drawn on a canvas;
# the DOM gets {path: [width, height, painted pixels] or null when it did not load}.
_CHART_PROBE = """<script>
window.addEventListener("load", async () => {
  const out = {};
  for (const [path, data] of Object.entries(window.allureReportData || {})) {
    if (!path.endsWith(".svg")) continue;
    const image = new Image();
    const loaded = new Promise((done) => {
      image.onload = () => done(true);
      image.onerror = () => done(false);
    });
    image.src = "data:image/svg+xml;base64," + data;
    if (!(await loaded)) { out[path] = null; continue; }
    const canvas = document.createElement("canvas");
    canvas.width = image.naturalWidth;
    canvas.height = image.naturalHeight;
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      const ink = pixels[i] < 250 || pixels[i + 1] < 250 || pixels[i + 2] < 250;
      if (pixels[i + 3] > 0 && ink) painted++;
    }
    out[path] = [image.naturalWidth, image.naturalHeight, painted];
  }
  const result = document.createElement("pre");
  result.id = "dra-chart-check";
  result.textContent = JSON.stringify(out);
  document.body.appendChild(result);
});
</script>"""


@dataclass(frozen=True)
class AllureHtmlView:
    """What the report's overview shows: the test counts and the tree's (expanded) groups."""

    total: int
    by_status: dict[str, int]  # failed, broken, passed, skipped, unknown (as shown)
    sections: list[str]  # titles of the tree's groups, in page order


def chromium_binary() -> str:
    candidate = os.environ.get(CHROMIUM_ENV) or CHROMIUM
    found = shutil.which(candidate)
    if found is None:
        raise FileNotFoundError(
            f"chromium is not installed at {candidate}: it is needed to check the Allure HTML "
            f"report (scripts/bootstrap.sh installs it; Debian: apt-get install -y chromium; "
            f"or set ${CHROMIUM_ENV} to a Chrome binary)"
        )
    return found


def report_index(report_dir: Path) -> Path:
    """`<run dir>/allure-report/index.html` (a run dir, the allure-report dir or the file)."""
    report_dir = Path(report_dir)
    for candidate in (report_dir / "allure-report" / "index.html", report_dir / "index.html"):
        if candidate.is_file():
            return candidate
    if report_dir.is_file():
        return report_dir
    raise FileNotFoundError(
        f"no Allure HTML report under {report_dir} (expected allure-report/index.html): "
        "was the run given --dra-html-report=never, or is the allure npm package missing? "
        "(see summary.md's warnings)"
    )


def render_dom(index: Path, fragment: str = "") -> str:
    """The page's DOM after its scripts ran, from headless Chromium with a fresh profile.

    `fragment` picks the report's tab (e.g. "categories"); the default is the results tree.
    """
    with tempfile.TemporaryDirectory(prefix="dra-chromium-") as profile:
        command = [
            chromium_binary(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
            "--dump-dom",
            index.resolve().as_uri() + (f"#{fragment}" if fragment else ""),
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=RENDER_TIMEOUT_S, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(
            f"chromium could not render {index} (exit {done.returncode}): {done.stderr[-2000:]}"
        )
    return done.stdout


def parse_view(dom: str) -> AllureHtmlView:
    """Read the counts and groups from the rendered DOM (never from the data in its scripts)."""
    visible = _SCRIPT.sub("", dom)
    counts = {name: int(value) for name, value in _METADATA.findall(visible)}
    if "total" not in counts:
        raise ValueError(
            "the rendered Allure report shows no test total: its page did not render "
            "(an empty or broken report, or Chromium stopped before its scripts ran)"
        )
    total = counts.pop("total")
    sections = [html.unescape(t).strip() for t in _SECTION_TITLE.findall(visible)]
    return AllureHtmlView(total=total, by_status=counts, sections=sections)


@retry(
    retry=retry_if_exception_type(ValueError),
    stop=stop_after_attempt(3),
    reraise=True,
)
def read_allure_html(report_dir: Path) -> AllureHtmlView:
    """The rendered report's counts. On a loaded machine Chromium may stop before the page's
    scripts ran (no total in the DOM): rendered again, up to three times in all."""
    return parse_view(render_dom(report_index(report_dir)))


def parse_categories(dom: str) -> dict[str, int]:
    """Category name -> number of tests, from the rendered Categories tab."""
    visible = _SCRIPT.sub("", dom)
    found: dict[str, int] = {}
    for block in _CATEGORY.split(visible)[1:]:
        texts = [html.unescape(t).strip() for t in _TAG.sub("\n", block).splitlines()]
        texts = [t for t in texts if t]
        name = texts[0] if texts else ""
        count = next((int(t) for t in texts[1:] if t.isdigit()), None)
        if name and count is not None:
            found[name] = count
    return found


def read_allure_categories(report_dir: Path) -> dict[str, int]:
    """The Categories tab as shown: e.g. {"Not applicable": 1, "Not run": 2, ...}."""
    index = report_index(report_dir)
    return parse_categories(render_dom(index, fragment="categories"))


def allure_html_test_count(report_dir: Path) -> int:
    """How many tests the run's Allure HTML report shows ("Total"), rendered in Chromium."""
    return read_allure_html(report_dir).total


@dataclass(frozen=True)
class ChartImage:
    """One SVG attachment as Chromium drew it: its size and how many pixels are not blank."""

    width: int
    height: int
    painted: int


def allure_chart_images(report_dir: Path) -> dict[str, ChartImage | None]:
    """Each SVG the Allure HTML report embeds (its path in the report's data) as Chromium
    decoded and drew it inside the report's page; None for one that did not load."""
    index = report_index(report_dir)
    page = index.read_text(encoding="utf-8")
    body_end = page.rfind("</body>")
    if body_end < 0:
        raise ValueError(f"{index} has no </body>: not an Allure HTML report")
    with tempfile.TemporaryDirectory(prefix="dra-charts-") as work:
        probe = Path(work) / index.name  # the report's own page, the probe added at its end
        probe.write_text(page[:body_end] + _CHART_PROBE + page[body_end:], encoding="utf-8")
        dom = render_dom(probe)
    found = _CHART_RESULT.search(dom)
    if found is None:
        raise ValueError(
            "the chart probe wrote no result: the report's page did not finish loading in Chromium"
        )
    images = json.loads(html.unescape(found.group(1)))
    return {path: ChartImage(*size) if size else None for path, size in images.items()}
