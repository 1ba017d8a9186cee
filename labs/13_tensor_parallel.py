import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 13: Inside tensor parallelism",
)

with app.setup:
    import marimo as mo
    import plotly.graph_objects as go

    from labs.core import ENGINE_VERSION
    from labs.core import ui
    from labs.core.engine.models import Model
    from labs.core.scenarios.prose import seed_named, sp_regather
    from labs.core.scenarios.lab13 import (
        COUNTED_WIDTHS,
        ENGINE_WIDTHS,
        RANKS,
        SEED_CLAIMS,
        SEED_SHAPE,
        SPLIT_SHAPE,
        SWEEP_PLATFORM_NAMES,
        SWEEP_PLATFORMS,
        counted_bytes_per_token,
        engine_width_row,
        platform_sweeps,
        platform_unconfirmed,
        scaling_book_threshold,
        seed_check,
        seed_estimate,
        split_outcomes,
        split_report,
    )
    from labs.core.style import COLORS

    LAB = "13_tensor_parallel"
    BLOCK_LABELS = {"MLP, GeLU": "mlp-gelu", "MLP, SwiGLU": "mlp-swiglu", "attention": "attention"}
    GPU_LABELS = {"H100 SXM": "h100", "B200": "b200"}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 13 · Inside tensor parallelism

    Megatron-LM splits each transformer layer's matrices across GPUs so that every GPU holds a
    slice and one collective per block puts the result back together. Here the split is computed:
    a real MLP and attention block in NumPy, cut over 2, 4 or 8 simulated ranks, every message
    built and its bytes counted. Then the engine takes the same layer to 64 GPUs and finds where
    tensor parallelism stops paying.

    **Before you start:** Shoeybi et al. 2019, *Megatron-LM*, Sec. 3; Korthikanti et al. 2022,
    *Reducing Activation Recomputation*, Sec. 4.2.2 (sequence parallelism); the scaling book's
    training chapter, "Tensor Parallelism".
    """))
    return


@app.cell
def _():
    student_input = ui.student_identity()
    student_input
    return (student_input,)


# The PIN in a cell of its own: typing it re-runs the commits and the submit, never a question
# (the questions are drawn from the name), so a choice not yet committed stays chosen.
@app.cell
def _():
    pin_input = ui.student_pin()
    pin_input
    return (pin_input,)


@app.cell
def _(pin_input, student_input):
    identity = ui.identity(student_input.value, pin_input.value)
    return (identity,)


# Live lecture (labs.core.lecture): on a class server the instructor can hold a question's answer;
# the clock ticks only there, and the commit cells re-run only when a hold starts or ends.
@app.cell
def _():
    lecture_clock, held_now, set_held = ui.live_lecture(LAB)
    lecture_clock
    return held_now, lecture_clock, set_held


@app.cell
def _(held_now, lecture_clock, set_held):
    ui.poll_lecture(LAB, lecture_clock, held_now, set_held)
    return


# Your lab's numbers are drawn from your id (labs.variants): the TP degree and batch of the
# message question, the width and sequence of the scaling question, the model of the sweep.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    settings = variant.settings
    return settings, variant


@app.cell(hide_code=True)
def _():
    ui.stakeholder_message(
        "Course assistant",
        f"{seed_named('001')}: its week-23 milestone says tensor parallelism over PCIe costs our {SEED_CLAIMS['layers']}-layer, d_model "
        f"{SEED_CLAIMS['hidden']} model about **{SEED_CLAIMS['overhead']:.0%}**, and that it gets cheaper as models grow because "
        f"'communication scales quadratically while compute scales cubically'. Is it right, what does a TP rank actually "
        "send, and where does tensor parallelism stop paying?",
    )
    return


@app.cell
def _(variant):
    ring_question = ui.variant_question(variant.questions["ring"])
    ring_question
    return (ring_question,)


@app.cell
def _():
    ring_commit_buttons = ui.commit_buttons()
    return (ring_commit_buttons,)


@app.cell
def _(held_now, identity, ring_commit_buttons, ring_question, variant):
    _row, ring_committed = ui.commit_prediction(identity, LAB, "ring", ring_question, ring_commit_buttons, variant=variant, held=held_now())
    _row
    return (ring_committed,)


# The verdict right under its question (newcomer 38bda0b: the verdicts sat at the page's bottom)
@app.cell(hide_code=True)
def _(ring_committed, variant):
    ui.gate(ring_committed, what="the answer on the message size")
    ui.variant_reveal(ring_committed, variant.questions["ring"])
    return


@app.cell
def _(variant):
    scaling_question = ui.variant_question(variant.questions["scaling"])
    scaling_question
    return (scaling_question,)


@app.cell
def _():
    scaling_commit_buttons = ui.commit_buttons()
    return (scaling_commit_buttons,)


@app.cell
def _(held_now, identity, scaling_commit_buttons, scaling_question, variant):
    _row, scaling_committed = ui.commit_prediction(identity, LAB, "scaling", scaling_question, scaling_commit_buttons, variant=variant, held=held_now())
    _row
    return (scaling_committed,)


@app.cell(hide_code=True)
def _(scaling_committed, variant):
    ui.gate(scaling_committed, what="the answer on scaling")
    ui.variant_reveal(scaling_committed, variant.questions["scaling"])
    return


@app.cell
def _(variant):
    tp_question = ui.variant_question(variant.questions["tp_best"])
    tp_question
    return (tp_question,)


@app.cell
def _():
    tp_commit_buttons = ui.commit_buttons()
    return (tp_commit_buttons,)


@app.cell
def _(held_now, identity, tp_commit_buttons, tp_question, variant):
    _row, tp_committed = ui.commit_prediction(identity, LAB, "tp_best", tp_question, tp_commit_buttons, variant=variant, held=held_now())
    _row
    return (tp_committed,)


@app.cell(hide_code=True)
def _(tp_committed, variant):
    ui.gate(tp_committed, what="the answer on the TP degree")
    ui.variant_reveal(tp_committed, variant.questions["tp_best"])
    return


@app.cell(hide_code=True)
def _():
    mo.md(rf"""
    ## 1 · Megatron's split, computed

    The block is $x + \mathrm{{Block}}(x)$ on {SPLIT_SHAPE.batch} sequences of {SPLIT_SHAPE.seq} tokens,
    $d$ = {SPLIT_SHAPE.hidden}, {SPLIT_SHAPE.heads} heads. The first linear is split by columns (each rank
    holds $f/n$ hidden units, or $a/n$ heads), the second by rows, so each rank's output is a partial
    sum. Operator $g$ all-reduces the partial sums forward and passes gradients through backward;
    operator $f$ passes $x$ through forward and all-reduces the input gradients backward. GeLU,
    SwiGLU and each head's attention stay local. With sequence parallelism the same arrays are
    re-cut along the sequence outside the split: $f$ becomes an all-gather, $g$ a reduce-scatter.
    Every message below is an array one rank handed its ring neighbour, counted in bytes (fp64 here,
    so the comparison is exact to rounding).
    """)
    return


# Each instrument is created in a cell that reads nothing, so committing or changing a prediction
# never resets it; the cells below gate only what they display.
@app.cell
def _():
    block_dropdown = mo.ui.dropdown(options=BLOCK_LABELS, value="MLP, GeLU", label="Block")
    ranks_slider = mo.ui.slider(steps=list(RANKS), value=4, label="Ranks n", show_value=True, debounce=True)
    sp_checkbox = mo.ui.checkbox(value=False, label="Sequence parallelism")
    return block_dropdown, ranks_slider, sp_checkbox


@app.cell
def _(block_dropdown, ranks_slider, ring_committed, sp_checkbox):
    ui.gate(ring_committed, what="the split")
    split = split_report(block_dropdown.value, ranks_slider.value, sp_checkbox.value)
    _calls = [
        {"collective": _c["op"], "pass": "forward" if _i < split["forward_calls"] else "backward",
         "payload": f"{_c['payload_bytes'] / 1e3:,.1f} kB", "each rank sent": f"{max(_c['sent_per_rank']) / 1e3:,.1f} kB"}
        for _i, _c in enumerate(split["calls"])
    ]
    mo.vstack(
        [
            mo.hstack([block_dropdown, ranks_slider, sp_checkbox], justify="start", wrap=True),
            ui.metric_cards(
                {
                    "largest |split - unsplit|, output": f"{split['output_diff']:.1e}",
                    "same, input gradient": f"{split['grad_input_diff']:.1e}",
                    "same, weight gradients": f"{split['grad_weight_diff']:.1e}",
                    "bytes each rank sent (fwd + bwd)": f"{split['sent_per_rank'] / 1e3:,.1f} kB",
                    "block input + output held per rank": f"{split['held_bytes'] / 1e3:,.1f} kB of {split['held_unsplit_bytes'] / 1e3:,.1f} kB",
                }
            ),
            ui.static_table(_calls) if _calls and ranks_slider.value > 1 else mo.md("One rank: nothing to send."),
        ]
    )
    return (split,)


@app.cell
def _(ring_committed):
    ui.gate(ring_committed)
    seed = seed_check()
    return (seed,)


@app.cell(hide_code=True)
def _(ring_committed, seed):
    ui.gate(ring_committed, what="seed 001's milestone, checked")
    _e = seed["estimate"]
    _rows = [
        {"quantity": "collectives in one forward pass", "seed 001": f"{SEED_CLAIMS['comms']}", "computed": f"{seed['comms']} (counted on the split blocks: 2 a layer)"},
        {"quantity": "payload of each", "seed 001": f"~{SEED_CLAIMS['mb_each']} MB", "computed": f"{seed['payload_bytes'] / 1e6:.2f} MB = {SEED_SHAPE.batch} x {SEED_SHAPE.seq} x {SEED_SHAPE.hidden} x 2 bytes, counted"},
        {"quantity": "sent by each rank, per all-reduce", "seed 001": "—", "computed": f"{seed['sent_per_rank'] / 1e6:.2f} MB (ring, n = {SEED_CLAIMS['tp']}: 2(n-1)/n = 1 payload)"},
        {"quantity": "moved per forward pass", "seed 001": f"~{SEED_CLAIMS['mb_total']} MB", "computed": f"{seed['total_bytes'] / 1e6:.1f} MB"},
        {"quantity": "time on PCIe", "seed 001": f"~{SEED_CLAIMS['comm_ms']} ms at ~{SEED_CLAIMS['pcie_gb_per_s']} GB/s",
         "computed": f"{seed['pcie_forward_s'] * 1e3:.1f} ms at {seed['link_bytes_per_s'] / 1e9:.1f} GB/s achieved ({seed['link']})"},
        {"quantity": "forward pass", "seed 001": f"{SEED_CLAIMS['forward_ms']} ms (assumed)", "computed": f"the engine's whole step, forward and backward: {_e.time.compute * 1e3:.1f} ms of compute"},
        {"quantity": "TP communication's share", "seed 001": f"{SEED_CLAIMS['overhead']:.0%}", "computed": f"{seed['engine_tp_share']:.0%} of the engine's step ({_e.time.tp_comm * 1e3:.1f} ms of {_e.step_time_s * 1e3:.1f} ms)"},
    ]
    mo.vstack(
        [
            mo.md(
                "## 2 · Seed 001's milestone, checked\n\n"
                "The bytes hold: two all-reduces a layer forward, each the size of the activations. The overhead does not. "
                f"The seed names no GPU; on an {_e.cluster.gpu.name} (the engine's choice) the model computes its whole step in "
                f"{_e.time.compute * 1e3:.1f} ms, its forward about a third of that, {_e.time.compute / 3 * 1e3:.1f} ms (the backward does "
                f"twice the forward's FLOPs), not the {SEED_CLAIMS['forward_ms']} ms the seed assumes. Forward against forward, the "
                f"{seed['pcie_forward_s'] * 1e3:.1f} ms of all-reduces over PCIe are {seed['pcie_forward_s'] / (seed['pcie_forward_s'] + _e.time.compute / 3):.0%} "
                f"of the forward; over the whole step, where the backward sends as much again, {seed['engine_tp_share']:.0%}: "
                f"not {SEED_CLAIMS['overhead']:.0%} either way."
            ),
            ui.static_table(_rows),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3 · Quadratic against cubic? Count it per token

    Per token, a layer's TP collectives move a few copies of its $d$-wide activation: linear in $d$.
    Its GEMMs do $24\,d^2$ FLOPs per token forward: quadratic; attention's $4\,s\,d$ beside them
    is linear, and long sequences make it the larger part. Per layer and step, both are multiplied
    by the same tokens, so the ratio FLOPs / bytes grows at most linearly with $d$. "Quadratic
    against cubic" is what one sequence shows only when its length grows with $d$ too ($s\,d$ bytes,
    $s\,(24\,d^2 + 4\,s\,d)$ FLOPs), and the ratio is still linear. The dots are counted on NumPy
    arrays, the lines are the engine's.
    """)
    return


