"""The labs' stylesheet, now sent once a page in its title (ui.with_stylesheet), still styles what
ui draws below it, in Chromium (`marimo run`): Labs 06, 10, 12 and a problem set have one <style>
holding it, and a .lab-message, .lab-card, .lab-table, .lab-bar and .lab-hud computed style is the
stylesheet's, not the browser's default."""

import pytest
from browser import browser_pages, marimo_run_many

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

PAGES = ["06_zero_sweep.py", "10_failures_at_scale.py", "12_precision_and_memory.py", "problems/ps02_memory.py"]

# Each styled class as ui's markup nests it, put on the page beside the notebook's own output, and a
# plain <div> as the unstyled reference: [class, property, styled value, unstyled value].
COMPUTED = """() => {
  const probe = html => { const d = document.createElement('div'); d.innerHTML = html; document.body.appendChild(d); return d; };
  const plain = probe('<div id="plain"></div>').firstChild;
  const card = probe('<div class="lab-card"><div class="value">1</div><div class="label">x</div></div>').firstChild;
  const cell = probe('<table class="lab-table"><tbody><tr><td>1</td></tr></tbody></table>').querySelector('td');
  const plainCell = probe('<table><tbody><tr><td>1</td></tr></tbody></table>').querySelector('td');
  const bar = probe('<div class="lab-bar"><div class="track"></div></div>').firstChild;
  const hud = probe('<div class="lab-hud">x</div>').firstChild;
  const message = probe('<div class="lab-message">x</div>').firstChild;
  const style = (el, prop) => getComputedStyle(el).getPropertyValue(prop);
  return {
    sheets: [...document.querySelectorAll('style')].filter(s => s.textContent.includes('.lab-card {')).length,
    card: [style(card, 'border-radius'), style(plain, 'border-radius')],
    cell: [style(cell, 'padding-left'), style(plainCell, 'padding-left')],
    track: [style(bar.querySelector('.track'), 'display'), style(plain, 'display')],
    hud: [style(hud, 'border-radius'), style(plain, 'border-radius')],
    message: [style(message, 'border-left-width'), style(plain, 'border-left-width')],
    drawn: document.querySelectorAll('.lab-message, .lab-hud').length,
    drawnStyled: [...document.querySelectorAll('.lab-message, .lab-hud')].every(el => style(el, 'border-radius') !== '0px'),
  };
}"""


def test_the_one_stylesheet_styles_every_component(tmp_path):
    envs = [{"LABS_LEDGER_DIR": str(tmp_path / str(k))} for k in range(len(PAGES))]
    with marimo_run_many(PAGES, envs) as urls, browser_pages(len(PAGES)) as pages:
        for page, url in zip(pages, urls, strict=True):
            page.goto(url)
        for name, page in zip(PAGES, pages, strict=True):
            page.locator(".lab-hud" if name.startswith("problems/") else ".lab-message").first.wait_for(timeout=120_000)
            seen = page.evaluate(COMPUTED)
            assert seen["sheets"] == 1, (name, seen)
            assert seen["card"] == ["8px", "0px"], (name, seen)
            assert seen["cell"][0] == "12.8px" != seen["cell"][1], (name, seen)
            assert seen["track"] == ["flex", "block"], (name, seen)
            assert seen["hud"] == ["6px", "0px"], (name, seen)
            assert seen["message"] == ["4px", "0px"], (name, seen)
            assert seen["drawn"] >= 1 and seen["drawnStyled"], (name, seen)
