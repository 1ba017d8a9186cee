import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 05: The data-parallel wall and the 3D design",
)

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import charts, dp_svg, ui
    from labs.core.engine.collectives import bytes_sent_per_rank
    from labs.core.engine.eras import ERAS
    from labs.core.engine.hardware import LINKS
    from labs.core.scenarios.lab05 import (
        ACT1_STRONG_FABRIC,
        act1_outcomes,
        act1_story,
        act1_story_facts,
        act1_story_text,
        act2_outcomes,
        best_design,
        design_model_of,
        design_platform_of,
        design_platform_text,
        design_ring_busbw,
        plan_from_inputs,
        tp_reflection,
    )
    from labs.core.engine.perf import estimate
    from labs.core.engine.pipeline import bubble_fraction, timeline
    from labs.core.engine.step import NCCL_COLLECTIVE_SMS
    from labs.core.scenarios.prose import STACK, era_choices, scaling_book_dp_tokens, weak_scaling_price
    from labs.core.scenarios.lab05 import (
        ACT1_SMALL_BUCKET_PARAMS,
        DESIGN_ERA,
        DESIGN_HEADROOM,
        DESIGN_PLATFORM_NAMES,
        DP_WALL_GLOBAL_BATCH,
        DP_WALL_GPUS,
        GPU_STEPS_DEFAULT,
        design_inputs,
        dp_wall_curve,
        dp_wall_estimate,
        dp_comm_bound_tokens,
        dp_wall_model,
        tp8_dp_ring,
        tp8_dp_times,
    )

    LAB = "05_parallelism"
    GPU_STEPS = list(GPU_STEPS_DEFAULT)
    FABRICS = {"InfiniBand NDR 400 Gb/s": "ib-ndr", "InfiniBand HDR 200 Gb/s": "ib-hdr", "RoCE 400 Gb/s": "roce-400"}
    ALGORITHMS = {"ring": "ring", "tree": "tree", "NVLS (NVLink SHARP)": "nvls", "NCCL's choice": "auto"}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 05 · The data-parallel wall and the 3D design

    Why does adding GPUs to a data-parallel job make each GPU less useful, and how do the
    people who train 175B-parameter models lay out tensor, pipeline and data parallelism on
    a thousand GPUs? Two acts, about 40 minutes. Every number on this page comes from the
    engine in `labs/core`; change a slider and it is recomputed.

    **Before you start:** Narayanan et al. 2021, *Efficient Large-Scale Language Model
    Training on GPU Clusters Using Megatron-LM*, Sections 2-3; the ring all-reduce in
    Thakur, Rabenseifner and Gropp 2005 (or any NCCL talk); Korthikanti et al. 2022 on
    activation memory.
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


