"""Lab 08 headless: locked by default, each option judged by the engine, the ring stepper's bytes
and clock against the closed form at every step, the ledger and the grader; the engine's
collectives against measured NCCL bus bandwidth and the seeds' numbers."""

import html
import json
from pathlib import Path

import marimo as mo
import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from conftest import report
from labs.core.scenarios.lab08 import (
    BUCKET_CASES,
    BUCKET_SAME,
    LB_SETUPS,
    STEPPER_LINKS,
    STEPPER_RANKS,
    STEPPER_SIZES,
    bucket_answer,
    bucket_options_v4,
    bucket_times,
    busbw_rows,
    communication_efficiency,
    lb_curves,
    machine_bucket_answer,
    machine_bucket_explanations,
    machine_bucket_facts,
    measured_busbw,
    milestone_estimates,
    nvl72_cluster,
    nvl72_confidence,
    nvl72_rows,
    nvls_busbw_note,
    parameter_server_ingress_bytes,
    primitive_rows,
    ps_crossover,
    rails_rows,
    ring_answer,
    ring_explanations,
    ring_state,
    tp_cliff,
)
from labs.core.state import load_schema
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, shared_app, mine, right, text_of, wrong

LAB08 = next(p for p in LABS if p.name == "08_collectives.py")
# The questions as a headless run sees them: its variant (labs.variants)
RING, BUCKET = mine("08_collectives", "ring"), mine("08_collectives", "bucket")
SETTING = variant("08_collectives", "student").settings
BOTH = {**committed("ring", RING, right(RING)), **committed("bucket", BUCKET, BUCKET.key)}
GATED = ("Key takeaways", "algbw against busbw", "Across nodes: rails", "The course notes' numbers, checked", "The equations behind the collectives", "Right.", "Not quite")

# NVLink 4 as NCCL runs it: 450 GB/s each way (H100 datasheet) at the measured 370 GB/s ring busbw
# (nccl-tests #212); NCCL's cost model charges 3.4 us per NVLink ring step (src/graph/tuning.cc).
NVLINK4_BYTES_PER_S, NVLINK_HOP_S = 370e9, 3.4e-6


@pytest.fixture(scope="module")
def app():
    return shared_app(LAB08)


def instruments(n=8, size="1 GB", link="nvlink4"):
    """The stepper's instruments cell's definitions: Ranks N, Message and Link, the copies of their
    HTML the gated panel shows, and the getter of their values (a plain read)."""
    n_slider = mo.ui.slider(steps=list(STEPPER_RANKS), value=n)
    size_dropdown = mo.ui.dropdown(options=STEPPER_SIZES, value=size)
    link_dropdown = mo.ui.dropdown(options={k: k for k in STEPPER_LINKS}, value=link)
    return {
        "ring_n_slider": n_slider, "ring_size_dropdown": size_dropdown, "ring_link_dropdown": link_dropdown,
        "ring_panel": mo.hstack([mo.Html(w.text) for w in (n_slider, size_dropdown, link_dropdown)]),
        "ring_setting": lambda: dict(n=n_slider.value, nbytes=size_dropdown.value, link=link_dropdown.value),
    }


def stepper(n=8, size="1 GB", link="nvlink4", step=0):
    """The instruments, the step slider at `step` with its copy, and the submit's ring_inputs
    reading them (the notebook's own, fed by the slider's on_change, is checked by
    test_ring_inputs_follow_the_step_slider)."""
    defs = instruments(n, size, link)
    step_slider = mo.ui.slider(start=0, stop=2 * (n - 1), value=step)
    setting = defs["ring_setting"]
    return defs | {
        "ring_step_slider": step_slider,
        "ring_step_panel": mo.Html(step_slider.text),
        "ring_inputs": lambda: {**setting(), "step": step_slider.value},
        "set_ring_step": lambda value: None,
    }


