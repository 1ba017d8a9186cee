"""Memory: ZeRO Table 1, Korthikanti's activation formulas, the seed milestones."""

import pytest

from conftest import report
from labs.core.engine.memory import activation_bytes_per_layer, in_flight_microbatches, model_state_bytes, model_state_split

STAGE_KEYS = {1: "gb_per_device_Pos", 2: "gb_per_device_Pos+g", 3: "gb_per_device_Pos+g+p"}


def _printed_precision(value: float) -> float:
    """Half a unit in the last digit the paper printed (0.12 -> 0.005)."""
    text = repr(value)
    return 0.5 * 10 ** -(len(text.split(".")[1]) if "." in text else 0)


def test_zero_table1_every_cell_within_1pct(published):
    """Within 1%, or within the table's own rounding (it prints 0.117 GB as 0.12)."""
    rows = [r for r in published.values() if r["kind"] == "zero_table1"]
    assert len(rows) == 18
    for row in rows:
        psi, dp = row["inputs"]["params_B"] * 1e9, row["inputs"]["dp"]
        cells = [(0, "gb_baseline_dp")] + list(STAGE_KEYS.items())
        for stage, key in cells:
            expected = row["outputs"][key]
            got = model_state_bytes(psi, stage, dp) / 1e9
            report(f"{row['id']} stage {stage}", got, expected)
            assert abs(got - expected) <= max(0.01 * expected, _printed_precision(expected)), (row["id"], stage)


def test_sixteen_bytes_per_parameter_split_2_2_12():
    assert model_state_split(1.0, 0, 1) == (2.0, 2.0, 12.0)


@pytest.mark.parametrize(
    "variant, kwargs, coefficient",
    [
        ("none", dict(tp=1), lambda s, h, a, t: 34 + 5 * a * s / h),
        ("tp", dict(tp=8), lambda s, h, a, t: 10 + 24 / t + 5 * a * s / (h * t)),
        ("tp_sp", dict(tp=8, sequence_parallel=True), lambda s, h, a, t: (34 + 5 * a * s / h) / t),
        ("tp_selective", dict(tp=8, recompute="selective"), lambda s, h, a, t: 10 + 24 / t),
        ("tp_sp_selective", dict(tp=8, sequence_parallel=True, recompute="selective"), lambda s, h, a, t: 34 / t),
        ("full_recompute", dict(tp=8, recompute="full"), lambda s, h, a, t: 2),
    ],
)
def test_korthikanti_activation_formulas(published, variant, kwargs, coefficient):
    assert f"korthikanti_act_{variant}" in published
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3
    t = kwargs.get("tp", 1)
    got = activation_bytes_per_layer(s, b, h, a, **kwargs)
    assert abs(report(f"activations {variant}", got, s * b * h * coefficient(s, h, a, t))) < 1e-12


def test_selective_recompute_saves_70pct_on_gpt3(published):
    """Korthikanti Sec. 4.3: selective recompute cuts GPT-3's activation memory by 70%."""
    full = activation_bytes_per_layer(2048, 1, 12288, 96, 8, True, "none")
    selective = activation_bytes_per_layer(2048, 1, 12288, 96, 8, True, "selective")
    expected = published["korthikanti_selective_savings"]["outputs"]["activation_memory_saved_pct"][0] / 100
    assert abs(report("GPT-3 selective saving", 1 - selective / full, expected)) < 0.03


def test_seed_milestone_100m_on_two_gpus():
    """seeds/001 week 22: 100M params on 2 GPUs: DDP ~1.6 GB, ZeRO-2 ~0.9, ZeRO-3 ~0.8."""
    for stage, expected in ((0, 1.6), (2, 0.9), (3, 0.8)):
        assert abs(report(f"100M ZeRO-{stage}", model_state_bytes(100e6, stage, 2) / 1e9, expected)) < 0.05


def test_seed_milestones_10b_and_70b():
    assert abs(report("10B DDP", model_state_bytes(10e9, 0, 8) / 1e9, 160)) < 1e-9
    assert abs(report("10B ZeRO-3 on 8", model_state_bytes(10e9, 3, 8) / 1e9, 20)) < 1e-9
    assert abs(report("70B total state", model_state_bytes(70e9, 0, 1) / 1e12, 1.12)) < 1e-9
    assert abs(report("70B ZeRO-3 on 8", model_state_bytes(70e9, 3, 8) / 1e9, 140)) < 1e-9


def test_in_flight_microbatches_by_schedule():
    assert in_flight_microbatches("gpipe", 4, 16) == 16
    assert in_flight_microbatches("1f1b", 4, 16) == 4
    assert in_flight_microbatches("1f1b", 8, 4) == 4
    assert in_flight_microbatches("interleaved", 4, 16, v=2) == pytest.approx(4 * (1 + 3 / 8))
    assert in_flight_microbatches("zb-h2", 4, 16) == 7


@pytest.mark.parametrize("field, call", [
    ("zero_stage", lambda: model_state_bytes(1e9, 4, 8)),
    ("dp", lambda: model_state_bytes(1e9, 1, 0)),
    ("params", lambda: model_state_bytes(-1, 1, 8)),
    ("recompute", lambda: activation_bytes_per_layer(2048, 1, 4096, 32, recompute="some")),
    ("tp", lambda: activation_bytes_per_layer(2048, 1, 4096, 32, tp=0)),
])
def test_bad_input_names_the_field(field, call):
    with pytest.raises(ValueError, match=field):
        call()
