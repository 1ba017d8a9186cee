"""The class dashboard in a real browser (Debian's Chromium, `marimo run instructor/class_dashboard.py --
--ledgers DIR --roster roster.csv`): it loads, a click on a bar lists the students behind it,
and the grade book downloads as CSV with the grader's columns."""

import csv
import json
import shutil

import pytest

from browser import browser_page, marimo_run
from test_dashboard import GOOD, LAB, PIPE, _student

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]


def test_dashboard_click_a_bar_and_download_the_gradebook(tmp_path):
    folder = tmp_path / "class"
    ann = _student(folder, "ann", "B", "C", GOOD)
    _student(folder, "bob", "A", "B", PIPE, change_to="B")
    _student(folder, "cat", "A", None, GOOD)
    shutil.copyfile(ann, folder / "ann-copy.json")
    (folder / "broken.json").write_text("{")
    roster = tmp_path / "roster.csv"
    roster.write_text("student\nann\nbob\ncat\neve\n")
    with marimo_run("../instructor/class_dashboard.py", args=["--ledgers", str(folder), "--roster", str(roster)]) as url, browser_page() as page:
        page.set_default_timeout(20_000)
        page.goto(url)
        page.get_by_text("committed answers judged by the engine").first.wait_for()
        note = page.get_by_text("Click a bar above to list the students who committed that answer.")
        note.wait_for()
        bars = page.locator(".js-plotly-plot g.trace.bars g.point path")
        bars.first.wait_for()
        assert bars.count() == 4  # options A-D of Lab 05's first question
        bars.first.scroll_into_view_if_needed()
        box = bars.first.bounding_box()  # Plotly's drag layer lies over the bars: click where a person would
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # option A: bob and cat
        note.wait_for(state="detached")
        table = page.get_by_text("2 rows").first
        table.wait_for()
        for name in ("bob", "cat"):
            page.get_by_role("cell", name=name, exact=True).first.wait_for()
        page.get_by_text("1 students").first.wait_for()  # eve, on the roster with no ledger
        with page.expect_download() as info:
            page.get_by_text("Download the grade book (CSV)").first.click()
        path = tmp_path / "gradebook.csv"
        info.value.save_as(path)
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == ["student", "file", LAB, "tampered", "changed", "identity"]
    assert sorted(r["student"] for r in rows) == ["ann", "ann", "bob", "cat", "eve"]
    assert json.loads((folder / "ann-copy.json").read_text())["student"] == "ann"