def test_ring_inputs_follow_the_step_slider(app):
    """The notebook's step slider for N = 8 runs 0..14 and starts at 0; a move (applied as the
    kernel applies it, on_change included) is what the submit reads, clipped to 2(N-1)."""
    _, defs = app.run(defs={**BOTH, **instruments(n=8, link="pcie4")})
    slider, inputs = defs["ring_step_slider"], defs["ring_inputs"]
    assert (slider.start, slider.stop, slider.value) == (0, 14, 0)
    assert inputs() == {"n": 8, "nbytes": 1e9, "link": "pcie4", "step": 0}
    slider._update(5)
    assert inputs() == {"n": 8, "nbytes": 1e9, "link": "pcie4", "step": 5}
    defs["set_ring_step"](99)  # a step past this N's last (as a stale value would be) is clipped
    assert inputs()["step"] == 14


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "ring_view" not in defs and "submitted" not in defs
    text = text_of(outputs)
    assert "Commit to a prediction" in text
    for heading in GATED:
        assert heading not in text


@pytest.mark.parametrize("key", [o.key for o in BUCKET.options])
def test_each_options_feedback_agrees_with_the_engine(app, key):
    """The bucket answered with each letter, the ring's bytes typed wrong: the bucket's reveal
    says Right. exactly when the engine's claim for that option holds, and explains the option
    with the engine's numbers at the student's bucket; the ring's says what a ring sends."""
    outputs, _ = app.run(defs={**committed("ring", RING, wrong(RING)), **committed("bucket", BUCKET, key)})
    text = html.unescape(text_of(outputs))
    assert text.count("Right.") == (key == BUCKET.key)
    assert text.count("Not quite") == 1 + (key != BUCKET.key)
    explanations = machine_bucket_explanations(SETTING["bucket_bytes"], SETTING["bucket_nodes"], SETTING["bucket_group"], SETTING["bucket_machine"])
    assert explanations[BUCKET.option_id(key)][:60] in text
    assert f"{RING.spec.answer:.3f} GB" in text


def test_the_ring_question_is_the_closed_form():
    """The bytes a ring rank sends, 2(N-1)/N x M, at the headless variant's message and ranks."""
    n, m = SETTING["ring_n"], SETTING["ring_gb"]
    assert RING.spec.answer == pytest.approx(2 * (n - 1) / n * m, rel=1e-12)
    assert RING.judge(f"{2 * (n - 1) / n * m:.2f}") and not RING.judge(str(2 * m)) and not RING.judge(str(m))


def test_one_prediction_unlocks_only_its_own_reveal(app):
    text = text_of(app.run(defs=committed("ring", RING, wrong(RING)))[0])
    assert text.count("Not quite") == 1 and "Right." not in text
    assert "Key takeaways" not in text and "alpha = beta" not in text  # the takeaways and curves wait for the bucket


def test_ring_answer_is_the_closed_form():
    """2(N-1)/N x 1 GB: 1.75 GB at N = 8, 1.998 GB at N = 1,024 (seed 004 chapter 2: it saturates at 2M)."""
    assert ring_answer() == "B"
    assert "1.75 GB at N = 8, 1.998 GB at N = 1024" in ring_explanations()["B"]


def test_bucket_answer_by_hand():
    """1 MB over 128 DGX H100 nodes, NCCL's cost model (tuning.cc, LL protocol: base 6.6 us ring /
    6.8 tree; per hop NVLink 0.6, network 2.7 ring / 5.0 tree; LL at half the bandwidth): the ring
    pays 6.6 + (2046 - 254) x 0.6 + 254 x 2.7 = 1,767.6 us and moves 2 x 1023/1024 x 1 MB at
    370 / 2 GB/s; the tree 6.8 + 2 x (7 x 0.6 + 7 x 5.0) = 85.2 us and moves 2 x 1 MB at
    0.92 x 370 / 3.8 GB/s."""
    t = bucket_times()
    assert t["ring"] == pytest.approx(1767.6e-6 + 2 * 1023 / 1024 * 1e6 / (370e9 / 2), rel=1e-9)
    assert t["tree"] == pytest.approx(85.2e-6 + 2e6 / (0.92 * 370e9 / 3.8), rel=1e-9)
    assert bucket_answer() == "B"


