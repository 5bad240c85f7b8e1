"""Screenshots of the HTML report for docs/images/, taken by headless Chromium (Debian's chromium and
chromium-driver; `make test-html` installs them).

    .venv/bin/python tools/html_screenshots.py [OUT_DIR]

Builds the cache, numa (emulated two-node), streams and fleet pages from the recordings in tests/data
with `perfprobe report`, then saves the top of each page (1280 px wide) as PNG.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FLEET = sorted(DATA.glob("cache_synthetic_*.json"))
PAGES = {
    "html-cache.png": ([DATA / "cache_kvm2c_full.json"], 2300),
    "html-numa.png": ([DATA / "numa_emulated_two_node_tcg.json"], 2000),
    "html-streams.png": ([DATA / "streams_h200.json"], 1500),
    "html-fleet.png": (FLEET, 1200),
}


def browser():  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                 "--force-prefers-reduced-motion"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


DRAWN = ("return [...document.querySelectorAll('.plotly-graph-div')]"
         ".every(el => el.querySelector('.main-svg'))")


def wait_for_charts(driver, seconds: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    """Until every plotly chart on the page has drawn its SVG."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, seconds).until(lambda d: d.execute_script(DRAWN))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    driver = browser()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name, (inputs, height) in PAGES.items():
                page = Path(folder) / name.replace(".png", ".html")
                subprocess.run([sys.executable, "-m", "perfprobe", "report", *map(str, inputs), "--html", str(page)],
                               check=True, cwd=ROOT)
                driver.set_window_size(1280, height)
                driver.get(page.as_uri())
                wait_for_charts(driver)
                driver.save_screenshot(str(out / name))
                print(out / name)
    finally:
        driver.quit()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images")
