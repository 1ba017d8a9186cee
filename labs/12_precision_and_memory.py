import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 12: Precision and memory, computed on real numbers",
)

with app.setup:
    import math

    import marimo as mo
    import plotly.graph_objects as go

    from labs.core import ENGINE_VERSION
    from labs.core import charts, ui
    from labs.core.engine import blockscale
    from labs.core.engine.blockscale import MX_BLOCK, NVFP4_BLOCK, element_grid
    from labs.core.engine.blockscale import activation_rows as block_activation_rows
    from labs.core.engine.blockscale import gradient_rows as block_gradient_rows
    from labs.core.engine.hardware import GB
    from labs.core.engine.precision import FORMATS, TILE
    from labs.core.scenarios.lab12 import (
        ACTIVATION_SHAPE,
        ACCUMULATION_CASE,
        ACCUMULATION_KS,
        ACCUMULATION_STEPS,
        GRADIENT_SAMPLE,
        LOSS_SCALE_RANGE,
        OUTLIER_SCALES,
        accumulation_estimates,
        accumulation_no_sync,
        ACCUMULATION_ROWS,
        ACCUMULATOR_LABELS,
        DEEPSEEK_ACCUMULATION,
        accumulation_rows,
        bytes_rows,
        fp8_case,
        fp8_estimates,
        format_rows,
        format_decades,
        fp8_rows,
        loss_scale_curves,
        loss_scale_rows,
        memory_rows,
        precision_outcomes,
        recompute_rows,
        recompute_setting,
        safe_loss_scales,
        scaling_rows,
    )
    from labs.core.style import COLORS

    LAB = "12_precision_and_memory"


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 12 · Precision and memory, computed on real numbers

    What does a number format keep of a gradient, and what does FP8 buy a training step? The
    small-scale half of this lab casts real arrays through bf16, fp16 and the two FP8 formats
    (`ml_dtypes`, the NumPy dtypes JAX uses) and measures what is lost; the at-scale half asks the
    engine what the same choices cost a training run on hundreds of GPUs.

    **Before you start:** Micikevicius et al. 2018, *Mixed Precision Training*, Sec. 3; Micikevicius
    et al. 2022, *FP8 Formats for Deep Learning*; DeepSeek-V3 technical report Sec. 3.3 (FP8 training);
    Korthikanti et al. 2022, *Reducing Activation Recomputation*, Sec. 4-5.
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


# Your lab's numbers are drawn from your id (labs.variants): the gradient sample and the layout
# whose FP8 step is priced are yours, and so is the order of the options.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    settings = variant.settings
    return settings, variant


@app.cell(hide_code=True)
def _(settings):
    _e = fp8_estimates(settings)
    _model, _cluster = fp8_case(settings)
    _message = ui.stakeholder_message(
        "Training lead",
        f"Our {_model.name} run on {_cluster.gpus} H100s (software stack `{_e['bf16'].plan.stack}`) trains in bf16 at **{_e['bf16'].mfu:.0%} MFU**, "
        f"{_e['bf16'].step_time_s:.1f} s a step. The vendor says FP8 tensor cores do **{_cluster.gpu.fp8_flops / _cluster.gpu.bf16_flops:.0f}x** "
        "the FLOPs. One colleague wants to switch to fp16 to save memory, another says FP8 needs a recipe we do not "
        "have, and a third wants to turn recomputation off because it 'costs a third of the FLOPs'. What does each "
        "format keep, and what would each change buy us?",
    )
    mo.vstack([_message, ui.published_beside(_e["bf16"])])
    return


@app.cell
def _(variant):
    underflow_question = ui.variant_question(variant.questions["underflow"])
    underflow_question
    return (underflow_question,)


@app.cell
def _():
    underflow_commit_buttons = ui.commit_buttons()
    return (underflow_commit_buttons,)


@app.cell
def _(held_now, identity, underflow_commit_buttons, underflow_question, variant):
    _row, underflow_committed = ui.commit_prediction(identity, LAB, "underflow", underflow_question, underflow_commit_buttons, variant=variant, held=held_now())
    _row
    return (underflow_committed,)


# The verdict right under its question (newcomer 38bda0b: the verdicts sat at the page's bottom)
@app.cell(hide_code=True)
def _(underflow_committed, variant):
    ui.gate(underflow_committed, what="the answer on underflow")
    ui.variant_reveal(underflow_committed, variant.questions["underflow"])
    return