def test_a100_node_tie_by_hand():
    """Edition 4's "about the same": 4 MB inside one DGX A100 node (no NVLS: NVLink 3 has no
    NVLink SHARP). NCCL's cost model at LL128 (tuning.cc: base 14.0 us; an NVLink hop 1.9 ring /
    1.25 tree): the ring's 2 x 7 hops cost 14.0 + 14 x 1.9 = 40.6 us, the tree's chain
    14.0 + 2 x 7 x 1.25 = 31.5 us; the tree moves 2 M against the ring's 2 x 7/8 M at a lower bus
    bandwidth, so its bytes take longer and the totals end within 10%."""
    f = machine_bucket_facts(4e6, 32, "node", "dgx-a100")
    assert set(f["times"]) == {"ring", "tree"}
    assert f["costs"]["ring"].latency_s == pytest.approx(40.6e-6, rel=1e-9)
    assert f["costs"]["tree"].latency_s == pytest.approx(31.5e-6, rel=1e-9)
    assert f["costs"]["tree"].bandwidth_s > f["costs"]["ring"].bandwidth_s
    print(f"4 MB on 8 A100s: ring {f['times']['ring'] * 1e6:.1f} us, tree {f['times']['tree'] * 1e6:.1f} us, spread {f['spread']:.3f}")
    assert f["spread"] < BUCKET_SAME and machine_bucket_answer(4e6, 32, "node", "dgx-a100") == "D"
    assert "no NVLink SHARP" in machine_bucket_explanations(4e6, 32, "node", "dgx-a100")["C"]


def test_bucket_cases_spread_the_key_over_the_four_options():
    """Edition 4 (issue 38 item 2): each option is right for three of the twelve cases; each machine
    has three keys, and inside a node three (across the job a small bucket is always the tree's);
    the same 4 MB bucket is NVLS's inside an H100 node and a tie inside an A100 one."""
    from collections import Counter, defaultdict

    keys, by_machine, by_group = Counter(), defaultdict(set), defaultdict(set)
    for machine, group, nbytes in BUCKET_CASES:
        for nodes in (32, 256):
            key = machine_bucket_answer(nbytes, nodes, group, machine)
            keys[key] += 1
            by_machine[machine].add(key)
            by_group[group].add(key)
    print(dict(keys))
    assert keys == {"A": 6, "B": 6, "C": 6, "D": 6}
    assert all(len(k) == 3 for k in by_machine.values()) and by_group == {"node": {"A", "C", "D"}, "job": {"B"}}, (by_machine, by_group)
    assert machine_bucket_answer(4e6, 32, "node", "dgx-h100") == "C" and machine_bucket_answer(4e6, 32, "node", "dgx-a100") == "D"


def test_the_tree_option_is_worded_by_placement_and_ranks_alike():
    """P7 (review 38bda0b): the tree option says "in one node" inside a node and "across nodes" over
    the job; both wordings sit second shortest among the options, so the wording does not mark the
    key (the tree is right only across the job); inside a node the reveal names NCCL's chain."""
    for group in ("node", "job"):
        options = bucket_options_v4(group)
        tree = next(o.label for o in options if o.key == "B")
        assert ("across nodes" in tree) == (group == "job") and ("in one node" in tree) == (group == "node")
        assert sorted(options, key=lambda o: len(o.label))[1].key == "B", [len(o.label) for o in options]
    assert "a chain through the 8 GPUs, 2 x 7 NVLink hops" in machine_bucket_explanations(256e3, 32, "node", "dgx-h100")["B"]


