"""Lab 13 in a real browser (Debian's Chromium, `marimo run`): type and commit the message-size
prediction, change it (recorded as a change), commit the other two, move every instrument to
both ends of its range and read the split's and the engine's numbers there, see all three
reveals, submit, download a ledger that validates and that the grader recomputes."""

import json

import jsonschema
import pytest

from browser import browser_page, choose, marimo_run, metric, submit_and_download, type_number
from labs import grade
from labs.core.scenarios import lab13
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "tensor student"


def _move(page, index: int, key: str) -> None:
    slider = page.get_by_role("slider").nth(index)
    slider.focus()
    slider.press(key)


def _label(question, key: str) -> str:
    return f"{key}) {next(o.label for o in question.options if o.key == key)[:40]}"


@pytest.mark.serves("13_tensor_parallel.py")
def test_lab13_end_to_end(tmp_path, served_ledgers):
    v = variant(lab13.LAB, STUDENT)
    q = v.questions
    with marimo_run("13_tensor_parallel.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the split").wait_for()
        page.get_by_label("Your name or student id (goes into your design ledger)").fill(STUDENT)
        page.keyboard.press("Enter")
        page.get_by_text(f"split over TP = {v.settings['tp']} ranks").first.wait_for()

        number = page.locator("input[aria-label*='Your prediction']").first
        type_number(page, number, f"{q['ring'].spec.answer:.2f}")
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        page.get_by_text("Seed 001's milestone, checked").first.wait_for(timeout=60_000)
        type_number(page, number, "1")
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        page.get_by_text("Later answers are recorded as changes: 1").first.wait_for()

        choose(page, _label(q["scaling"], q["scaling"].key), commit=1)
        choose(page, _label(q["tp_best"], q["tp_best"].key), commit=2)
        page.get_by_text("The scaling book's threshold").first.wait_for()

        # ranks (slider 0) and d_model (slider 1) to both ends, with the numbers the lab's functions give there
        for key, ranks in (("Home", 1), ("End", 8)):
            _move(page, 0, key)
            sent = lab13.split_report("mlp-gelu", ranks)["sent_per_rank"]
            page.locator(".lab-card .value", has_text=f"{sent / 1e3:,.1f} kB").first.wait_for()
            assert metric(page, "bytes each rank sent") == f"{sent / 1e3:,.1f} kB"
        page.get_by_text("all-reduce").first.wait_for()
        page.get_by_label("Sequence parallelism").check()
        page.get_by_text("reduce-scatter").first.wait_for()
        for key, width in (("Home", lab13.ENGINE_WIDTHS[0]), ("End", lab13.ENGINE_WIDTHS[-1])):
            _move(page, 1, key)
            row = lab13.engine_width_row(width)
            page.locator(".lab-card .value", has_text=f"{row['flops_per_token_layer'] / row['tp_bytes_per_token_layer']:,.0f}").first.wait_for()
        page.get_by_label("TP overlap (Transformer Engine)").uncheck()
        off = lab13.tp_sweep(v.settings["model"], "h100", "nodes", False)
        page.get_by_text(f"{off[-1]['step_s']:.1f} s").first.wait_for()

        assert page.get_by_text("Right").count() >= 3
        path = submit_and_download(page, "Submit to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][lab13.LAB][lab13.STEP]
    assert step["inputs"] == {"block": "mlp-gelu", "ranks": 8, "sequence_parallel": True, "width": lab13.ENGINE_WIDTHS[-1], "gpu": "h100", "overlap": False}
    assert step["outcomes"]["split_output_diff"] < 1e-12
    commits = doc["predictions"][lab13.LAB]
    assert commits["ring"]["changes"][0]["answer"] == "1"
    table, problems = grade.grade([str(path)])
    row = table.iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == 3 and row["changes"] == 1
