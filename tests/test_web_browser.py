"""calc web in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
.ci/run installs) driven by Selenium. Open the page, fill the form as a person would, read the
numbers from the rendered tables and compare them with the library's. Skipped, with the reason,
only where Selenium or Chromium is missing.

    python tests/test_web_browser.py     # saves the screenshot the README shows, docs/img/web.png
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import calc
from calc.commands.web import routes
from calc.web.server import server

ROOT = Path(__file__).parents[1]
FALCON = ROOT / "tests" / "data" / "hf_configs" / "falcon-7b.json"
SCREENSHOT = ROOT / "docs" / "img" / "web.png"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
DRIVER = shutil.which("chromedriver")
SHOWN_WITHIN_S = 60  # a page's wait for the server's answer (2 busy cores, a cold import)

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="Selenium is not installed (pip install -e '.[test]')")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="no Chromium here: apt-get install chromium chromium-driver (.ci/run does)")


def open_browser(width: int = 1280, height: int = 900) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[Any, str]]:
    made = server(routes(), "127.0.0.1", 0, log=False)
    threading.Thread(target=made.serve_forever, daemon=True).start()
    browser = open_browser()
    browser.set_page_load_timeout(120)
    try:
        yield browser, f"http://127.0.0.1:{made.server_address[1]}"
    finally:
        browser.quit()
        made.shutdown()
        made.server_close()


def fill(browser: Any, **fields: str) -> None:
    """Type each value into the form field of that name (empty first), then press show."""
    from selenium.webdriver.common.by import By

    for name, value in fields.items():
        box = browser.find_element(By.NAME, name.replace("_", "-"))
        box.clear()
        box.send_keys(value)
    browser.find_element(By.XPATH, "//button[text()='show']").click()


def shown(browser: Any, by: str, selector: str) -> Any:
    """The element once the page shows it: a click on 'show' can return before the browser
    has left the page it was on, so looking at once may read the old page."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    return WebDriverWait(browser, SHOWN_WITHIN_S).until(
        expected_conditions.presence_of_element_located((by, selector)))


def cell(browser: Any, label: str, column: int = 1) -> str:
    """Cell `column` of the first table row whose first cell is `label`."""
    from selenium.webdriver.common.by import By

    row = shown(browser, By.XPATH, f"//tr[td[1][normalize-space()='{label}']]")
    return row.find_elements(By.TAG_NAME, "td")[column].text.strip()


def test_the_main_report_in_the_browser(site):
    browser, base = site
    browser.get(f"{base}/")
    fill(browser, model="llama2-7b", gpu="a100", tokens="2e12")
    report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    assert cell(browser, "GPU-hours") == f"{report.training.gpu_hours:,.0f}" == "190,814"
    assert cell(browser, "total", 3) == f"{report.params.total:,}"  # Parameters: total
    # the form's URL reproduces it, blank fields left out
    assert browser.current_url == f"{base}/?model=llama2-7b&tokens=2e12&gpu=a100"


def test_a_pasted_config_in_the_browser(site):
    from selenium.webdriver.common.by import By

    browser, base = site
    browser.get(f"{base}/")
    box = browser.find_element(By.NAME, "config")
    browser.execute_script("arguments[0].value = arguments[1]", box, FALCON.read_text())
    fill(browser, gpu="a100")
    assert browser.current_url == f"{base}/"  # a POST: the config is not in the URL
    exact = calc.estimate(str(FALCON)).params.total
    assert cell(browser, "total", 3) == f"{exact:,}"
    assert f"{exact:,}" == "6,921,720,704"


def test_a_layout_search_in_the_browser(site):
    from selenium.webdriver.common.by import By

    browser, base = site
    browser.get(f"{base}/layout")
    fill(browser, model="llama2-7b", gpu="a100", gpus="8", global_batch="64")
    top = browser.find_element(By.CSS_SELECTOR, "table tbody tr")
    cells = dict(zip([th.text.strip() for th in top.find_elements(By.XPATH, "../../thead//th")],
                     [td.text.strip() for td in top.find_elements(By.TAG_NAME, "td")],
                     strict=True))
    best = calc.layout("llama2-7b", gpu="a100", gpus=8, global_batch=64).best[0]
    assert cells["#"] == "1"
    assert {k: int(cells[k]) for k in ("tp", "pp", "dp", "cp", "mb", "ZeRO")} == {
        "tp": best.layout.tp, "pp": best.layout.pp, "dp": best.layout.dp,
        "cp": best.layout.cp, "mb": best.layout.micro_batch, "ZeRO": best.layout.zero}
    assert float(cells["step s"]) == pytest.approx(best.step_time_s, abs=5e-4)
    # a click on a heading sorts the table by that column (the page's script)
    table = top.find_element(By.XPATH, "../..")
    table.find_element(By.XPATH, ".//th[normalize-space()='memory GiB']").click()
    at = list(cells).index("memory GiB")
    column = [float(row.find_elements(By.TAG_NAME, "td")[at].text)
              for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert column == sorted(column) and len(column) == 10


def test_an_error_in_the_browser(site):
    from selenium.webdriver.common.by import By

    browser, base = site
    browser.get(f"{base}/")
    fill(browser, model="llama2-7b", tokens="1e99")
    line = shown(browser, By.CSS_SELECTOR, "p.error").text
    assert line == "calc: error: --tokens: '1e99' is outside [1, 1e18]; e.g. 2e12 or 2T"
    assert browser.find_element(By.CSS_SELECTOR, "label.bad").text.startswith("tokens")
    fill(browser, tokens="2e12", gpu="a100")  # and the server goes on
    assert cell(browser, "GPU-hours") == "190,814"


def screenshot(path: Path = SCREENSHOT) -> None:
    """The main view for llama2-7b on a100 at 2e12 tokens, as the README shows it."""
    made = server(routes(), "127.0.0.1", 0, log=False)
    threading.Thread(target=made.serve_forever, daemon=True).start()
    browser = open_browser(1280, 2250)
    try:
        browser.get(f"http://127.0.0.1:{made.server_address[1]}/?model=llama2-7b&gpu=a100"
                    f"&tokens=2e12")
        browser.save_screenshot(str(path))
    finally:
        browser.quit()
        made.shutdown()
        made.server_close()
    print(f"wrote {path}")


if __name__ == "__main__":
    screenshot()