@pytest.mark.parametrize("n", STEPPER_RANKS)
def test_stepper_bytes_and_clock_equal_the_closed_form_at_every_step(n):
    m = 1e9
    for step in range(2 * (n - 1) + 1):
        s = ring_state(n, m, "nvlink4", step)
        assert s["sent_so_far"] == pytest.approx(step * m / n, rel=1e-12)  # one chunk M/N per step
        assert s["clock_s"] == pytest.approx(step * (NVLINK_HOP_S + m / n / NVLINK4_BYTES_PER_S), rel=1e-12)
        if step:
            assert s["link_bytes"] == pytest.approx([m / n] * n)
    assert s["sent_so_far"] == pytest.approx(2 * (n - 1) / n * m, rel=1e-12) == s["sent_total"]
    assert s["clock_s"] == pytest.approx(s["all_reduce_time_s"], rel=1e-12)
    assert all(h == n for row in s["holds"] for h in row)  # every rank holds every full sum


def test_stepper_clock_by_hand():
    """N = 4, 1 GB on NVLink 4: 6 steps of 3.4 us + 250 MB / 370 GB/s = 4.07445 ms."""
    assert abs(report("ring clock, 4 ranks, 1 GB (ms)", ring_state(4, 1e9, "nvlink4", 6)["clock_s"] * 1e3, 4.0744541)) < 1e-6


def test_the_notebooks_stepper_is_the_engines(app):
    outputs, defs = app.run(defs={**BOTH, **stepper(n=8, step=5)})
    view = defs["ring_view"]
    assert (view["n"], view["step"], view["phase"]) == (8, 5, "reduce-scatter")
    assert view["sent_so_far"] == pytest.approx(5 * 1e9 / 8)
    # step k (from 0) sends chunk (r - k) mod N from rank r: rank 0 gets chunk 7 - k from rank 7,
    # which holds k + 1 contributions; at the 5th step (k = 4) chunk 3, now summed over 6 ranks
    assert view["holds"][0][3] == 6 and view["holds"][0][2] == 1
    drawn = text_of(outputs)  # the ring's SVG as the page gets it: its title, and each rank's send on hover
    assert "Ring all-reduce, N = 8: step 5 of 14 (reduce-scatter)" in drawn
    for r in range(8):  # rank r sends chunk (r - 4) mod 8, one chunk of 1 GB / 8 = 125 MB
        assert f"GPU {r} to GPU {(r + 1) % 8}: chunk c{(r - 4) % 8}, 125.0 MB" in drawn


def test_submit_lands_in_the_ledger_and_the_grader_agrees(app, ledger_dir):
    import jsonschema

    from labs.grade import grade

    _, defs = app.run(defs={**BOTH, **stepper(n=8, step=14), "submit_button": Pressed()})
    doc = defs["submitted"]
    jsonschema.validate(doc, load_schema())
    step = doc["labs"]["08_collectives"]["ring"]
    assert step["inputs"] == {"n": 8, "nbytes": 1e9, "link": "nvlink4", "step": 14}
    assert step["outcomes"]["ring_correct"] and step["outcomes"]["bucket_correct"]
    assert doc["variants"]["08_collectives"]["settings"] == SETTING
    assert step["outcomes"]["bytes_sent_so_far"] == pytest.approx(1.75e9)
    assert step["outcomes"]["clock_s"] == pytest.approx(14 * (NVLINK_HOP_S + 1e9 / 8 / NVLINK4_BYTES_PER_S))
    path = next(ledger_dir.glob("*.json"))
    table, problems = grade([str(path)])
    row = table[(table.lab == "08_collectives")].iloc[0]
    assert not problems and row["status"] == "ok" and not row["tampered"] and row["right"] == 2
    tampered = json.loads(path.read_text())
    tampered["labs"]["08_collectives"]["ring"]["outcomes"]["clock_s"] = 1e-9
    bad = ledger_dir / "tampered" / path.name
    bad.parent.mkdir()
    bad.write_text(json.dumps(tampered))
    table, _ = grade([str(bad)])
    assert table[(table.lab == "08_collectives")].iloc[0]["tampered"]


