"""The HTML report in a real browser: headless Chromium (Debian's chromium + chromium-driver, driven by
selenium) opens pages made from the recorded runs and checks no console error, no network request,
every expected chart drawn (its SVG present, sized and holding traces), verdicts and advice as text.

`make test-html` installs the browser when missing; where none is installed this module skips,
saying so.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from perfprobe.cli.report_command import load, load_all
from perfprobe.render import html

DATA = Path(__file__).resolve().parent / "data"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is missing: pip install -e '.[test]'")
if CHROMIUM is None or DRIVER is None:
    pytest.skip("no headless browser: install Debian's chromium and chromium-driver (make test-html does it)",
                allow_module_level=True)

PAGES = {
    "all_quick_h200x2.rec": ["cache-latency0", "cache-bandwidth", "falseshare-spacing", "falseshare-matrix2",
                             "numa-matrix1", "numa-matrix2", "numa-matrix3", "pinned-bandwidth-gpu0",
                             "pinned-bandwidth-gpu1", "streams-sweep-gpu0", "streams-sweep-gpu1",
                             "uvm-paths0-gpu0", "uvm-paths1-gpu0", "uvm-paths0-gpu1", "uvm-paths1-gpu1"],
    "cache_kvm2c_full": ["cache-latency0", "cache-bandwidth"],
    "numa_emulated_two_node_tcg": ["numa-matrix1", "numa-matrix2", "numa-matrix3"],
    "falseshare_kvm_2cpu": ["falseshare-spacing", "falseshare-matrix2"],
}
DRAWN = """
return [...document.querySelectorAll('figure[data-chart]')].map(function (figure) {
  var plot = figure.querySelector('.js-plotly-plot');
  var svg = plot && plot.querySelector('svg.main-svg');
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  var marks = plot ? plot.querySelectorAll('.trace, .hm, image, .point, path.js-line').length : 0;
  return [figure.dataset.chart, !!svg, box.width, box.height, marks];
});
"""
READY = ("return [...document.querySelectorAll('.plotly-graph-div')]"
         ".every(el => el.querySelector('.main-svg'))")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Chromium with its profile and temporary files under pytest's tmp: it leaves
    org.chromium.Chromium.* folders in TMPDIR after quit (eleven in /tmp after a day of test runs)."""
    from selenium.webdriver.chrome.service import Service

    own = tmp_path_factory.mktemp("chromium")
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={own / 'profile'}"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(DRIVER, env={**os.environ, "TMPDIR": str(own)})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_window_size(1280, 1600)
    yield driver
    driver.quit()


def open_page(driver, page: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")
    driver.get_log("performance")  # drop what earlier pages left
    driver.get(page.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(READY))


def requests_made(driver) -> list[str]:  # type: ignore[no-untyped-def]
    """Every URL the page asked for (CDP Network events from the performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def check_page(driver, page: Path, expected: list[str]) -> str:  # type: ignore[no-untyped-def]
    open_page(driver, page)
    outside = [u for u in requests_made(driver) if u != page.as_uri() and not u.startswith("data:")]
    assert outside == [], f"the page asked the network for {outside}"
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], f"console errors: {errors}"
    drawn = driver.execute_script(DRAWN)
    assert [d[0] for d in drawn] == expected
    for key, has_svg, width, height, marks in drawn:
        assert has_svg and width > 100 and height > 100 and marks > 0, f"chart {key} not drawn: {drawn}"
    return " ".join(driver.execute_script("return document.body.innerText").split())


@pytest.mark.parametrize("name", sorted(PAGES))
def test_report_page_draws_every_chart_offline_with_verdicts_and_advice(browser, tmp_path, name):
    report = load(DATA / f"{name}.json")
    page = tmp_path / f"{name}.html"
    html.write(report, page)
    text = check_page(browser, page, PAGES[name])
    for result in report.results:
        assert result.verdict.value.upper() in text
        for finding in result.findings:
            assert " ".join(finding.message.split()) in text
            assert " ".join(finding.advice.split()) in text
    assert "units:" in text and "method:" in text and "verdict:" in text


def test_fleet_page_draws_its_heat_map_and_names_the_outliers(browser, tmp_path):
    page = tmp_path / "fleet.html"
    html.write_fleet(load_all(sorted(DATA.glob("cache_synthetic_*.json"))), page)
    text = check_page(browser, page, ["fleet0"])
    assert "cache_synthetic_remote_dram: cache latency_ns.DRAM" in text
    assert "Check BIOS prefetcher settings." in text


def test_dark_scheme_recolours_the_charts(browser, tmp_path):
    page = tmp_path / "cache.html"
    html.write(load(DATA / "cache_kvm2c_full.json"), page)
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        open_page(browser, page)
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        font = browser.execute_script("return document.querySelector('.js-plotly-plot')._fullLayout.font.color")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert background == "rgb(18, 21, 27)"
    assert font.lower() == "#e4e8ef"


@pytest.mark.parametrize("planted, complaint", [
    ("<script>console.error('boom')</script>", "console errors"),
    ('<img src="http://127.0.0.1:59999/logo.png" alt="">', "asked the network"),
])
def test_the_checks_catch_a_console_error_and_a_network_request(browser, tmp_path, planted, complaint):
    page = tmp_path / "planted.html"
    page.write_text(html.render(load(DATA / "numa_emulated_two_node_tcg.json")).replace("</main>", planted + "</main>"))
    with pytest.raises(AssertionError, match=complaint):
        check_page(browser, page, PAGES["numa_emulated_two_node_tcg"])
