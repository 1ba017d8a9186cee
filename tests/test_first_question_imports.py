"""What a lab's page runs before its first question is answerable (issue 38: the first prediction
at the floor's first chart): the kernel runs every cell at the start, so a cell that nothing
before a commit reads still runs while the first question is loading. Labs 07, 08 and 10 import
pandas only for tables behind a commit (ui.data_table), not in a cell of its own at the start."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The lab run headless (marimo's script runner: every cell, as the page's kernel runs them at the
# start; the gates stop what is behind a commit), then whether pandas was imported.
RUN = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("lab", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
_, defs = module.app.run()
print(sys.argv[2] in defs, "pandas" in sys.modules)
"""


@pytest.mark.parametrize("lab, question", [("07_pipeline_visualizer.py", "utilisation_question"), ("08_collectives.py", "ring_question"),
                                           ("10_failures_at_scale.py", "mtbf_question")])
def test_the_start_of_a_page_imports_no_pandas(lab, question, tmp_path):
    """Fails on the notebooks before: a cell of their own imported pandas at every start
    (0.23-0.26 s of CPU, just after the first question's cell)."""
    env = {**os.environ, "LABS_LEDGER_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", RUN, str(ROOT / "labs" / lab), question], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    drew_question, imported_pandas = out.stdout.split()[-2:]
    assert drew_question == "True", out.stdout  # the page ran up to its first question
    assert imported_pandas == "False", out.stdout


def test_data_table_is_the_table_the_labs_built():
    """ui.data_table(rows) sends the page what mo.ui.table(pd.DataFrame(rows), ...) did, the
    call it replaces in Labs 07, 08 and 10: every argument of the element but its data's address,
    and the same frame."""
    import marimo as mo
    import pandas as pd

    from labs.core import ui

    rows = [{"chunks per stage v": 1, "bubble counted there": "4.21%", "m saved": "1.00x"},
            {"chunks per stage v": 2, "bubble counted there": "2.17%", "m saved": "1.94x"}]
    new = ui.data_table(rows)
    old = mo.ui.table(pd.DataFrame(rows), selection=None, show_column_summaries=False, show_data_types=False)
    assert {k: v for k, v in new._component_args.items() if k != "data"} == {k: v for k, v in old._component_args.items() if k != "data"}
    assert new._component_args["selection"] is None and new._component_args["show-column-summaries"] is False
    pd.testing.assert_frame_equal(new.data, pd.DataFrame(rows))
    assert list(new.data.columns) == ["chunks per stage v", "bubble counted there", "m saved"] and new.data["m saved"].tolist() == ["1.00x", "1.94x"]