def test_after_both_predictions_every_section_shows(app):
    text = text_of(app.run(defs=BOTH)[0])
    for heading in GATED[:5]:
        assert heading in text
    assert "Right." in text and "Right:" in text and "Not quite" not in text  # the bucket's option, the ring's number


# ---- the engine against published numbers -------------------------------------------------------
def test_busbw_at_large_messages_against_nccl(published):
    """Engine busbw at 8 GB against the measured curves (Azure ND H100 v5 NVLS 478.87, ND A100 v4
    231.58) and NVIDIA's ring figure (370 GB/s at 4 GB on 8 H100s, nccl-tests #212)."""
    h100, a100 = lb_curves("8 H100, one DGX"), lb_curves("8 A100, one DGX")
    nvls = measured_busbw("8 H100, one DGX")["curves"]["nvls"][0]
    ring = measured_busbw("8 A100, one DGX")["curves"]["ring"][0]
    i8 = int(abs(h100["nvls"]["sizes"] - 2**33).argmin())
    assert abs(report("H100 NVLS busbw at 8 GB (GB/s)", h100["nvls"]["busbw"][i8] / 1e9, nvls[2**33] / 1e9)) < 0.02
    assert abs(report("A100 ring busbw at 8 GB (GB/s)", a100["ring"]["busbw"][i8] / 1e9, ring[2**33] / 1e9)) < 0.02
    assert abs(report("H100 ring busbw at 4 GB (GB/s)", rails_rows()[0]["busbw"] / 1e9, published["nccl_h100_8gpu"]["outputs"]["ring_busbw_GBps"])) < 0.02


def test_busbw_falls_with_small_messages_as_measured():
    """Below ~100 MB the measured NVLS curve falls (172 GB/s at 8 MiB); the engine's falls too,
    within 30% from 8 MiB up, and is latency-bound at 1 KB."""
    curves = lb_curves("8 H100, one DGX", sizes=[2**23, 2**26, 2**30, 1e3])
    measured = measured_busbw("8 H100, one DGX")["curves"]["nvls"][0]
    for i, size in enumerate((2**23, 2**26, 2**30)):
        assert abs(report(f"H100 NVLS busbw at {size / 2**20:.0f} MiB", curves["nvls"]["busbw"][i] / 1e9, measured[size] / 1e9)) < 0.3
    assert curves["ring"]["busbw"][-1] < 0.01 * curves["ring"]["busbw"][2]


def test_rails_against_measured_nccl():
    """Two DGX H100 nodes: a ring over whole nodes ~380 GB/s (nccl-tests #309), one GPU per node
    ~47 GB/s per NDR NIC (nccl-tests #290: 46-48)."""
    one_node, whole, one_per_node = rails_rows()
    assert abs(report("2 x 8 H100 ring busbw (GB/s)", whole["busbw"] / 1e9, 380)) < 0.05
    assert abs(report("one GPU per node, one NDR NIC (GB/s)", one_per_node["busbw"] / 1e9, 47)) < 0.03
    assert (whole["nics"], one_per_node["nics"]) == (8, 1)


def test_nvls_algbw_is_the_published_275():
    """nccl-tests #212: NVLS busbw 480 GB/s is algbw 275 GB/s (x 2 x 7/8) on 8 H100s."""
    note = nvls_busbw_note()
    assert abs(report("NVLS algbw on 8 H100 (GB/s)", note["algbw"] / 1e9, 275)) < 0.01
    assert note["busbw"] > note["line"]  # above the 450 GB/s line rate: the switch adds


