"""The report's answer-first layout, URL-safe ids and long strings, as a user meets them in headless Chromium
(selenium): the verdict and the finding cards come first, ``#mode=-1`` typed in a URL opens that mode, and a
page of 100 prompts of 100 kB each stays small and is ready within seconds.

Skipped when Chromium, chromedriver or selenium is missing (CI installs Debian's chromium and
chromium-driver, see .ci/run).
"""

from __future__ import annotations

import pytest

from _report_data import digits_run, significance_result
from promptprism.report import write_report
from test_report_explore import CHROMEDRIVER, CHROMIUM, console_errors, make_driver, open_page

pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="headless Chromium or chromedriver is not installed (Debian: apt-get install chromium "
        "chromium-driver); browser checks of the report skipped",
    ),
]


@pytest.fixture(scope="module")
def driver():
    d = make_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def split_page(tmp_path_factory):
    _, inputs, images = digits_run()
    tested = significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9])
    return write_report(tested, tmp_path_factory.mktemp("answer") / "split", inputs=inputs, images=images,
                        map_points=100)


@pytest.mark.parametrize(("fragment", "label"), [("#mode=-1", "−1"), ("#mode=-2", "−2"), ("#mode=%2B1", "+1"),
                                                 ("#mode=+2", "+2"), ("#mode=%E2%88%921", "−1")])
def test_a_typed_mode_fragment_opens_that_mode(driver, split_page, fragment, label):
    d = driver
    d.get("about:blank")
    open_page(d, split_page, fragment)
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.is_displayed()
    assert panel.find_element(By.TAG_NAME, "h2").text.startswith(f"Mode {label} ")
    # the mode's card in the page is marked, and the URL keeps the ASCII id
    want = label.replace("−", "-")
    assert d.find_elements(By.CSS_SELECTOR, f'.card.pp-selected[data-pp-mode="{want}"]')
    assert not console_errors(d)