# Act I's scaling, fabric, batch and gradient bucket and Act II's model, global batch and GPU
# generation are drawn from your id (labs.variants), and so are the options and their order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    act1_story_inputs, design_batch = act1_story(variant.settings), variant.settings["design_batch"]
    design_model, design_platform = design_model_of(variant.settings), design_platform_of(variant.settings)
    return act1_story_inputs, design_batch, design_model, design_platform, variant


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Act I · The data-parallel wall
    """)
    return


@app.cell(hide_code=True)
def _(variant):
    ui.stakeholder_message("Training infrastructure lead", act1_story_text(variant.settings))
    return


@app.cell
def _(variant):
    act1_question = ui.variant_question(variant.questions["cause"])
    act1_question
    return (act1_question,)


@app.cell
def _():
    act1_commit_buttons = ui.commit_buttons()
    return (act1_commit_buttons,)


@app.cell
def _(act1_commit_buttons, act1_question, held_now, identity, variant):
    _row, act1_committed = ui.commit_prediction(identity, LAB, "cause", act1_question, act1_commit_buttons, variant=variant, held=held_now())
    _row
    return (act1_committed,)


# The instruments are created, and laid out, in one cell that reads nothing: moving one reruns
# only the cells that read its value, never the panel.
@app.cell
def _(act1_story_inputs):
    # Each instrument starts at the stakeholder's runs (the student's variant).
    _story = act1_story_inputs
    _batches = {"8 sequences": 8, "16 sequences": 16, "512 sequences": 512, "1024 sequences": 1024, "2048 sequences": 2048}
    _scalings = {"fixed global batch (strong scaling)": False, "fixed per-GPU batch (weak scaling)": True}
    gpus_slider = mo.ui.slider(steps=GPU_STEPS, value=64, label="GPUs (data-parallel degree)", show_value=True)
    model_dropdown = mo.ui.dropdown(options={"7B": 7, "13B": 13, "70B": 70}, value=f"{_story['params_b']}B", label="Model size")
    batch_dropdown = mo.ui.dropdown(options=_batches, value=next(k for k, v in _batches.items() if v == _story["global_batch"]), label="Global batch (in weak scaling: the batch of 8 GPUs)")
    scaling_radio = mo.ui.radio(options=_scalings, value=next(k for k, v in _scalings.items() if v == _story["fixed_per_gpu"]), label="Scaling mode")
    fabric_dropdown = mo.ui.dropdown(options=FABRICS, value=next(k for k, v in FABRICS.items() if v == _story["fabric"]), label="Fabric across nodes")
    algorithm_dropdown = mo.ui.dropdown(options=ALGORITHMS, value="ring", label="All-reduce algorithm")
    overlap_checkbox = mo.ui.checkbox(value=False, label="Overlap the gradient reduction with the backward pass")
    _buckets = {"Megatron's default, max(40M, 1M x DP) parameters": 0, f"{ACT1_SMALL_BUCKET_PARAMS / 1e6:.0f}M parameters (--ddp-bucket-size {ACT1_SMALL_BUCKET_PARAMS})": ACT1_SMALL_BUCKET_PARAMS}
    bucket_dropdown = mo.ui.dropdown(options=_buckets, value=next(k for k, v in _buckets.items() if v == (_story["bucket_params"] or 0)), label="Gradient bucket")
    grad_dropdown = mo.ui.dropdown(options={"fp32 (Megatron's bf16 default)": "fp32", "bf16": "bf16"}, value="fp32 (Megatron's bf16 default)", label="Gradients reduced in")
    act1_instruments = mo.vstack(
        [
            mo.md("### Instruments"),
            mo.hstack([gpus_slider, model_dropdown, batch_dropdown], justify="start", wrap=True),
            scaling_radio,
            mo.hstack([fabric_dropdown, algorithm_dropdown, grad_dropdown, bucket_dropdown, overlap_checkbox], justify="start", wrap=True),
        ]
    )
    return (
        act1_instruments,
        algorithm_dropdown,
        batch_dropdown,
        bucket_dropdown,
        fabric_dropdown,
        gpus_slider,
        grad_dropdown,
        model_dropdown,
        overlap_checkbox,
        scaling_radio,
    )


@app.cell
def _(act1_committed, act1_instruments):
    ui.gate(act1_committed, what="the Act I instruments")
    act1_instruments
    return


# The curve over every GPU count does not read the GPU slider: moving it reruns one estimate.
@app.cell
def _(act1_committed, algorithm_dropdown, batch_dropdown, bucket_dropdown, fabric_dropdown, grad_dropdown, model_dropdown, overlap_checkbox, scaling_radio):
    ui.gate(act1_committed)
    act1_settings = dict(
        global_batch=batch_dropdown.value,
        fixed_per_gpu=scaling_radio.value,
        fabric=fabric_dropdown.value,
        algorithm=algorithm_dropdown.value,
        overlap=overlap_checkbox.value,
        params_b=model_dropdown.value,
        grad_reduce_dtype=grad_dropdown.value,
        bucket_params=bucket_dropdown.value or None,
    )
    act1_curve = dp_wall_curve(act1_settings)
    return act1_curve, act1_settings


@app.cell
def _(act1_settings, gpus_slider):
    act1_inputs = dict(gpus=gpus_slider.value, **act1_settings)
    try:
        act1_current = dp_wall_estimate(**act1_inputs)
        act1_error = None
    except ValueError as _err:
        act1_current, act1_error = None, str(_err)
    return act1_current, act1_error, act1_inputs


@app.cell
def _(act1_current, act1_curve, act1_error, act1_inputs, act1_story_inputs, variant):
    mo.stop(act1_current is None, ui.failure_banner([f"Invalid setting: {act1_error}. Every GPU needs at least one whole sequence."]))
    _story = {"stakeholder's runs": (DP_WALL_GPUS, act1_story_facts(variant.settings)["mfu"])}
    _marked = _story if all(act1_inputs[_k] == _v for _k, _v in act1_story_inputs.items()) else {}
    _cur = act1_current
    _fit_from = [e.cluster.gpus for e in act1_curve if e.fits]
    _share = bytes_sent_per_rank("reduce_scatter", 1.0, _cur.cluster.gpus)
    _sent = {c.key: c.sent_bytes for c in _cur.collectives}
    mo.stop(
        not _cur.fits,
        ui.failure_banner([
            f"{_cur.model.name} does not fit on {_cur.cluster.gpus} GPUs: {_cur.memory.total / 1e9:,.1f} GB per GPU against {_cur.cluster.gpu.hbm_bytes / 1e9:.1f} GB "
            f"(weights {_cur.memory.weights / 1e9:,.0f}, gradients {_cur.memory.gradients / 1e9:,.0f}, optimizer {_cur.memory.optimizer / 1e9:,.0f}, "
            f"activations {_cur.memory.activations / 1e9:,.0f} GB): no MFU to show. "
            + (f"With these settings it fits from {min(_fit_from)} GPUs." if _fit_from else "No GPU count on the slider fits it with these settings: data parallelism alone cannot train it here.")
        ]),
    )
    mo.vstack(
        [
            ui.metric_cards(
                {
                    "MFU": f"{_cur.mfu:.1%}",
                    "step time": f"{_cur.step_time_s * 1e3:.0f} ms",
                    "compute": f"{_cur.time.compute * 1e3:.0f} ms",
                    "exposed all-reduce": f"{_cur.time.dp_comm * 1e3:.0f} ms",
                    "sent per GPU per step": f"{_cur.comm_bytes_per_gpu['dp'] / 1e9:.1f} GB",
                }
            ),
            mo.md(
                f"Each GPU sends (N-1)/N = {_share:.3f} of two messages: the reduce-scatter of the {act1_inputs['grad_reduce_dtype']} "
                f"gradients ({_sent.get('dp_reduce', 0.0) / _share / 1e9:.1f} GB, {_sent.get('dp_reduce', 0.0) / 1e9:.1f} GB sent) and the "
                f"all-gather of the bf16 weights ({_sent.get('dp_gather', 0.0) / _share / 1e9:.1f} GB, {_sent.get('dp_gather', 0.0) / 1e9:.1f} GB sent). "
                f"MFU is the engine's for {STACK} on {_cur.cluster.gpu.name}; other software stacks reach less."
            ),
            mo.Html(dp_svg.mfu_chart({"engine": act1_curve}, _marked, _cur)),
            ui.published_beside(_cur),
        ]
    )
    return


@app.cell
def _(act1_curve):
    _fitting = [e for e in act1_curve if e.fits]
    mo.stop(not _fitting)
    mo.Html(dp_svg.dp_step_chart(_fitting))  # plain SVG: a Plotly redraw of these charts was most of an Act I move's cost in the browser
    return


@app.cell(hide_code=True)
def _(act1_committed, variant):
    ui.gate(act1_committed, held_note=True)
    # Each option's line comes from the engine at the stakeholder's runs (labs/core/scenarios/lab05.py).
    ui.variant_reveal(act1_committed, variant.questions["cause"])
    return


@app.cell(hide_code=True)
def _(act1_committed):
    ui.gate(act1_committed)
    _b = LINKS["ib-ndr"]
    ui.math_peek(
        "The equations behind Act I",
        rf"""
    Ring all-reduce of $M$ bytes over $N$ GPUs, per-step latency $\alpha$, link bandwidth $B$:

    $$T_{{ring}} = 2(N-1)\,\alpha + 2\,\frac{{N-1}}{{N}}\,\frac{{M}}{{B}}$$

    The second term tends to $2M/B$: each GPU sends about twice the gradients whatever $N$ is.
    The first grows with $N$. Across nodes NCCL runs one ring per channel and crosses each node
    boundary on a different NIC (rails): a ring over whole nodes of $G$ GPUs has all $G$ NICs,
    $B \approx \min(G\,B_{{NIC}},\ B_{{NVLink}})$ with $B_{{NIC}}$ = {_b.effective_bytes_per_s / 1e9:.0f} GB/s
    achieved on {_b.name} ({_b.bandwidth_bytes_per_s / 1e9:.0f} GB/s line rate). A group with one
    member per node (data parallelism behind TP = 8) has one NIC: its bus bandwidth falls off the
    cliff, though, as below, it also carries an eighth of the bytes.

    With a fixed global batch of $S$ sequences, compute per GPU is $\propto S/N$ and

    $$\text{{MFU}} = \frac{{\text{{model FLOPs}}}}{{T_{{step}}\cdot N\cdot \text{{peak}}}},\quad
    T_{{step}} = T_{{compute}} + \max(T_{{ring}} - T_{{overlap}},\ T_{{last\ bucket}}) + T_{{optimizer}}$$

    where the overlap window is the backward pass of the last micro-batch (zero without overlap).
    Setting compute equal to the reduction gives the tokens per GPU below which data parallelism
    is communication bound: $T_{{compute}} \propto$ tokens per GPU, $T_{{ring}}$ is not.
    """,
    )
    return


@app.cell(hide_code=True)
def _(act1_committed, act1_story_inputs):
    ui.gate(act1_committed)
    _n = DP_WALL_GPUS[-1]
    # the student's own runs (newcomer 38bda0b: the Reflection read the default variant for everyone)
    _story = act1_story_inputs
    _ring = dp_wall_estimate(_n, **_story)
    _overlap = dp_wall_estimate(_n, **_story, overlap=True)
    _bf16 = dp_wall_estimate(_n, **_story, grad_reduce_dtype="bf16")
    _tree = dp_wall_estimate(_n, **_story, algorithm="tree")
    if _story["bucket_params"]:  # small buckets: the other lever is Megatron's default bucket
        _weak = dp_wall_estimate(_n, **{**_story, "bucket_params": None})
        _runs = (f"{_ring.model.name} with the batch growing with the GPUs ({_story['global_batch'] // DP_WALL_GPUS[0]} sequences per GPU) "
                 f"in buckets of {_story['bucket_params'] / 1e6:.0f}M parameters")
        _lever = "Megatron's default bucket, max(40M, 1M x DP) parameters"
    elif _story["fixed_per_gpu"]:  # already growing the batch: the other lever is the faster fabric
        _weak = dp_wall_estimate(_n, **{**_story, "fabric": ACT1_STRONG_FABRIC})
        _runs = f"{_ring.model.name} with the batch growing with the GPUs ({_story['global_batch'] // DP_WALL_GPUS[0]} sequences per GPU)"
        _lever = f"the same runs on {_weak.cluster.inter.name}"
    else:
        _weak = dp_wall_estimate(_n, **{**_story, "fixed_per_gpu": True})
        _runs = f"{_ring.model.name} with a fixed batch of {_story['global_batch']} sequences"
        _lever = "growing the batch with the GPUs (weak scaling)"
    _whole, _behind_tp = tp8_dp_ring(_n)
    _node = tp8_dp_times(_n)
    _book = scaling_book_dp_tokens(_ring.cluster)
    _cl = _ring.cluster
    _price = weak_scaling_price(_n)
    mo.md(
        f"""
    ### Reflection: what walls data parallelism, and what helps

    At {_n} GPUs, {_runs} on {_cl.inter.name} gives **{_ring.mfu:.1%}** MFU. Overlapping the reduction
    with the backward pass gives **{_overlap.mfu:.1%}** (it can only hide behind the backward that is
    left, one micro-batch's here, and it is not free: while the reduction runs, NCCL's
    {NCCL_COLLECTIVE_SMS} channels hold {NCCL_COLLECTIVE_SMS} of the {_cl.gpu.sms} SMs the backward would use); reducing in
    bf16 instead of fp32, **{_bf16.mfu:.1%}**; forcing NCCL's tree, **{_tree.mfu:.1%}**, nothing gained: NCCL's
    tree runs all-reduces only, and ZeRO-1's reduce-scatter and all-gather stay rings; {_lever},
    **{_weak.mfu:.1%}**.

    **How many tokens per GPU does data parallelism need?** Two conventions, both the point where
    the gradient reduction takes as long as the compute it is compared with:

    | | tokens per GPU | overlap | compared with | gradients | bandwidth |
    |---|---:|---|---|---|---|
    | the scaling book, $B/X > C/W$ | {_book:,.0f} | perfect, behind the backward | backward FLOPs at peak, $C$ = {_cl.gpu.bf16_flops / 1e12:,.0f} TFLOP/s | bf16 all-reduce | node egress at line rate, $W$ = {_cl.rails} x {_cl.inter.bandwidth_bytes_per_s / 1e9:.0f} GB/s |
    | the engine, bf16 gradients | {dp_comm_bound_tokens('bf16'):,.0f} | none | forward + backward at the engine's rates | ZeRO-1: reduce-scatter + all-gather | achieved ring bus bandwidth, with latency |
    | the engine, fp32 gradients | {dp_comm_bound_tokens('fp32'):,.0f} | none | the same | the same, reduce-scatter in fp32 | the same |

    The magnitudes agree; the meanings do not. Above the book's number a perfectly overlapped
    reduction costs nothing, and below it the GPUs start to wait. At the engine's number nothing is
    hidden and half of every step is waiting. Both assume the batch itself is free to choose, and it
    is not: those {_price['strong_tokens'] / 1e6:.1f}M tokens a step are
    {_price['strong_tokens'] / _n:,.0f} tokens per GPU at {_n} GPUs, and only a bigger batch moves it.

    **What weak scaling costs.** At {_n} GPUs it runs {_price['weak_sequences']:,} sequences,
    {_price['weak_tokens'] / 1e6:,.1f}M tokens a step, {_price['batch_ratio']:.0f}x that fixed batch, for
    {_price['throughput_ratio']:.1f}x the tokens per second. That pays only if the bigger batch reaches the
    same loss in fewer than {_price['throughput_ratio']:.1f}x the tokens. Past the critical batch size
    (McCandlish et al. 2018, *An Empirical Model of Large-Batch Training*) each step's extra tokens
    buy almost no extra progress, so the tokens needed grow nearly in proportion to the batch.

    One NIC is a bandwidth fact, not a time penalty: a data-parallel ring over whole nodes runs at
    **{_whole / 1e9:.0f} GB/s** of bus bandwidth, and behind TP = 8 each data-parallel group has one GPU
    per node and crosses nodes on one NIC: **{_behind_tp / 1e9:.0f} GB/s**. But each such group carries
    only 1/8 of the gradients, and a node's eight groups run at once, one per NIC: per node it is the
    same eight NICs. Reducing {_node['model']}'s {_node['grad_bytes'] / 1e9:.1f} GB of bf16 gradients at {_n} GPUs takes
    **{_node['whole_s'] * 1e3:.0f} ms** over whole nodes and **{_node['behind_s'] * 1e3:.0f} ms** behind TP = 8. Which of these would you
    ask the stakeholder for, and what does each cost them (convergence, a software change, nothing)?
    """
    )
    return


@app.cell(hide_code=True)
def _(act1_committed):
    ui.gate(act1_committed)
    _c = dp_wall_estimate(DP_WALL_GPUS[-1]).cluster
    _C, _W = _c.gpu.bf16_flops, _c.rails * _c.inter.bandwidth_bytes_per_s
    mo.vstack(
        [
            mo.md(
                f"""
    **Derive it.** A GPU holds $P$ parameters and processes $T$ tokens a step. Its backward pass is $4PT$ FLOPs at
    $C$ = {_C / 1e12:,.0f} TFLOP/s; a ring all-reduce of its bf16 gradients ($2P$ bytes) sends about $2 \\times 2P$ bytes over
    $W$ = {_W / 1e9:,.0f} GB/s of node egress. Above which $T$ does the backward outlast the reduction, so that a perfect
    overlap hides it? ($P$ drops out.)
    """
            ),
            mo.accordion({
                "The answer": mo.md(
                    f"$4PT/C > 4P/W$, so $T > C/W$ = {_C / 1e12:,.0f} TFLOP/s / {_W / 1e9:,.0f} GB/s = **{scaling_book_dp_tokens(_c):,.0f} tokens per GPU**, "
                    "the scaling book's threshold. Reduce fp32 gradients instead (twice the bytes) and it doubles; overlap less than "
                    "perfectly and the engine's unoverlapped crossing above is the better guide."
                )
            }),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    _era = ERAS[DESIGN_ERA]
    mo.md(f"""
    ## Act II · Designing the 3D layout

    The engine runs each design in an **era**: the features one published software stack had at a
    date, so no layout is credited with a feature its software lacked. Act II's era is
    `{DESIGN_ERA}`, {STACK} as of 2024. It has ZeRO stage {' and '.join(str(z) for z in sorted(_era.zero_stage))}
    only (the distributed optimizer is ZeRO-1; stages 2 and 3 are DeepSpeed's and PyTorch FSDP's) and the
    schedules {' and '.join(_era.schedule)} (GPipe predates it; zero-bubble schedules came later). The
    instruments below offer only what this era has.
    """)
    return


@app.cell(hide_code=True)
def _(design_batch, design_model, design_platform):
    _model, _cluster = design_inputs(design_model, design_platform)
    ui.stakeholder_message(
        "Head of pre-training",
        f"We have {design_platform_text(design_platform)} "
        f"for {_model.name} ({_model.params / 1e9:.1f}B parameters, {_model.layers} layers), global batch "
        f"{design_batch:,} sequences of {_model.seq_len:,} tokens. It must fit with {1 - DESIGN_HEADROOM:.0%} of each GPU's memory to spare, "
        "the pipeline bubble must be small, and I want the highest MFU. Which layout?",
    )
    return


@app.cell
def _(variant):
    act2_question = ui.variant_question(variant.questions["design"])
    act2_question
    return (act2_question,)


@app.cell
def _():
    act2_commit_buttons = ui.commit_buttons()
    return (act2_commit_buttons,)


@app.cell
def _(act2_commit_buttons, act2_question, held_now, identity, variant):
    _row, act2_committed = ui.commit_prediction(identity, LAB, "design", act2_question, act2_commit_buttons, variant=variant, held=held_now())
    _row
    return (act2_committed,)


# The layout starts where Act I left off, pure data parallelism, for the variant's model and GPUs.
@app.cell
def _(design_model, design_platform):
    _choices = divisor_choices(design_model, design_platform)
    tp_dropdown = mo.ui.dropdown(options=[str(t) for t in _choices["tp"]], value="1", label="TP (tensor parallel)")
    pp_dropdown = mo.ui.dropdown(options=[str(p) for p in _choices["pp"]], value="1", label="PP (pipeline stages)")
    microbatch_dropdown = mo.ui.dropdown(options=["1", "2", "4", "8"], value="1", label="Micro-batch (sequences)")
    zero_dropdown = mo.ui.dropdown(options=era_choices(DESIGN_ERA, "zero_stage", {"0 (none)": 0, "1 (distributed optimizer)": 1, "2 (+gradients)": 2, "3 (+weights)": 3}), value="1 (distributed optimizer)", label="ZeRO stage")
    recompute_dropdown = mo.ui.dropdown(options=era_choices(DESIGN_ERA, "recompute", {"none": "none", "selective": "selective", "full": "full"}), value="selective", label="Activation recompute")
    sp_checkbox = mo.ui.checkbox(value=True, label="Sequence parallel")
    tp_overlap_checkbox = mo.ui.checkbox(value=True, label="Overlap TP communication with the GEMMs (Transformer Engine; needs SP, inside NVLink)")
    schedule_dropdown = mo.ui.dropdown(options=era_choices(DESIGN_ERA, "schedule", {"1F1B": "1f1b", "interleaved 1F1B": "interleaved", "GPipe": "gpipe", "ZB-H1": "zb-h1"}), value="1F1B", label="Pipeline schedule")
    v_slider = mo.ui.slider(steps=[2, 3, 4, 6], value=2, label="Chunks per stage (interleaved only)", show_value=True)
    act2_instruments = mo.vstack(
        [
            mo.md("### Instruments"),
            mo.hstack([tp_dropdown, pp_dropdown, microbatch_dropdown, zero_dropdown], justify="start", wrap=True),
            mo.hstack([recompute_dropdown, sp_checkbox, tp_overlap_checkbox, schedule_dropdown, v_slider], justify="start", wrap=True),
        ]
    )
    return (
        act2_instruments,
        microbatch_dropdown,
        pp_dropdown,
        recompute_dropdown,
        schedule_dropdown,
        sp_checkbox,
        tp_dropdown,
        tp_overlap_checkbox,
        v_slider,
        zero_dropdown,
    )


@app.cell
def _(act2_committed, act2_instruments):
    ui.gate(act2_committed)
    act2_instruments
    return


@app.cell
def _(
    act2_committed,
    design_batch,
    design_model,
    design_platform,
    microbatch_dropdown,
    pp_dropdown,
    recompute_dropdown,
    schedule_dropdown,
    sp_checkbox,
    tp_dropdown,
    tp_overlap_checkbox,
    v_slider,
    zero_dropdown,
):
    ui.gate(act2_committed)
    _model, _cluster = design_inputs(design_model, design_platform)
    _tp, _pp = int(tp_dropdown.value), int(pp_dropdown.value)
    act2_inputs = dict(
        tp=_tp,
        pp=_pp,
        dp=_cluster.gpus // (_tp * _pp),
        micro_batch=int(microbatch_dropdown.value),
        global_batch=design_batch,
        zero_stage=zero_dropdown.value,
        recompute=recompute_dropdown.value,
        sequence_parallel=sp_checkbox.value and _tp > 1,
        tp_comm_overlap=tp_overlap_checkbox.value and sp_checkbox.value and _tp > 1,
        schedule=schedule_dropdown.value,
        virtual_stages=v_slider.value if schedule_dropdown.value == "interleaved" else 1,
        flash_attention=True,
    )
    try:
        act2_estimate = estimate(_model, _cluster, plan_from_inputs(act2_inputs))
        act2_error = None
    except ValueError as _err:
        act2_estimate, act2_error = None, str(_err)
    return act2_error, act2_estimate, act2_inputs


@app.cell
def _(act2_error, act2_estimate):
    mo.stop(act2_estimate is None, ui.failure_banner([f"Invalid layout: {act2_error}"]))
    _e = act2_estimate
    _preview_m = min(_e.plan.microbatches, 4 * _e.plan.pp)
    # Interleaving needs m to be a multiple of p; the plan's m is, and so is 4p.
    _tl = timeline(_e.plan.pp, _preview_m, _e.plan.schedule, _e.plan.virtual_stages) if _e.plan.pp > 1 else None
    _items = [
        ui.failure_banner(_e.warnings),
        ui.metric_cards(
            {
                "MFU": f"{_e.mfu:.1%}",
                "tokens / s": f"{_e.tokens_per_s / 1e3:,.0f} k",
                "step time": f"{_e.step_time_s:.2f} s",
                "bubble (of the step)": f"{_e.bubble_fraction:.1%}",
                "memory per GPU": f"{_e.memory.total / 1e9:.1f} GB",
                "fits": "yes" if _e.fits else "no",
            }
        ),
        ui.memory_bar(_e),
        ui.time_bar(_e),
        mo.md(
            f"Bubble: {_e.bubble_fraction:.1%} of the step's wall time with p = {_e.plan.pp}, m = {_e.plan.microbatches} "
            f"micro-batches, v = {_e.plan.virtual_stages} (the same bubble is "
            f"{bubble_fraction(_e.plan.pp, _e.plan.microbatches, _e.plan.schedule, _e.plan.virtual_stages, 'ideal'):.1%} "
            f"of the bubble-free time, the convention Megatron prints). MFU is the engine's for {STACK} (era `{DESIGN_ERA}`)."
        ),
    ]
    if _tl is not None:
        _items.append(charts.timeline_figure(_tl, f"The schedule for the first {_preview_m} micro-batches"))
    mo.vstack([i for i in _items if i is not None])
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my design to the ledger")
    return (submit_button,)


@app.cell
def _(
    act1_committed,
    act1_error,
    act1_inputs,
    act2_committed,
    act2_error,
    act2_estimate,
    act2_inputs,
    identity,
    submit_button,
    variant,
):
    ui.gate(act2_committed, held=(act1_committed,))

    def _steps():
        if act1_error is None:
            yield LAB, "act1", act1_inputs, {"cause": act1_committed.answer}, act1_outcomes(act1_inputs, {"cause": act1_committed.answer}, variant=variant), variant
        else:
            yield ui.NotSaved("act1", f"its setting is invalid ({act1_error})")
        if act2_estimate is not None:
            yield LAB, "act2", act2_inputs, {"design": act2_committed.answer}, act2_outcomes(act2_inputs, {"design": act2_committed.answer}, variant=variant), variant
        else:
            yield ui.NotSaved("act2", f"the layout is invalid ({act2_error})")

    _view, submitted = ui.submit_to_ledger(identity, submit_button, _steps)
    _view
    return (submitted,)


@app.cell
def _(act2_estimate, design_batch, design_model, design_platform, submitted):
    mo.stop(submitted is None or act2_estimate is None)
    _best = best_design(design_batch, design_model, design_platform, headroom=DESIGN_HEADROOM)
    _yours = act2_estimate
    _domain = design_inputs(design_model, design_platform)[1].domain_gpus
    _nvidia = ("; NVIDIA's own H100 recipe for GPT-3 175B is TP 4, PP 8 with 6 interleaved chunks"
               if (design_model, design_platform) == ("gpt3-175b", "dgx-h100") else "")
    mo.md(
        f"""
    ### The engine's best plan beside yours

    | | yours | engine's best |
    |---|---|---|
    | layout | TP {_yours.plan.tp} x PP {_yours.plan.pp} x DP {_yours.plan.dp} | TP {_best.tp} x PP {_best.pp} x DP {_best.dp} |
    | micro-batch, ZeRO, recompute | {_yours.plan.micro_batch}, {_yours.plan.zero_stage}, {_yours.plan.recompute} | {_best.micro_batch}, {_best.zero_stage}, {_best.recompute} |
    | schedule | {_yours.plan.schedule} (v={_yours.plan.virtual_stages}) | {_best.schedule} (v={_best.virtual_stages}) |
    | MFU | {_yours.mfu:.1%} | {_best.mfu:.1%} |
    | bubble | {_yours.bubble_fraction:.1%} | {_best.bubble_fraction:.1%} |
    | memory per GPU | {_yours.memory.total / 1e9:.1f} GB | {_best.memory_bytes / 1e9:.1f} GB |

    The engine's best, over every ZeRO stage, recompute and schedule of the era with {1 - DESIGN_HEADROOM:.0%} of the memory
    to spare, keeps every tensor-parallel group inside one NVLink domain of {_domain} GPUs (TP {_best.tp} here{_nvidia}),
    runs {_best.pp} pipeline stage{"s" if _best.pp > 1 else ""} and gives each pipeline enough micro-batches that the
    bubble is {_best.bubble_fraction:.1%} of the step.
    """
    )
    return


@app.cell(hide_code=True)
def _(act2_committed, variant):
    ui.gate(act2_committed, held_note=True)
    ui.variant_reveal(act2_committed, variant.questions["design"])  # each option's line from the engine (lab05.design_explanation)
    return


@app.cell(hide_code=True)
def _(act2_committed, design_model, design_platform):
    ui.gate(act2_committed)
    _model, _cluster = design_inputs(design_model, design_platform)
    _h, _s = _model.hidden, _model.seq_len
    ui.math_peek(
        "The equations behind Act II",
        rf"""
    **Memory per GPU** with $\Psi$ parameters in this GPU's TP x PP shard and ZeRO over $N_{{dp}}$:
    weights $2\Psi$, gradients $2\Psi$, optimizer $12\Psi$ (divided by $N_{{dp}}$ from stages 3, 2, 1),
    plus activations $L/p$ layers x in-flight micro-batches x per-layer bytes
    (Korthikanti et al. 2022: $34\,sbh/t$ with sequence parallelism and selective recompute).

    **Bubble** (GPipe, 1F1B) with $p$ stages and $m$ micro-batches: $\frac{{p-1}}{{m+p-1}}$ of the
    wall time, $\frac{{p-1}}{{m}}$ of the bubble-free time; interleaving with $v$ chunks divides it by $v$.

    **TP traffic**: two all-reduces of $b\,s\,h$ activations per layer forward, two backward
    ({_s} x {_h} x 2 bytes = {_s * _h * 2 / 1e6:.0f} MB per sequence per all-reduce for this model), on the critical path
    unless Transformer Engine pipelines them with the GEMMs, which it can only inside the NVLink domain.
    """,
    )
    return


@app.cell(hide_code=True)
def _(act2_committed, design_model, design_platform, variant):
    ui.gate(act2_committed)
    _model, _cluster = design_inputs(design_model, design_platform)
    _inside, _across = tp_reflection(variant.settings).values()
    _name, _domain = DESIGN_PLATFORM_NAMES[design_platform], _cluster.domain_gpus
    _whole, _one = design_ring_busbw(design_platform)
    if _across.plan.tp > _domain:
        _where = (f"On your {_name} TP = {_across.plan.tp} leaves the {_domain}-GPU NVLink domain: its collectives cross the NICs "
                  "and pay network latency on every layer, and Transformer Engine cannot hide them behind the GEMMs there.")
    else:
        _where = (f"On your {_name} both stay inside one {_domain}-GPU NVLink domain, so TP = {_across.plan.tp} pays only for the "
                  f"wider split, {_across.time.tp_comm / _inside.time.tp_comm:.1f}x TP = {_inside.plan.tp}'s time, and never a NIC: "
                  "TP past 8 GPUs on NVLink is what the rack's NVLink domain is for.")
    if _whole >= 0.6 * _one:
        _wire = (f"Bandwidth alone is not the cliff here: NCCL crosses each domain boundary on all {_cluster.rails} NICs of a node at once, "
                 f"so a ring over all {_cluster.gpus:,} GPUs keeps {_whole / 1e9:.0f} GB/s of bus bandwidth against {_one / 1e9:.0f} GB/s inside one domain.")
    else:
        _wire = (f"Bandwidth is a cliff too on your {_name}: a ring over all {_cluster.gpus:,} GPUs keeps {_whole / 1e9:.0f} GB/s of bus "
                 f"bandwidth, against {_one / 1e9:.0f} GB/s inside one domain.")
    mo.md(
        f"""
    ### Reflection: why TP stays inside the NVLink domain

    For {_inside.model.name}{"" if _inside.model.name == _model.name else f" (your {_model.name}'s {_model.heads} heads do not split {_across.plan.tp} ways)"}:
    with TP = {_inside.plan.tp} each step spends **{_inside.time.tp_comm:.2f} s** on tensor-parallel
    all-reduces over {_cluster.intra.name}; with TP = {_across.plan.tp} they take **{_across.time.tp_comm:.2f} s**.
    A GPU's TP traffic per token does not shrink as the TP degree grows, while its share of the GEMMs
    does. {_where} ({_wire})
    TP talks every layer, twice each way; pipeline stages once per micro-batch per boundary; data
    parallelism once per step. Put the chattiest axis on the fastest wire.
    """
    )
    return


@app.cell(hide_code=True)
def _(act2_committed):
    ui.gate(act2_committed)
    mo.md(r"""
    ## Key takeaways

    - Ring all-reduce traffic per GPU saturates at twice the gradients; what shrinks as you add
      GPUs under a fixed batch is the compute it has to hide behind. Below a few thousand tokens
      per GPU data parallelism is communication bound; overlap, bf16 gradients and a larger batch
      push the wall back, and gradient buckets too small for the ring's length make it a latency wall.
    - Past one node a data-parallel ring runs on every NIC of the node at once (one ring per
      rail), so on 400 Gb/s NICs it keeps close to NVLink's bandwidth; on slower NICs (HDR) the
      network itself walls the ring, even in weak scaling, where nothing shrinks. The cliff is a
      per-layer collective (TP) that spans nodes, or a group with one member per node.
    - Tensor parallelism inside the NVLink domain (a DGX's node, an NVL72 rack); pipeline
      parallelism across domains when the model does not fit in one tensor-parallel group (each
      stage adds bubble); data parallelism for the rest; ZeRO or recompute to make it fit. A GPU
      generation with more memory or a wider NVLink domain moves the best layout.

    **Next:** Lab 06 (ZeRO sweep) takes the 16 bytes per parameter apart; Lab 07 (pipeline
    visualizer) draws the schedules behind the pipeline bubble.
    """)
    return


@app.cell
def _(act1_committed, act2_estimate, act2_committed, submitted):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "Act I prediction": act1_committed.describe(),
            "Act II prediction": act2_committed.describe(),
            "design": f"TP{act2_estimate.plan.tp}·PP{act2_estimate.plan.pp}·DP{act2_estimate.plan.dp}" if act2_estimate is not None else "—",
            "MFU": f"{act2_estimate.mfu:.1%}" if act2_estimate is not None else "—",
            "fits": ("yes" if act2_estimate.fits else "no") if act2_estimate is not None else "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def divisor_choices(model_key: str, platform: str) -> dict:
    """TP and PP values that divide the GPUs (and the heads or the layers) for Act II's model."""
    model, cluster = design_inputs(model_key, platform)
    n = cluster.gpus
    return {
        "tp": [t for t in range(1, 65) if n % t == 0 and model.heads % t == 0],
        "pp": [p for p in range(1, 65) if n % p == 0 and model.layers % p == 0],
    }


if __name__ == "__main__":
    app.run()