def test_algbw_and_busbw_factor():
    rows = {r["n"]: r for r in busbw_rows()}
    for n, factor in ((2, 1.0), (4, 1.5), (8, 1.75), (16, 1.875), (1024, 2046 / 1024)):
        assert rows[n]["factor"] == pytest.approx(factor)
        assert rows[n]["busbw"] == pytest.approx(rows[n]["algbw"] * factor)


def test_primitives_bytes_by_hand():
    rows = {r["primitive"]: r for r in primitive_rows()}
    assert rows["all-reduce"]["bytes_per_rank"] == pytest.approx(1.75e9)  # 2 x 7/8 x 1 GB
    assert rows["reduce-scatter"]["bytes_per_rank"] == rows["all-gather"]["bytes_per_rank"] == pytest.approx(0.875e9)
    assert rows["all-reduce"]["time_s"] == pytest.approx(rows["reduce-scatter"]["time_s"] + rows["all-gather"]["time_s"])


def test_parameter_server_loses_where_the_algebra_says():
    """Server on one NDR NIC (47 GB/s), workers on HDR (0.85 x 25 = 21.25 GB/s): the server
    takes N M / 47, the ring 2(N-1)/N M / 21.25; 21.25 N^2 > 94 (N - 1) first at N = 3. With NDR
    workers the ring's M / 47 at N = 2 already beats the server's 2M / 47. Seed 004: at N = 128
    the server receives 128x the gradient."""
    assert ps_crossover(1e9, "ib-hdr") == 3
    assert ps_crossover(1e9, "ib-ndr") == 2
    assert parameter_server_ingress_bytes(1e9, 128) == 128e9


def test_tp_across_nodes_is_the_cliff():
    """GPT-3 175B on 1,024 H100s: TP = 16 moves 2 x (15/16) / (2 x 7/8) per all-reduce and twice
    the micro-batches per DP rank (1,536 / 8 against / 16): 2.143x the TP bytes of TP = 8."""
    cliff = tp_cliff()
    assert cliff[16]["tp_bytes"] / cliff[8]["tp_bytes"] == pytest.approx(2 * (15 / 16) / (7 / 8), rel=1e-9)
    assert cliff[16]["tp_comm_s"] > 4 * cliff[8]["tp_comm_s"] and cliff[16]["mfu"] < cliff[8]["mfu"]


def test_nvl72_keeps_a_64_gpu_ring_on_nvlink():
    """NVLink 5: 679.61 GB/s ring busbw measured on a GB200 tray (hardware.LINKS["nvlink5"]); 8 DGX B200
    nodes: 8 NICs x 47 = 376 GB/s. The rack is the catalog's gb200-nvl72 preset, not a DGX B200 stretched."""
    row = next(r for r in nvl72_rows() if r["n"] == 64)
    assert abs(report("64-GPU ring busbw ratio, NVL72 / DGX B200", row["nvl72"] / row["dgx"], 679.61 / 376)) < 0.06
    rack = nvl72_cluster()
    assert (rack.name, rack.gpus, rack.domain_gpus, rack.gpus_per_node, rack.gpu.name) == ("gb200-nvl72", 72, 72, 4, "GB200")