@app.cell
def _(variant):
    recompute_question = ui.variant_question(variant.questions["recompute"])
    recompute_question
    return (recompute_question,)


@app.cell
def _():
    recompute_commit_buttons = ui.commit_buttons()
    return (recompute_commit_buttons,)


@app.cell
def _(held_now, identity, recompute_commit_buttons, recompute_question, variant):
    _row, recompute_committed = ui.commit_prediction(identity, LAB, "recompute", recompute_question, recompute_commit_buttons, variant=variant, held=held_now())
    _row
    return (recompute_committed,)


@app.cell(hide_code=True)
def _(recompute_committed, variant):
    ui.gate(recompute_committed, what="the answer on recomputation")
    ui.variant_reveal(recompute_committed, variant.questions["recompute"])
    return


@app.cell
def _(variant):
    fp8_question = ui.variant_question(variant.questions["fp8"])
    fp8_question
    return (fp8_question,)


@app.cell
def _():
    fp8_commit_buttons = ui.commit_buttons()
    return (fp8_commit_buttons,)


@app.cell
def _(fp8_commit_buttons, fp8_question, held_now, identity, variant):
    _row, fp8_committed = ui.commit_prediction(identity, LAB, "fp8", fp8_question, fp8_commit_buttons, variant=variant, held=held_now())
    _row
    return (fp8_committed,)


@app.cell(hide_code=True)
def _(fp8_committed, variant):
    ui.gate(fp8_committed, what="the answer on FP8")
    ui.variant_reveal(fp8_committed, variant.questions["fp8"])
    return


