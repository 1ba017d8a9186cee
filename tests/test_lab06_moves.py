"""What one instrument move of Lab 06 re-runs (issue 35: each cell's run and output is a round of
messages to the page), read from the notebook's cells as marimo's dataflow sees them (a move
re-runs the cells that read the instrument and, transitively, those that read what they define)."""

from pathlib import Path

import pytest

from test_lab11_12_moves import rerun_by

LAB06 = Path(__file__).resolve().parents[1] / "labs" / "06_zero_sweep.py"
ACTIVATION_INSTRUMENTS = ("micro_batch_slider", "seq_slider", "recompute_pick", "flash_box")


@pytest.mark.parametrize("instrument", [*ACTIVATION_INSTRUMENTS, "model_pick", "gpu_pick", "optimizer_pick", "offload_box", "dp_slider", "stage_pick",
                                        "accumulation_slider"])
def test_a_move_reruns_no_submit(instrument):
    hit = rerun_by(LAB06, instrument)
    print(instrument, len(hit), [sorted(c["refs"]) for c in hit])
    assert hit and not any("submit_to_ledger" in c["body"] for c in hit)


@pytest.mark.parametrize("instrument", ACTIVATION_INSTRUMENTS)
def test_an_activation_move_reruns_five_cells(instrument):
    """Section 1 (which reads the activations), section 2 (which computes the curves and the
    fewest GPUs it draws), the myths, section 3 (its gate note) and the HUD: 5, where the notebook
    before a033bac re-ran 9 (the activations' own cell, the fewest GPUs' and the submit besides) and
    with the curves in a cell of their own 6."""
    hit = rerun_by(LAB06, instrument)
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert len(hit) == 5


@pytest.mark.parametrize("instrument, cells", [("dp_slider", 2), ("stage_pick", 2), ("accumulation_slider", 4)])
def test_a_sweep_move_reruns_its_section_and_the_hud(instrument, cells):
    """The DP slider and the stage re-run section 2 and the HUD (a stage move also re-ran the curves'
    own cell and the myths: 4); the accumulation slider also section 3 and the myths, which quote it."""
    hit = rerun_by(LAB06, instrument)
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert len(hit) == cells and any("svg_charts.zero_sweep(" in c["body"] for c in hit) and any("hud(" in c["body"] for c in hit)


def test_the_curves_are_computed_once_per_setting():
    """Section 2 and the myths read memory_curves at the same arguments: the second is a cache hit,
    the same object."""
    from labs.core.scenarios.lab06 import Activations, memory_curves

    act = Activations(2, 4096, "selective", True)
    assert memory_curves("llama2-70b", act, "fp32", False) is memory_curves("llama2-70b", act, "fp32", False)


def test_the_submit_reads_the_instruments_when_pressed():
    from labs.core.scenarios.lab06 import SWEEP_FIELDS

    submit = next(c for c in rerun_by(LAB06, "submit_button"))
    assert "sweep_settings()" in submit["body"] and "sweep_inputs" not in submit["refs"]
    source = LAB06.read_text()
    getter = source[source.index("def sweep_settings"):source.index("return (", source.index("def sweep_settings"))]
    assert all(f'"{field}"' in getter for field in SWEEP_FIELDS)


@pytest.mark.parametrize("instrument", ACTIVATION_INSTRUMENTS)
def test_an_activation_move_redraws_no_plotly_figure(instrument):
    """The memory wall, the sweep (labs.core.svg_charts) and section 3's step-time chart
    (labs.core.zero_svg) are SVG: the cells an activation move re-runs build no Plotly figure.
    Fails on the notebook before: the step-time chart was charts.stage_step_times, redrawn on
    x2/y2 (and before 1f55dd4 the wall and the sweep were Plotly figures too)."""
    import re

    hit = rerun_by(LAB06, instrument)
    svg = [c for c in hit if re.search(r"(?<!\w)(svg_charts|zero_svg)\.", c["body"])]
    plotly = [call for c in hit for call in re.findall(r"(?<!\w)charts\.(\w+)\(", c["body"])]
    print(instrument, "svg cells", len(svg), "plotly builders", plotly)
    assert len(svg) == 3 and plotly == []


@pytest.mark.parametrize("model, gpu, stage, seq", [("llama2-70b", "h100-sxm", 3, 8192), ("llama2-7b", "a100-sxm-40gb", 1, 4096), ("llama2-7b", "a100-sxm-40gb", 2, 32768),
                                                     ("llama2-13b", "a100-sxm-40gb", 2, 8192), ("llama2-70b", "h100-sxm", 3, 32768)])
def test_the_fewest_gpus_straddle_the_hbm_in_few_evaluations(model, gpu, stage, seq, monkeypatch):
    """fewest_gpus (section 2's card, re-run by every activation move) is the n where the engine's
    memory first fits: memory(n) <= HBM < memory(n - 1). It asks where a line in 1/n through the
    last two points asked meets the HBM, and that n's neighbour: at most 7 evaluations of the
    engine here (the limit, 1, 2, then pairs), not the 17 of a bisection over 1..65,536 (the same
    answer as the bisection at the instruments' settings, checked before the commit)."""
    from labs.core.engine.hardware import GPUS, GB
    from labs.core.scenarios import lab06

    act = lab06.Activations(1, seq, "full", True)
    asked = []
    real = lab06.dp_memory
    monkeypatch.setattr(lab06, "dp_memory", lambda *args: asked.append(args[1]) or real(*args))
    lab06.fewest_gpus.cache_clear()
    n = lab06.fewest_gpus(model, gpu, stage, act)
    hbm = GPUS[gpu].hbm_bytes
    print(model, gpu, stage, seq, n, "asked at", asked, [round(real(model, m, stage, act).total / GB, 2) for m in (n - 1, n)], hbm / GB)
    assert n is not None and n > 1
    assert real(model, n, stage, act).total <= hbm < real(model, n - 1, stage, act).total
    assert len(asked) <= 7