def test_nvl72_nvls_against_the_measured_racks():
    """NCCL's pick on one and two GB200 NVL72 racks at 4 GiB against CoreWeave's nccl-tests rows
    (839.16 and 743.09 GB/s, kernel_benchmarks_v4.json), within 15% (test_collectives_v4's bound);
    on DGX B200 nodes the 64-GPU group stays under 2 x 8 NICs' worth and the rack wins by 2x."""
    rows = {r["n"]: r for r in nvl72_rows()}
    data = {r["id"]: r["value"] for r in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
    for n, racks in ((72, 1), (144, 2)):
        measured = data[f"nccl_gb200_nvl72_{racks}rack{'s' if racks > 1 else ''}_allreduce_4294967296"]
        assert rows[n]["measured"] == pytest.approx(measured * 1e9)
        assert abs(report(f"NVL72 x{racks} NCCL's pick busbw GB/s", rows[n]["nvl72_auto"] / 1e9, measured)) < 0.15
    assert rows[64]["nvl72_auto"] > 2 * rows[64]["dgx_auto"] and rows[8]["nvl72_auto"] == pytest.approx(rows[8]["dgx_auto"])
    conf = nvl72_confidence()
    assert conf["ring_busbw"] == pytest.approx(679.61e9) and conf["nvls_busbw"] == pytest.approx(834.57e9)
    assert "attention_flops" in conf["gpu_fields"]["GB200"] and conf["nvls_assumed_on_hgx"]


def test_nvl72_section_reads_the_catalog(app):
    """The rendered section: a real rack (18 trays of 4), the engine's NVLS and DGX figures at 64 GPUs,
    the measured rows, and what is still unconfirmed, named; no "catalog's Blackwell figures are unconfirmed"."""
    text = html.unescape(text_of(app.run(defs=BOTH)[0]))
    rows, conf = {r["n"]: r for r in nvl72_rows()}, nvl72_confidence()
    assert "18 trays (hosts) of 4 GPUs" in text and "one 72-GPU domain" in text
    assert f"<strong>{rows[64]['nvl72_auto'] / 1e9:.0f} GB/s</strong> against <strong>{rows[64]['dgx_auto'] / 1e9:.0f} GB/s</strong>" in text
    assert f"{rows[72]['measured'] / 1e9:.0f} GB/s" in text and f"{conf['nvls_busbw'] / 1e9:.0f} GB/s at 8 GB" in text
    assert "GB200's <code>attention_flops</code>" in text and "taken as the rack's measured one" in text
    assert conf["gpu_fields"]["GB200"] and "hbm_bytes" not in conf["gpu_fields"]["B200"]
    assert "Blackwell figures are unconfirmed" not in text and "(unconfirmed)" not in text


def test_seed_two_gpu_milestone():
    """seeds/001 week 21: 10 ms compute + 8 ms communication is 55% efficient; the 100M model's
    fp32 gradients (97.6M x 4 bytes) cross PCIe Gen4 (0.8 x 32 GB/s) once each way in a 2-GPU
    ring: 15.26 ms plus 15 buckets x (2 x 5.7 + 8.4) us of latency."""
    assert communication_efficiency(10, 8) == pytest.approx(10 / 18) and round(100 * communication_efficiency(10, 8)) == 56
    e = milestone_estimates("PCIe (2 x A100 PCIe)", 4, False)
    grads = e["params"] * 4
    by_hand = grads / 25.6e9 + 15 * (2 * 5.7e-6 + 8.4e-6)
    assert abs(report("100M model's fp32 all-reduce over PCIe (ms)", e["comm_s"] * 1e3, by_hand * 1e3)) < 1e-3
    nvlink = milestone_estimates("NVLink (2 x A100 SXM)", 4, False)
    assert nvlink["overhead"] < e["overhead"] / 4  # NVLink: 230 GB/s against PCIe's 25.6


def test_every_setup_has_its_measured_rows():
    assert set(measured_busbw("8 H100, one DGX")["curves"]) == {"nvls"} and set(measured_busbw("8 A100, one DGX")["curves"]) == {"ring"}
    assert set(LB_SETUPS) >= {"8 H100, one DGX", "8 A100, one DGX"}


def test_the_grader_refuses_what_the_stepper_cannot_show():
    from labs.grade import SPECS

    spec = SPECS[("08_collectives", "ring")]
    good = {"n": 8, "nbytes": 1e9, "link": "nvlink4", "step": 14}
    spec.check(good)
    for bad, name in (({"n": 64}, "n"), ({"step": 15}, "step"), ({"link": "ib-xdr"}, "link"), ({"nbytes": -1.0}, "nbytes"), ({"n": 1, "step": 0}, "n")):
        with pytest.raises(ValueError, match=name):
            spec.check({**good, **bad})