@app.cell(hide_code=True)
def _(underflow_committed):
    ui.gate(underflow_committed, what="the formats")
    ui.static_table(
        [
            {
                "format": _r["format"], "bytes": _r["bytes"], "exponent bits": _r["exponent bits"], "mantissa bits": _r["mantissa bits"],
                "largest": f"{_r['largest']:.4g}", "smallest normal": f"{_r['smallest normal']:.3g}", "smallest subnormal": f"{_r['smallest subnormal']:.3g}",
            }
            for _r in format_rows()
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1 · What a cast keeps: underflow and loss scaling

    The sample is your variant's gradients. Multiply them by the loss scale $S = 2^k$ before the cast,
    divide after (what the optimizer does with a scaled loss), and count what each format flushes to
    zero, what overflows, and the median relative error of the rest.
    """)
    return


# The four instruments the ledger records are created in one cell that reads nothing, so
# committing or changing a prediction never resets them; the cells below gate only what they
# display. The submit reads their setting through precision_inputs() when pressed: a move re-runs
# the one cell that shows its instrument, not the submit too.
@app.cell
def _():
    loss_scale_slider = mo.ui.slider(start=LOSS_SCALE_RANGE[0], stop=LOSS_SCALE_RANGE[1], step=1, value=0, label="Loss scale: log2 S", show_value=True, debounce=True)
    outlier_slider = mo.ui.slider(steps=list(OUTLIER_SCALES), value=1000, label="Outlier channels are this many times larger", show_value=True, debounce=True)
    k_slider = mo.ui.slider(steps=list(ACCUMULATION_KS), value=4096, label="Dot-product length K", show_value=True, debounce=True)
    steps_slider = mo.ui.slider(steps=list(ACCUMULATION_STEPS), value=8, label="Accumulation steps (micro-batches per optimizer step)", show_value=True, debounce=True)
    # each shown by a gated cell through a copy of its HTML (mo.Html, not the element, which a move
    # would re-run that cell for): a move re-draws no slider
    loss_scale_panel, outlier_panel, k_panel, steps_panel = (mo.Html(_s.text) for _s in (loss_scale_slider, outlier_slider, k_slider, steps_slider))

    def precision_inputs() -> dict:
        return {"log2_loss_scale": loss_scale_slider.value, "outlier_scale": outlier_slider.value, "accumulation_k": k_slider.value,
                "accumulation_steps": steps_slider.value}
    return (
        k_panel,
        k_slider,
        loss_scale_panel,
        loss_scale_slider,
        outlier_panel,
        outlier_slider,
        precision_inputs,
        steps_panel,
        steps_slider,
    )


# The curves once per commit (seconds of work), and the slider; the gate's note shows here until then.
@app.cell
def _(loss_scale_panel, settings, underflow_committed):
    ui.gate(underflow_committed, what="the loss-scale instrument")
    loss_curves = loss_scale_curves(settings)
    fp16_safe = safe_loss_scales(settings, "fp16")
    e5m2_safe = safe_loss_scales(settings, "e5m2")
    loss_scale_panel
    return e5m2_safe, fp16_safe, loss_curves


# The slider's table and chart in one cell: a loss-scale move re-runs one cell here, not two.
@app.cell
def _(e5m2_safe, fp16_safe, loss_curves, loss_scale_slider, settings):
    _rows = loss_scale_rows(settings, loss_scale_slider.value)
    _table = ui.static_table(
        [
            {"format": _r["format"], "flushed to zero": f"{_r['flushed']:.2%}", "overflowed": f"{_r['overflow']:.2%}", "median relative error (kept)": f"{_r['median_rel_error']:.2e}"}
            for _r in _rows
        ]
    )
    _fig = shares_figure(loss_curves, loss_scale_slider.value)
    _safe = f"2^{fp16_safe[0]} to 2^{fp16_safe[-1]}" if fp16_safe else "none of them"
    _span = settings["grad_high_exp"] - settings["grad_low_exp"]
    _fp8 = (f"E5M2 keeps them all only at 2^{e5m2_safe[0]} to 2^{e5m2_safe[-1]}" if e5m2_safe else "no single scale keeps them all in E5M2")
    _decades = f"E4M3 spans {format_decades('e4m3'):.1f} decades, E5M2 {format_decades('e5m2'):.1f}, the sample {_span}"
    mo.vstack(
        [
            mo.md(f"**S = 2^{loss_scale_slider.value} = {2.0 ** loss_scale_slider.value:,.0f}**"),
            _table,
            _fig,
            mo.md(
                f"For fp16 the scales that neither flush nor overflow any of the {GRADIENT_SAMPLE:,} gradients are **{_safe}**: "
                "the sample spans more decades than fp16 holds without scaling, and fewer than it holds with it. "
                f"bf16 keeps fp32's 8 exponent bits (smallest normal {FORMATS['bf16'].smallest_normal:.2g}) and needs no scaling, "
                f"for {FORMATS['bf16'].mantissa_bits} stored mantissa bits instead of fp16's {FORMATS['fp16'].mantissa_bits}: "
                f"its median error in the table is the coarser one. {_decades}: {_fp8}, and no scale keeps them all in E4M3. "
                "That is why FP8 recipes scale each tensor, or each tile, on its own: Transformer Engine's hybrid recipe "
                "keeps gradients in E5M2 for its range, DeepSeek-V3 uses E4M3 throughout with a scale per tile."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(rf"""
    ## 2 · One scale per tensor, per tile, per block

    FP8 tensors carry a scale: the group's largest magnitude maps to the format's largest value.
    Activations have a few outlier channels; with one scale per tensor, the ordinary channels are
    pushed toward the format's floor. DeepSeek-V3 scales activations per $1\times{TILE}$ tile and
    weights per ${TILE}\times{TILE}$ block. Move the outliers' size and read the error on the ordinary values.
    """)
    return


@app.cell
def _(outlier_panel, underflow_committed):
    ui.gate(underflow_committed, what="the scaling instrument")
    outlier_panel
    return


@app.cell
def _(outlier_slider, underflow_committed):
    ui.gate(underflow_committed)
    _rows = scaling_rows(outlier_slider.value)
    mo.vstack(
        [
            ui.static_table(
                [{"format": _r["format"], "one scale per": {"tensor": "tensor", "tile": f"1 x {TILE} tile", "block": f"{TILE} x {TILE} block"}[_r["scaling"]],
                  "flushed to zero": f"{_r['flushed']:.2%}", "median relative error": f"{_r['median_rel_error']:.2%}"} for _r in _rows]
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(rf"""
    ## 3 · Summing in low precision

    An FP8 GEMM's dot products are long: $K$ products summed. In a narrow accumulator each addition
    rounds the running sum, and once the sum is large the small products stop counting. DeepSeek-V3
    found H800 tensor cores keep about 14 bits and copies the partial sums to fp32 every {TILE}
    products. Here the inputs are E4M3 values and the accumulator is emulated with fp32's exponent
    and 14 significant bits, rounded to nearest or truncated after every addition: the hardware's
    rounding is not public, and DeepSeek measured a maximum relative error of nearly
    {DEEPSEEK_ACCUMULATION['max_rel_error']:.0%} at $K$ = {DEEPSEEK_ACCUMULATION['k']:,}. bf16, a narrower accumulator than any
    tensor core's, sits beside it. Each error is the median over {ACCUMULATION_ROWS:,} dot products.
    """)
    return


@app.cell
def _(k_panel, underflow_committed):
    ui.gate(underflow_committed, what="the accumulation instrument")
    k_panel
    return


@app.cell
def _(k_slider, underflow_committed):
    ui.gate(underflow_committed)
    _rows = accumulation_rows(k_slider.value)
    mo.vstack(
        [
            ui.static_table(
                [{"accumulator": ACCUMULATOR_LABELS[_r["accumulator"]], "promoted to fp32": f"every {_r['promote_every']} products" if _r["promote_every"] else "never",
                  "median relative error": f"{_r['error']:.2e}" if _r["error"] else "0 (exact)"} for _r in _rows]
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(fp8_committed, settings):
    ui.gate(fp8_committed, what="bytes per parameter")
    _model, _cluster = fp8_case(settings)
    _rows = bytes_rows(settings)
    _mem = memory_rows(settings)
    mo.vstack(
        [
            mo.md(
                "## 4 · Bytes per parameter, the real zoo\n\n"
                "Mixed-precision Adam is counted several ways. What FP8 changes is small: the GEMMs read FP8 copies of "
                "the weights (kept between micro-batches; on Hopper the copy and its transpose) beside the bf16 ones, and some activations are kept in FP8; "
                "the fp32 master weights and Adam's moments do not move."
            ),
            ui.static_table([{"recipe": _r["recipe"], "bytes per parameter": f"{_r['bytes']:g}", "made of": _r["parts"], "source": _r["source"]} for _r in _rows]),
            mo.md(f"**Per GPU, {_model.name} on {_cluster.gpus} H100s** (the engine's memory model, GB):"),
            ui.static_table([{k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in _r.items()} for _r in _mem]),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5 · Recompute, priced

    MFU counts the FLOPs the model needs; HFU counts what the GPUs execute, recomputation included,
    so HFU / MFU - 1 is the recompute's price in FLOPs. Flash attention changes the picture: its
    backward recomputes the attention scores anyway, so there is nothing left for selective
    recomputation to drop.
    """)
    return


@app.cell
def _(settings):
    flash_checkbox = mo.ui.checkbox(value=settings["recompute_flash"], label="Flash attention")
    return (flash_checkbox,)


@app.cell
def _(flash_checkbox, recompute_committed, settings):
    ui.gate(recompute_committed, what="the recompute table")
    _rows = recompute_rows(flash_checkbox.value, settings["recompute_case"])
    mo.vstack(
        [
            mo.md(f"Your case: {recompute_setting(settings['recompute_case'])}, flash attention "
                  f"{'on' if settings['recompute_flash'] else 'off'} in your question (the box starts there)."),
            flash_checkbox,
            ui.static_table(
                [{"recompute": _r["recompute"], "activations per GPU": f"{_r['activations_gb']:.1f} GB", "activation memory cut": f"{_r['activation_cut']:.1f}x",
                  "extra FLOPs (HFU/MFU - 1)": f"{_r['extra_flops']:.1%}", "MFU": f"{_r['mfu']:.1%}", "HFU": f"{_r['hfu']:.1%}", "step": f"{_r['step_s']:.2f} s"} for _r in _rows]
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6 · Gradient accumulation: when it is free

    Effective batch = micro-batch x accumulation steps x DP. Accumulating is free when the gradients
    can sum in place and be reduced once a step (ZeRO-1). Sharded gradients cannot accumulate
    without giving back their memory saving, and the two stacks choose differently: DeepSpeed's
    ZeRO-2 reduce-scatters every micro-batch's gradients as its backward produces them; FSDP under
    `no_sync()` (FSDP2: `set_requires_gradient_sync(False)`) holds whole gradients until the last
    micro-batch and reduce-scatters once, ZeRO-1's traffic for ZeRO-1's memory. In a pipeline the
    accumulation steps are the micro-batches that fill it.
    """)
    return


@app.cell
def _(steps_panel, underflow_committed):
    ui.gate(underflow_committed, what="the accumulation instrument")
    steps_panel
    return


@app.cell
def _(steps_slider, underflow_committed):
    ui.gate(underflow_committed)
    _e = accumulation_estimates(steps_slider.value)
    _model, _cluster, _nodes, _plan = ACCUMULATION_CASE
    _one = _e[1]
    _cases = {"ZeRO-1": _one, "ZeRO-2, DeepSpeed (reduce-scatter every micro-batch)": _e[2],
              "ZeRO-2 sharding, FSDP no_sync (whole gradients, one reduce-scatter)": accumulation_no_sync(steps_slider.value)}
    mo.vstack(
        [
            mo.md(f"{_one.model.name} on {_one.cluster.gpus} H100s, DP {_plan['dp']}, micro-batch {_plan['micro_batch']}: "
                  f"effective batch {_one.plan.micro_batch} x {steps_slider.value} x {_plan['dp']} = **{_one.plan.global_batch} sequences** "
                  f"of {_one.model.seq_len:,} tokens."),
            ui.static_table(
                [{"sharding": _name, "DP bytes sent per GPU per step": f"{_x.comm_bytes_per_gpu['dp'] / GB:.1f} GB", "exposed DP time": f"{_x.time.dp_comm:.3f} s",
                  "step": f"{_x.step_time_s:.2f} s", "memory per GPU": f"{_x.memory.total / GB:.1f} GB"} for _name, _x in _cases.items()]
            ),
            mo.md(f"Bytes and time part ways: DeepSpeed's ZeRO-2 sends {_e[2].comm_bytes_per_gpu['dp'] / _one.comm_bytes_per_gpu['dp']:.1f}x ZeRO-1's "
                  f"bytes, but its step is only {_e[2].step_time_s / _one.step_time_s - 1:.0%} longer, since the reduce-scatters overlap the backward."
                  if steps_slider.value > 1 else "With one micro-batch a step there is nothing to accumulate: all three send the same bytes."),
        ]
    )
    return


@app.cell(hide_code=True)
def _(fp8_committed, settings):
    ui.gate(fp8_committed, what="FP8 at scale")
    _e = fp8_estimates(settings)
    _rows = fp8_rows(settings)
    _b, _f = _e["bf16"], _e["fp8"]
    _compute = next(_r for _r in _rows if _r["term"] == "compute")
    _gpu = _b.cluster.gpu
    mo.vstack(
        [
            mo.md(
                f"## 7 · FP8 throughput at scale\n\n"
                f"{_b.model.name}, TP {_b.plan.tp} x PP {_b.plan.pp} x DP {_b.plan.dp}: the step goes from **{_b.step_time_s:.2f} s** to "
                f"**{_f.step_time_s:.2f} s** ({_b.step_time_s / _f.step_time_s:.2f}x). Compute alone goes {_compute['bf16_s'] / _compute['fp8_s']:.2f}x faster, "
                f"not 2x: the best measured FP8 GEMM reaches {_gpu.fp8_mamf_flops / _gpu.fp8_flops:.0%} of its peak against bf16's "
                f"{_gpu.mamf_flops / _gpu.bf16_flops:.0%}; attention, norms and the "
                "output layer stay in bf16, and each GEMM input is cast first. The model TFLOP/s per GPU rise from "
                f"{_b.model_tflops_per_gpu:.0f} to {_f.model_tflops_per_gpu:.0f}; the MFU against each format's own peak falls "
                f"from {_b.mfu:.0%} to {_f.mfu:.0%}."
            ),
            mo.md("**bf16**"),
            ui.time_bar(_b),
            mo.md("**FP8**"),
            ui.time_bar(_f),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(rf"""
    ## 8 · Blackwell's block-scaled formats: MXFP8 and NVFP4

    Blackwell's tensor cores take the scales of section 2 down to a few elements. **MXFP8** (OCP
    Microscaling v1.0) gives every {MX_BLOCK} consecutive values one power-of-two scale stored in E8M0
    (8 exponent bits, no mantissa); the values are E4M3 or E5M2. **NVFP4** gives every {NVFP4_BLOCK}
    values an E4M3 scale and 4-bit E2M1 values (the grid {', '.join(f'{_v:g}' for _v in element_grid('e2m1'))}), plus one FP32
    scale per tensor so the block scales use E4M3's whole range; MXFP4 is the same 4-bit grid with
    MX's {MX_BLOCK}-element power-of-two scales. Each is applied here by `ml_dtypes`' own casts to the
    gradient sample of section 1 (its first {GRADIENT_SAMPLE - GRADIENT_SAMPLE % MX_BLOCK:,} values: whole blocks) and the activations of section 2
    (their outlier channels set by the slider), beside bf16 and FP8 with one scale per tensor.
    """)
    return


@app.cell
def _():
    block_sample_pick = mo.ui.dropdown(options={"Gradients (section 1's sample)": "gradients", "Activations with outlier channels": "activations"}, value="Activations with outlier channels", label="Sample")
    block_outlier_slider = mo.ui.slider(steps=list(OUTLIER_SCALES), value=1000, label="Activations: outlier channels are this many times larger", show_value=True, debounce=True)
    block_panel = mo.hstack([block_sample_pick, block_outlier_slider], justify="start", wrap=True)
    return block_outlier_slider, block_panel, block_sample_pick


@app.cell
def _(block_panel, underflow_committed):
    ui.gate(underflow_committed, what="the block-scaling instrument")
    block_panel
    return


@app.cell
def _(block_outlier_slider, block_sample_pick, settings, underflow_committed):
    ui.gate(underflow_committed)
    if block_sample_pick.value == "gradients":
        _args = (GRADIENT_SAMPLE, settings["grad_low_exp"], settings["grad_high_exp"], settings["sample_seed"])
        _rows, _block = block_gradient_rows(*_args), blockscale.worked_block(blockscale.gradient_sample(*_args))
    else:
        _rows = block_activation_rows(block_outlier_slider.value, **ACTIVATION_SHAPE)
        _block = blockscale.worked_block(blockscale.activation_sample(block_outlier_slider.value, **ACTIVATION_SHAPE))
    _best4 = min((_r for _r in _rows if _r["bits"] < 8), key=lambda _r: _r["median_rel_error"])
    _shown = {"the sample": _block["values"], "MXFP4": _block["mxfp4"], "NVFP4": _block["nvfp4"]}
    mo.vstack(
        [
            ui.static_table(
                [{"format": _r["label"], "bits per value (scales included)": f"{_r['bits']:.2f}", "flushed to zero": f"{_r['flushed']:.2%}",
                  "median relative error": f"{_r['median_rel_error']:.2%}", "largest relative error": f"{_r['max_rel_error']:.1%}"} for _r in _rows]
            ),
            mo.md(f"Of the 4-bit formats, **{_best4['label']}** keeps this sample best: median error {_best4['median_rel_error']:.1%}, "
                  f"{_best4['flushed']:.1%} of the values flushed to zero."),
            mo.md(f"**One block by hand:** the {NVFP4_BLOCK} values around the sample's largest. MXFP4 gives its {MX_BLOCK}-block the scale "
                  f"2^{math.log2(_block['mx_scale']):.0f}; NVFP4 gives these {NVFP4_BLOCK} the E4M3 scale {_block['nv_block_scale']:g} times the "
                  f"tensor's FP32 scale {_block['nv_tensor_scale']:.3g}. Each value is a grid point times its block's scale."),
            ui.static_table([{"": _k, **{str(_i + 1): (f"{_v:.3g}" if _v else "0") for _i, _v in enumerate(_vals)}} for _k, _vals in _shown.items()]),
        ]
    )
    return


@app.cell(hide_code=True)
def _(fp8_committed, recompute_committed, underflow_committed):
    ui.gate(underflow_committed, recompute_committed, fp8_committed, what="the equations")
    ui.math_peek(
        "The equations behind the formats",
        r"""
    A format with $e$ exponent bits and $m$ stored mantissa bits represents normal numbers to a
    relative step of $2^{-m}$; below its smallest normal $2^{1-\text{bias}}$ the step is fixed
    (subnormals) and values under half the smallest subnormal round to zero.

    Loss scaling: $\tilde g = \mathrm{cast}(S g) / S$; it keeps $g$ when
    $S|g| \ge \tfrac12 \cdot$ smallest subnormal and $S|g| \le$ largest.

    Per-group scaling: $s = \max|x_{\text{group}}| / \text{largest}$, $\tilde x = s\,\mathrm{cast}(x/s)$.

    Recompute: HFU / MFU = hardware FLOPs / model FLOPs; full recompute re-runs each layer's forward,
    $+\tfrac13$ of $3\times$forward; selective (no flash attention) re-runs the attention core,
    $12\,B L s^2 h$ against $72\,B L s h^2(1 + \tfrac{s}{6h} + \tfrac{V}{12hL})$ (Korthikanti et al. 2022, App. A).

    Effective batch $=$ micro-batch $\times$ accumulation $\times$ DP; ZeRO-2 reduce-scatters per
    micro-batch: $m\,\frac{N-1}{N}\,\Psi\,b_g$ bytes a step instead of one.
    """,
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    fp8_committed,
    identity,
    precision_inputs,
    recompute_committed,
    submit_button,
    underflow_committed,
    variant,
):
    ui.gate(underflow_committed, held=(recompute_committed, fp8_committed))
    _inputs = precision_inputs()
    _pred = {"underflow": underflow_committed.answer, "recompute": recompute_committed.answer, "fp8": fp8_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, "precision", _inputs, _pred, precision_outcomes, "the precision settings", variant)]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _(fp8_committed, recompute_committed, settings, underflow_committed):
    ui.gate(underflow_committed, recompute_committed, fp8_committed, what="the key takeaways")
    _cache = bytes_rows(settings)[-1]
    mo.md(rf"""
    ## Key takeaways

    - fp16 has the mantissa but not the range for gradients: without a loss scale it flushes the
      small ones; with the right one it keeps them non-zero (the smallest as subnormals with a bit
      or two of mantissa). bf16 has fp32's range and needs no scale.
    - FP8 has neither range nor mantissa to spare: it works with a scale per tensor, or per tile
      where outliers live, and with partial sums promoted to fp32.
    - FP8 saves time, hardly memory: the master weights and Adam's moments stay in fp32, and FP8
      copies of the weights are added: {_cache['cache_bytes']:g} bytes per parameter on {_cache['gpu']}, where Transformer
      Engine caches each copy's transpose too ({_cache['blackwell_cache_bytes']:g} on Blackwell, whose FP8 GEMMs read either layout).
    - Selective recomputation costs a few percent of FLOPs, full recomputation a third; with flash
      attention selective costs nothing extra, because flash already recomputes.
    - Accumulating gradients over micro-batches is free while they are whole: DeepSpeed's ZeRO-2
      reduce-scatters every micro-batch (more bytes, a little more time, as they overlap), while
      FSDP's `no_sync` keeps whole gradients and pays ZeRO-1's memory instead.

    **Back to:** Lab 06 (ZeRO stages and memory) and Lab 05, Act II (recompute and MFU at scale).
    """)
    return


@app.cell
def _(fp8_committed, recompute_committed, submitted, underflow_committed):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "underflow prediction": underflow_committed.describe(),
            "recompute prediction": recompute_committed.describe(),
            "FP8 prediction": fp8_committed.describe(),
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def shares_figure(curves, marker):
    """Flushed and overflowed shares against log2 of the loss scale, one pair of lines per format
    (built from dicts, charts.figure: the validated build cost most of the slider's re-run)."""
    _colors = {"fp16": COLORS["blue"], "e5m2": COLORS["orange"]}
    _data = []
    for _name, _c in curves.items():
        _data.append(dict(type="scatter", x=_c["log2_scale"], y=100 * _c["flushed"], name=f"{_name}: flushed", line=dict(color=_colors[_name])))
        _data.append(dict(type="scatter", x=_c["log2_scale"], y=100 * _c["overflow"], name=f"{_name}: overflowed", line=dict(color=_colors[_name], dash="dot")))
    return charts.figure(_data, dict(
        shapes=[charts.vline_shape(marker, dict(color=COLORS["muted"], dash="dash"))], height=320,
        xaxis=dict(title=dict(text="log2 of the loss scale S")), yaxis=dict(title=dict(text="% of the gradients")), margin=dict(t=30),
    ))


if __name__ == "__main__":
    app.run()