@app.cell
def _():
    width_slider = mo.ui.slider(steps=list(ENGINE_WIDTHS), value=512, label="d_model", show_value=True, debounce=True)
    return (width_slider,)


@app.cell
def _(scaling_committed):
    ui.gate(scaling_committed)
    width_rows = [engine_width_row(_d) for _d in ENGINE_WIDTHS]
    counted_rows = {_d: counted_bytes_per_token(_d) for _d in COUNTED_WIDTHS}
    return counted_rows, width_rows


@app.cell
def _(counted_rows, scaling_committed, width_rows, width_slider):
    ui.gate(scaling_committed, what="the scaling instrument")
    _now = next(_r for _r in width_rows if _r["hidden"] == width_slider.value)
    _fig = width_figure(width_rows, counted_rows, width_slider.value)
    mo.vstack(
        [
            width_slider,
            ui.metric_cards(
                {
                    "TP bytes per token and layer (fwd + bwd)": f"{_now['tp_bytes_per_token_layer']:,.0f} B",
                    "FLOPs per token and layer (fwd + bwd)": f"{_now['flops_per_token_layer']:,.3g}",
                    "FLOPs per byte sent": f"{_now['flops_per_token_layer'] / _now['tp_bytes_per_token_layer']:,.0f}",
                }
            ),
            _fig,
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4 · Where TP stops

    64 GPUs, DP filling what TP leaves, 128 sequences a step, sequence parallelism on, on three
    platforms from the catalog: DGX H100 and DGX B200 (8-GPU nodes, NVLink inside a node, InfiniBand
    between) and a GB200 NVL72 rack (16 of its 18 trays of 4 GPUs, all 64 in one 72-GPU NVLink
    domain, so a TP group of up to 64 never touches a NIC). Switch Transformer Engine's TP overlap
    (collectives pipelined with the GEMMs) on or off. The engine only overlaps TP inside an NVLink
    domain. TP must divide the heads, and Megatron-Core, the stack this
    lab follows, also needs TP to divide the query groups (the K/V heads): past them it refuses the
    layout. The table prices those wider points anyway, as inference engines run them (each rank
    holding a replicated K/V head), and marks them.
    """)
    return


@app.cell
def _():
    gpu_dropdown = mo.ui.dropdown(options=GPU_LABELS, value="H100 SXM", label="GPU of the 8-GPU nodes")
    overlap_checkbox = mo.ui.checkbox(value=True, label="TP overlap (Transformer Engine)")
    return gpu_dropdown, overlap_checkbox


@app.cell
def _(gpu_dropdown, overlap_checkbox, settings, tp_committed):
    ui.gate(tp_committed, what="the TP sweep")
    sweeps = platform_sweeps(settings["model"], overlap_checkbox.value)
    _dgx = next(_p for _p, (_g, _d, _) in SWEEP_PLATFORMS.items() if (_g, _d) == (gpu_dropdown.value, "nodes"))
    _book = scaling_book_threshold(settings["model"], gpu_dropdown.value)
    _rack_book = scaling_book_threshold(settings["model"], SWEEP_PLATFORMS["gb200-nvl72"][2])
    _model = Model.get(settings["model"])
    _rows = [
        {"TP": _a["tp"], f"{SWEEP_PLATFORM_NAMES[_dgx]}: step": f"{_a['step_s']:.1f} s", "TP comm exposed": f"{_a['tp_comm_s']:.1f} s",
         "memory per GPU": f"{_a['memory_gb']:.0f} GB" + ("" if _a["fits"] else " (does not fit)"),
         f"{SWEEP_PLATFORM_NAMES['gb200-nvl72']}: step": f"{_b['step_s']:.1f} s", "TP comm exposed ": f"{_b['tp_comm_s']:.1f} s",
         "memory per GPU ": f"{_b['memory_gb']:.0f} GB" + ("" if _b["fits"] else " (does not fit)"), "K/V heads per rank": f"{_a['kv_heads_per_rank']:g}",
         "Megatron-Core": (f"refuses: {_a['kv_heads']} query groups; K/V replicated: +{_a['kv_replication_gb']:.1f} GB, +{_a['kv_replication_s']:.2f} s"
                           if _a["kv_replicated"] else "builds")}
        for _a, _b in zip(sweeps[_dgx], sweeps["gb200-nvl72"])
    ]
    mo.vstack(
        [
            mo.hstack([gpu_dropdown, overlap_checkbox], justify="start"),
            sweep_figure(sweeps),
            ui.static_table(_rows),
            mo.md(
                f"**The scaling book's threshold.** An MLP's forward does $4BDF/(YC)$ of math and all-gathers plus "
                f"reduce-scatters $B \\times D$ bf16 activations, $4BD/W$; it stays compute-bound while $Y < F\\,W/C$. For "
                f"{_model.name} ($F$ = {_book['ffn']:,}) on this GPU ($C$ = {_book['peak_flops'] / 1e12:,.0f} TFLOP/s bf16, "
                f"$W$ = {_book['link_bytes_per_s'] / 1e9:,.0f} GB/s one way): $C/W$ = {_book['intensity']:,.0f}, so "
                f"$Y$ < **{_book['max_tp']:.1f}**. On the rack's GB200, $C$ = {_rack_book['peak_flops'] / 1e12:,.0f} TFLOP/s and "
                f"$W$ = {_rack_book['link_bytes_per_s'] / 1e9:,.0f} GB/s: $C/W$ = {_rack_book['intensity']:,.0f}, $Y$ < "
                f"**{_rack_book['max_tp']:.1f}**, "
                + ("lower: the matmul rate grew more than NVLink's bandwidth. " if _rack_book["max_tp"] < _book["max_tp"]
                   else "no lower: NVLink's bandwidth grew as much as the matmul rate. ")
                + "It assumes perfect overlap, peak matmuls, NVLink bandwidth for every rank and no attention or latency: "
                "compare it with the rack's curve, where the exposed TP time starts to grow.\n\n"
                + "The curves' compute rests in part on constants the catalog marks unconfirmed: "
                + "; ".join(f"{_g}'s " + ", ".join(f"`{_f}`" for _f in _fs) for _g, _fs in platform_unconfirmed().items() if _fs)
                + " (`tests/test_unconfirmed.py` lists them); NVLink 5's bandwidth is measured."
            ),
        ]
    )
    return (sweeps,)


@app.cell(hide_code=True)
def _(ring_committed, scaling_committed, tp_committed):
    ui.gate(ring_committed, scaling_committed, tp_committed, what="the equations")
    _re = sp_regather(max(RANKS))
    ui.math_peek(
        "The equations behind tensor parallelism",
        r"""
    MLP: $Y = \mathrm{GeLU}(X A)\,B$ with $A = [A_1 \dots A_n]$ by columns, $B = [B_1; \dots; B_n]$ by
    rows: $Y = \sum_r \mathrm{GeLU}(X A_r)\,B_r$, one all-reduce ($g$). Backward:
    $\partial X = \sum_r \partial H_r A_r^\top$, one all-reduce ($f$).

    Attention: heads $1..a$ split $a/n$ per rank; $Q, K, V$ column-split, the output projection
    row-split: one all-reduce forward, one backward.

    Ring all-reduce of $M$ bytes over $n$ ranks: each sends $2\frac{n-1}{n}M$; reduce-scatter and
    all-gather $\frac{n-1}{n}M$ each, so SP moves the same bytes as plain TP, as Korthikanti et al.
    count them. """
        + f"""Megatron-Core and Transformer Engine keep only the sequence shard of the QKV and
    FC1 inputs and all-gather each again in the backward for its weight gradient (beside the
    data-gradient GEMM, exposed only where it outlasts it): {_re['megatron_calls']} collectives a layer instead of
    {_re['calls']}, {_re['ratio']:.2f}x the bytes, which the engine counts in the sweep above.
    """
        + r"""
    Per token and layer, forward: bytes $\propto d$ (4 collectives fwd + bwd of $2d$ bytes), FLOPs
    $24 d^2 + 4 s d$: the ratio grows as $d$.

    Scaling book: $T_{math} = \frac{4BDF}{YC}$, $T_{comms} = \frac{4BD}{W}$: compute-bound while $Y < FW/C$.
    """,
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    block_dropdown,
    gpu_dropdown,
    identity,
    overlap_checkbox,
    ranks_slider,
    ring_committed,
    scaling_committed,
    sp_checkbox,
    submit_button,
    tp_committed,
    variant,
    width_slider,
):
    ui.gate(ring_committed, held=(scaling_committed, tp_committed))
    _inputs = {"block": block_dropdown.value, "ranks": ranks_slider.value, "sequence_parallel": sp_checkbox.value, "width": width_slider.value,
               "gpu": gpu_dropdown.value, "overlap": overlap_checkbox.value}
    _pred = {"ring": ring_committed.answer, "scaling": scaling_committed.answer, "tp_best": tp_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, "split", _inputs, _pred, split_outcomes, "the tensor-parallel settings", variant)]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _(ring_committed, scaling_committed, tp_committed):
    ui.gate(ring_committed, scaling_committed, tp_committed, what="the key takeaways")
    mo.md(r"""
    ## Key takeaways

    - Column-then-row splitting makes one all-reduce per block forward and one backward; the split
      result equals the unsplit one to rounding.
    - A ring all-reduce sends $2(n-1)/n$ of the payload from each rank; sequence parallelism sends
      the same bytes as a reduce-scatter plus an all-gather in the paper's count (Megatron-Core adds
      a backward re-gather of the QKV and FC1 inputs), and stops replicating the activations
      outside the split.
    - Per token, TP traffic is linear in $d$ and the GEMMs' FLOPs quadratic (attention's linear):
      larger models make TP relatively cheaper, at most linearly.
    - Past the NVLink domain TP loses its overlap and its step grows; inside a large domain it goes
      further, until its exposed traffic outgrows the compute it splits.

    **Back to:** Lab 05, Act II (TP 8 or 16 for GPT-3 175B) and Lab 08 (the ring, step by step).
    """)
    return


@app.cell
def _(ring_committed, scaling_committed, submitted, tp_committed):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "message prediction": ring_committed.describe(),
            "scaling prediction": scaling_committed.describe(),
            "TP prediction": tp_committed.describe(),
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def width_figure(rows, counted, marker):
    """Bytes and FLOPs per token and layer against d_model, log-log: the engine's lines, the counted dots."""
    _fig = go.Figure()
    _d = [_r["hidden"] for _r in rows]
    _fig.add_trace(go.Scatter(x=_d, y=[_r["tp_bytes_per_token_layer"] for _r in rows], name="TP bytes sent (engine)", line=dict(color=COLORS["orange"])))
    _fig.add_trace(go.Scatter(x=_d, y=[_r["flops_per_token_layer"] for _r in rows], name="FLOPs (engine)", line=dict(color=COLORS["blue"])))
    _fig.add_trace(go.Scatter(x=list(counted), y=[4 * _v for _v in counted.values()], mode="markers", name="TP bytes, counted on arrays (4 all-reduces)",
                              marker=dict(color=COLORS["red"], size=9)))
    _fig.add_shape(type="line", yref="y domain", y0=0, y1=1, xref="x", x0=marker, x1=marker, line=dict(color=COLORS["muted"], dash="dash"))
    _fig.update_xaxes(type="log", title="d_model")
    _fig.update_yaxes(type="log", title="per token and layer")
    _fig.update_layout(height=340, margin=dict(t=30))
    return _fig


@app.function
def sweep_figure(sweeps):
    """Step time against the TP degree, one line per platform of 64 GPUs; hollow where it does not fit."""
    _fig = go.Figure()
    _colors = {"dgx-h100": COLORS["orange"], "dgx-b200": COLORS["green"], "gb200-nvl72": COLORS["blue"]}
    for _name, _rows in sweeps.items():
        _fig.add_trace(go.Scatter(
            x=[_r["tp"] for _r in _rows], y=[_r["step_s"] for _r in _rows], name=SWEEP_PLATFORM_NAMES[_name], line=dict(color=_colors[_name]),
            marker=dict(size=9, symbol=["circle" if _r["fits"] else "circle-open" for _r in _rows]),
        ))
    _fig.update_xaxes(type="log", title="TP degree", tickvals=[_r["tp"] for _r in next(iter(sweeps.values()))])
    _fig.update_yaxes(title="step time (s)")
    _fig.update_layout(height=340, margin=dict(t=30))
    return _fig


if __name__ == "__main__":
    app.run()
