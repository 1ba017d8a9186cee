"""Lab 06's section 3 chart as plain SVG (labs.core.zero_svg): every bar is the engine's step time
of its placement and ZeRO stage, on a linear axis from zero, and its hover text the engine's exposed
communication and bytes sent; the page draws it from the cell's own `costs`."""

import pytest
from test_lab06_svg_charts import SVG, parsed

from labs.core import zero_svg
from labs.core.engine.hardware import GB
from labs.core.scenarios.lab06 import Activations, stage_costs

pytestmark = pytest.mark.usefixtures("ledger_dir")


def costs_at(model: str, gpu: str, act: Activations, m: int) -> dict:
    return {placement: stage_costs(model, gpu, 8, act, m, where) for placement, where in (("one server (NVLink)", "packed"), ("8 servers (NICs)", "spread"))}


SETTINGS = [("llama2-70b", "h100-sxm", Activations(1, 4096, "full", True), 1), ("llama2-7b", "a100-sxm-80gb", Activations(4, 8192, "selective", True), 8),
            ("seed-100m", "b200", Activations(8, 1024, "none", False), 16)]


@pytest.mark.parametrize("model, gpu, act, m", SETTINGS)
def test_bars_are_the_engine_step_times_from_zero(model, gpu, act, m):
    costs = costs_at(model, gpu, act, m)
    root = parsed(zero_svg.stage_step_chart(costs))
    bars = root.findall(f".//{SVG}rect[@data-stage]")
    assert len(bars) == 8
    bottom = {round(float(b.get("y")) + float(b.get("height")), 1) for b in bars}
    assert len(bottom) == 1  # every bar stands on the zero line
    per_second = [float(b.get("height")) / float(b.get("data-seconds")) for b in bars]
    assert max(per_second) / min(per_second) - 1 < 2e-3  # heights in proportion to the seconds (written to 0.01 px): one linear axis
    for b in bars:
        e = costs[b.get("data-placement")][int(b.get("data-stage"))]
        assert float(b.get("data-seconds")) == e.step_time_s
        title = b.find(f"{SVG}title").text
        assert f"{e.step_time_s:.2f} s per step" in title and f"comm {e.time.dp_comm:.2f} s" in title
        assert f"{e.comm_bytes_per_gpu['dp'] / GB:.1f} GB sent per GPU" in title
    for stage in range(4):  # in each stage's group the placements left to right, as the legend lists them
        xs = [float(b.get("x")) for b in bars if b.get("data-stage") == str(stage)]
        assert xs == sorted(xs) and [b.get("data-placement") for b in bars if b.get("data-stage") == str(stage)] == list(costs)


def test_the_legend_and_stages_are_named():
    costs = costs_at(*SETTINGS[0])
    texts = [t.text for t in parsed(zero_svg.stage_step_chart(costs)).iter(f"{SVG}text")]
    assert [f"ZeRO-{s}" for s in range(4)] == [t for t in texts if t and t.startswith("ZeRO-")]
    assert all(name in texts for name in costs) and "seconds per step" in texts


def test_refuses_nothing_to_draw_and_mismatched_stages():
    costs = costs_at(*SETTINGS[0])
    with pytest.raises(ValueError, match="costs"):
        zero_svg.stage_step_chart({})
    one, two = costs.values()
    with pytest.raises(ValueError, match="same stages"):
        zero_svg.stage_step_chart({"a": one, "b": {s: two[s] for s in (0, 1)}})


def test_the_page_draws_the_cells_costs():
    """Both predictions committed: section 3's output holds the chart of the `costs` it defines, once."""
    from test_lab06 import FIT, LAB06, ZERO2
    from test_notebooks import committed, load_app, right, text_of

    outputs, defs = load_app(LAB06).run(defs={**committed("fit", FIT, right(FIT)), **committed("zero2", ZERO2, ZERO2.key)})
    assert text_of(outputs).count(zero_svg.stage_step_chart(defs["costs"])) == 1
