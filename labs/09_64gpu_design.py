import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 09: The 64-GPU design worksheet, live",
)

with app.setup:
    import json
    from functools import lru_cache

    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import charts, ui
    from labs.core.engine.layout import RANK_ORDER_NOTES, RANK_ORDERS
    from labs.core.grid_svg import grid_svg
    from labs.core.scenarios.prose import STACK, dp64_recompute
    from labs.core.scenarios.lab09 import (
        BOTTLENECK_CHOICES,
        GLOBAL_BATCH,
        JOB_LABELS,
        JOBS,
        LAB,
        LINK_CHOICES,
        MICRO_BATCHES,
        PARAGRAPH_CHARS,
        PP_CHOICES,
        REASON_CHARS,
        SMALL_BATCH,
        TIME_TOLERANCE,
        TP_CHOICES,
        inputs_estimate,
        map_markdown,
        placements,
        pp_costs,
        recipe,
        reference_estimates,
        worksheet_estimate,
        worksheet_outcomes,
    )

    SPOKEN_TIME_MAX_MS = 1e7  # the largest exposed time the spoken-design field records
    SPOKEN_QUESTION = "spoken_bottleneck"  # the first submit's spoken bottleneck, committed as a prediction is
    ZERO_STAGES = {"0 (none)": 0, "1 (optimizer state)": 1, "2 (+ gradients)": 2, "3 (FSDP: + weights)": 3}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 09 · The 64-GPU design worksheet, live

    Eight nodes of eight GPUs. For TP, PP, DP and ZeRO/FSDP you choose a degree, a placement and
    a reason, and say which collective will be the bottleneck. Here the worksheet answers back:
    the engine in `labs/core` fills in the communication map with calls, bytes, links and
    seconds, and draws which GPU talks to which. About 35 minutes.

    **Before you start:** Narayanan et al. 2021, *Efficient Large-Scale Language Model Training
    on GPU Clusters Using Megatron-LM*, Sections 3 (parallelism configurations) and 4
    (implementation, including the rank order); the ZeRO paper (Rajbhandari et al. 2020)
    Section 5; Labs 05 (the 3D design) and 07 (the bubble).
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


# The micro-batch and recompute setting of your DP = 64 question are drawn from your id
# (labs.variants), and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    return (variant,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1 · The job
    """)
    return


@app.cell(hide_code=True)
def _():
    _cards = []
    for _key, _job in JOBS.items():
        _model, _cluster = _job.inputs()
        _cards.append(ui.stakeholder_message(
            _job.sender,
            f"{_job.ask} The model is {_model.name}: {_model.params / 1e9:.1f}B parameters, {_model.layers} layers, "
            f"hidden size {_model.hidden}. The cluster: {_cluster.nodes} nodes x {_cluster.gpus_per_node} {_cluster.gpu.name} "
            f"({_cluster.gpu.hbm_bytes / 1e9:.1f} GB each), {_cluster.intra.name} inside a node, {_cluster.rails} x {_cluster.inter.name} "
            f"per node. Global batch {GLOBAL_BATCH:,} sequences of {_model.seq_len:,} tokens.",
        ))
    mo.vstack(_cards)
    return


@app.cell
def _(variant):
    dp64_question = ui.variant_question(variant.questions["dp64"])
    dp64_question
    return (dp64_question,)


@app.cell
def _():
    dp64_commit_buttons = ui.commit_buttons()
    return (dp64_commit_buttons,)


@app.cell
def _(dp64_commit_buttons, dp64_question, held_now, identity, variant):
    _row, dp64_committed = ui.commit_prediction(identity, LAB, "dp64", dp64_question, dp64_commit_buttons, variant=variant, held=held_now())
    _row
    return (dp64_committed,)


@app.cell(hide_code=True)
def _(dp64_committed, variant):
    ui.gate(dp64_committed, held_note=True)
    # Each option's line comes from the engine at the student's micro-batch and recompute setting (labs/core/scenarios/lab09.py).
    ui.variant_reveal(dp64_committed, variant.questions["dp64"])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2 · The worksheet

    Fill in the degrees (DP takes the rest of the 64 GPUs), the ZeRO/FSDP stage and the rank
    order, which decides the placement: the axis that varies fastest along the ranks gets
    neighbouring GPUs, inside one node. Give each row a one-line reason; it goes into your ledger.
    """)
    return


# The design's six instruments in one cell: shown by the gated cell below through design_panel (a
# copy made here, so a move re-draws no instrument), read by the submit through design_inputs()
# when it is pressed (a move re-runs no submit).
@app.cell
def _():
    scenario_dropdown = mo.ui.dropdown(options={v: k for k, v in JOB_LABELS.items()}, value=JOB_LABELS["70b-h100"], label="Job")
    tp_dropdown = mo.ui.dropdown(options={str(t): t for t in TP_CHOICES}, value="8", label="TP degree")
    pp_dropdown = mo.ui.dropdown(options={str(p): p for p in PP_CHOICES}, value="1", label="PP degree")
    zero_dropdown = mo.ui.dropdown(options=ZERO_STAGES, value="1 (optimizer state)", label="ZeRO / FSDP stage")
    microbatch_dropdown = mo.ui.dropdown(options={str(b): b for b in MICRO_BATCHES}, value="1", label="Micro-batch (sequences)")
    order_radio = mo.ui.radio(options={f"{o}: {RANK_ORDER_NOTES[o]}": o for o in RANK_ORDERS}, value=f"{RANK_ORDERS[0]}: {RANK_ORDER_NOTES[RANK_ORDERS[0]]}", label="Rank order (innermost first)")
    design_panel = mo.vstack([
        mo.md("### Your design"),
        mo.hstack([scenario_dropdown, tp_dropdown, pp_dropdown, zero_dropdown, microbatch_dropdown], justify="start", wrap=True),
        order_radio,
    ])

    def design_inputs() -> dict:
        return dict(scenario=scenario_dropdown.value, tp=tp_dropdown.value, pp=pp_dropdown.value, zero_stage=zero_dropdown.value,
                    micro_batch=microbatch_dropdown.value, rank_order=order_radio.value)
    return (
        design_inputs,
        design_panel,
        microbatch_dropdown,
        order_radio,
        pp_dropdown,
        scenario_dropdown,
        tp_dropdown,
        zero_dropdown,
    )


@app.cell
def _():
    reason_inputs = mo.ui.dictionary({
        axis: mo.ui.text(placeholder="one line: why this degree and placement", max_length=REASON_CHARS, full_width=True, label=f"Reason for {axis.upper() if axis != 'zero' else 'ZeRO/FSDP'}")
        for axis in ("tp", "pp", "dp", "zero")
    })
    return (reason_inputs,)


@app.cell
def _(design_panel, dp64_committed):
    ui.gate(dp64_committed, what="the worksheet")
    design_panel
    return


# The design, its sheet and its communication map in one cell: a move of the design re-runs this
# cell, the grid's and the HUD, not the instruments or the submit.
@app.cell
def _(
    dp64_committed,
    microbatch_dropdown,
    order_radio,
    pp_dropdown,
    reason_inputs,
    scenario_dropdown,
    tp_dropdown,
    zero_dropdown,
):
    ui.gate(dp64_committed)
    worksheet_inputs = dict(
        scenario=scenario_dropdown.value,
        tp=tp_dropdown.value,
        pp=pp_dropdown.value,
        zero_stage=zero_dropdown.value,
        micro_batch=microbatch_dropdown.value,
        rank_order=order_radio.value,
    )
    design, design_error = design_of(worksheet_inputs)
    design_sheet(design, design_error, reason_inputs)
    return design, worksheet_inputs


@app.function
def design_of(inputs: dict):
    """The worksheet's estimate and None, or None and why the engine refused the design."""
    try:
        return worksheet_estimate(**inputs), None
    except ValueError as err:
        return None, str(err)


@app.function
@lru_cache(maxsize=512)
def kept_md(text: str):
    """mo.md of a text, kept: the sheet's headings and its degrees and placements (a few dozen
    texts) come back at most moves, and rendering markdown was a third of a design move's Python."""
    return mo.md(text)


@app.function
def design_sheet(design, design_error, reason_inputs):
    """The worksheet's rows (degree, placement, the student's reason), the cards and the map; the
    refusal alone when the design is invalid."""
    if design is None:
        return ui.failure_banner([f"Invalid design: {design_error}"])
    place = placements(design)
    p = design.plan
    rows = [("TP", p.tp, place["tp"], "tp"), ("PP", p.pp, place["pp"], "pp"), ("DP", p.dp, place["dp"], "dp"), ("ZeRO/FSDP", f"stage {p.zero_stage}", place["zero"], "zero")]
    sheet = mo.vstack(
        [mo.hstack([kept_md("**axis · degree**"), kept_md("**placement, from the rank order**"), kept_md("**your reason**")], widths=[1, 2, 3])]
        + [mo.hstack([kept_md(f"**{a}** · {d}"), kept_md(pl), reason_inputs[k]], widths=[1, 2, 3], align="center") for a, d, pl, k in rows]
    )
    items = [
        # the banner's place kept when there is none (an empty markdown, display: contents, no gap), so
        # the rows below keep theirs in the stack: a move that raised or lifted it re-mounted the reasons' fields
        ui.failure_banner(design.warnings) or kept_md(""),
        ui.metric_cards({
            "MFU": f"{design.mfu:.1%}",
            "step time": f"{design.step_time_s:.2f} s",
            "memory, busiest GPU": f"{design.memory.total / 1e9:.1f} GB",
            "fits": "yes" if design.fits else "no",
            "bubble": f"{design.bubble_fraction:.1%}",
            "micro-batches per pipeline": f"{p.microbatches}",
        }),
        ui.published_beside(design),
        sheet,
    ]
    return mo.vstack([
        *items,
        kept_md("## 3 · The communication map, filled by the engine"),
        mo.md(map_markdown(design, mark_dominant=False)),
    ])


@app.cell
def _():
    grid_dropdown = mo.ui.dropdown(options={v: k for k, v in charts.GRID_AXES.items()}, value="TP group", label="Colour the GPUs by")
    return (grid_dropdown,)


@app.cell
def _(design, grid_dropdown, worksheet_inputs):
    mo.stop(design is None)
    grid_figure = grid_view(**worksheet_inputs, color_by=grid_dropdown.value)
    mo.vstack([
        kept_md(f"## 4 · The {design.cluster.nodes} x {design.cluster.gpus_per_node} grid\n\nOne row per node. Lines are the hops of the chosen groups that leave a node. Hover for a GPU's coordinates and memory; a cross marks a GPU over its HBM. Change the rank order and watch the TP groups."),
        grid_dropdown,
        grid_figure,
    ])
    return (grid_figure,)


@app.function
@lru_cache(maxsize=128)
def grid_view(scenario: str, tp: int, pp: int, zero_stage: int, micro_batch: int, rank_order: str, color_by: str) -> mo.Html:
    """The GPU grid of a design (charts.gpu_grid's figure) drawn as plain SVG, kept per design and
    colouring (worksheet_estimate is cached the same way). Not a Plotly chart: every rank-order
    move redraws its 64 cells, and Plotly's redraw of them was most of the page's work on a move
    (a move with the grid left out cost the page about what the floor page's move does)."""
    return mo.Html(grid_svg(*charts.gpu_grid_parts(worksheet_estimate(scenario, tp, pp, zero_stage, micro_batch, rank_order), color_by)))


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5 · "PP across nodes is free"?

    Seed 000 says so. Your design may have put pipeline stages across the nodes; before the numbers,
    say what a pipeline across nodes costs the step at your batch.
    """)
    return


@app.cell
def _(variant):
    pp_free_question = ui.variant_question(variant.questions["pp_free"])
    pp_free_question
    return (pp_free_question,)


@app.cell
def _():
    pp_free_commit_buttons = ui.commit_buttons()
    return (pp_free_commit_buttons,)


@app.cell
def _(held_now, identity, pp_free_commit_buttons, pp_free_question, variant):
    _row, pp_free_committed = ui.commit_prediction(identity, LAB, "pp_free", pp_free_question, pp_free_commit_buttons, variant=variant, held=held_now())
    _row
    return (pp_free_committed,)


@app.cell(hide_code=True)
def _(pp_free_committed, variant):
    ui.gate(pp_free_committed, what="the answer on PP across nodes")
    # Each option's line comes from the engine at the student's batch and pipeline depth (labs/core/scenarios/lab09.py).
    ui.variant_reveal(pp_free_committed, variant.questions["pp_free"])
    return


@app.cell(hide_code=True)
def _(dp64_committed, pp_free_committed):
    ui.gate(dp64_committed, pp_free_committed, what="the misconceptions")
    _ests = reference_estimates()
    _lines = ["| job | layout | memory per GPU | fits | MFU |", "|---|---|---:|---|---:|"]
    for _key, _by in _ests.items():
        for _name, _e in _by.items():
            _lines.append(f"| {JOB_LABELS[_key]} | {_name} | {_e.memory.total / 1e9:,.1f} GB | {'yes' if _e.fits else 'no: out of memory'} | {f'{_e.mfu:.1%}' if _e.fits else '—'} |")
    _pp = ["| batch (sequences) | layout | micro-batches | bubble | PP send/recv on the wire | exposed | memory per GPU | MFU |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for _batch in (GLOBAL_BATCH, SMALL_BATCH):
        for _r in pp_costs("70b-h100", _batch):
            _pp.append(f"| {_batch:,} | TP 8 x PP {_r['pp']} x DP {_r['dp']} | {_r['microbatches']} | {_r['bubble_fraction']:.1%} ({_r['bubble_s'] * 1e3:,.0f} ms) | "
                       f"{_r['pp_wire_s'] * 1e3:,.0f} ms | {_r['pp_exposed_s'] * 1e3:,.1f} ms | {_r['memory_bytes'] / 1e9:,.1f} GB | {_r['mfu']:.1%} |")
    _deep = pp_costs("70b-h100", SMALL_BATCH)[-1]
    mo.md(
        "## 6 · Misconceptions, met with numbers\n\n"
        "**\"64 GPUs means DP = 64.\"** A data-parallel replica per GPU must hold the model state and its own activations "
        f"(MFU is the engine's for {STACK}, with FSDP for ZeRO-3):\n\n"
        + "\n".join(_lines)
        + "\n\n**\"PP across nodes is free.\"** Pipeline stages talk only at their boundaries, once per micro-batch each way, "
        "so the send/recv volume is small and mostly hidden. What a pipeline costs is the fill and drain (the bubble, "
        "(p-1)/(m+p-1) of the step) and the chain of dependent sends in it; both grow with p and shrink only as the micro-batches m grow, "
        f"and m is the global batch divided by DP. At {SMALL_BATCH} sequences the 70B's 8-stage pipeline idles {_deep['bubble_fraction']:.1%} of the step. "
        "What the stages buy is memory: each GPU holds 1/p of the layers.\n\n"
        + "\n".join(_pp)
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 7 · Say it out loud

    Write your design as you would explain it to the stakeholder: the degrees and where they sit,
    what each buys, and the collective you expect to be the bottleneck. Then name that
    collective, its link and its exposed time per step; they are checked against the engine's map.
    """)
    return


@app.cell
def _():
    paragraph_area = mo.ui.text_area(placeholder="For 8 nodes x 8 GPUs I put TP ... because ...", max_length=PARAGRAPH_CHARS, full_width=True, rows=5, label="Your design, in a paragraph")
    return (paragraph_area,)


@app.cell
def _():
    bottleneck_dropdown = mo.ui.dropdown(options=BOTTLENECK_CHOICES, label="Bottleneck collective")
    return (bottleneck_dropdown,)


@app.cell
def _():
    link_dropdown = mo.ui.dropdown(options=LINK_CHOICES, label="Its link")
    return (link_dropdown,)


@app.cell
def _():
    time_number = mo.ui.number(step=0.1, value=0, label=f"Its exposed time per step (ms, 0 to {SPOKEN_TIME_MAX_MS:,.0f})")
    return (time_number,)


# What the student says, as it stands, kept for the submit: the cell below writes it here at every
# change of its fields and the submit reads it when pressed, so a change re-runs that cell alone
# (reading `spoken` there re-ran the submit, the two views below it and the HUD: five cells a move).
@app.cell
def _():
    spoken_now = {}
    return (spoken_now,)


@app.cell
def _(
    bottleneck_dropdown,
    dp64_committed,
    link_dropdown,
    paragraph_area,
    spoken_now,
    time_number,
):
    ui.gate(dp64_committed)
    _t = time_number.value
    _bad_time = _t is not None and not 0 <= _t <= SPOKEN_TIME_MAX_MS
    spoken = dict(bottleneck=bottleneck_dropdown.value, bottleneck_link=link_dropdown.value, bottleneck_time_ms=None if _bad_time else (_t or None))
    spoken_now.update(spoken=spoken, paragraph=paragraph_area.value)
    _items = [paragraph_area, mo.hstack([bottleneck_dropdown, link_dropdown, time_number], justify="start", wrap=True)]
    if _bad_time:
        _items.append(ui.failure_banner([f"An exposed time must be between 0 and {SPOKEN_TIME_MAX_MS:,.0f} ms: {_t:,g} is not recorded."]))
    _items.append(mo.md("Your answers are checked against the engine's map when you submit the worksheet, not before."))
    mo.vstack(_items)
    return (spoken,)


@app.cell(hide_code=True)
def _(dp64_committed):
    ui.gate(dp64_committed)
    ui.math_peek(
        "The equations behind the map",
        r"""
    Per GPU per step, with $m$ micro-batches of $b$ sequences of $s$ tokens, hidden size $h$,
    $L_s$ layers on the stage, 2-byte activations, $\Psi$ parameters on the GPU's TP x PP shard:

    - **TP** (Megatron, with sequence parallelism): an all-gather and a reduce-scatter of $b\,s\,h$
      activations twice per layer per pass, $2\,(t-1)/t \cdot 2bsh$ bytes each pair:
      $\;B_{TP} = m\,L_s\,(2+r)\cdot 4\,\frac{t-1}{t}\,2bsh$ ($r = 1$ under full recompute).
    - **PP**: one send of $2bsh/t$ bytes per micro-batch per boundary each way: $B_{PP} = 2m\cdot 2bsh/t$;
      bubble $\frac{p-1}{m+p-1}$ of the step under 1F1B.
    - **DP**: a ring all-reduce of the gradients, $2\frac{n-1}{n}\,4\Psi$ bytes in fp32 (ZeRO-0), or a
      reduce-scatter $\frac{n-1}{n}\,4\Psi$ plus an all-gather of the bf16 weights $\frac{n-1}{n}\,2\Psi$
      (ZeRO-1), in buckets of $\max(40\text{M}, 10^6 n)$ parameters, overlapped with the backward.
    - **Placement**: under a rank order an axis's members sit $\sigma$ = (product of the inner
      degrees) ranks apart, so $\min(n, \lfloor G/\sigma \rfloor)$ of them share a node of $G$ GPUs.
      A group inside a node runs on NVLink; one that spans nodes crosses on its share of the
      node's NICs, and TP's overlap with the GEMMs works only inside the NVLink domain.
    """,
    )
    return


@app.cell(hide_code=True)
def _(dp64_committed):
    ui.gate(dp64_committed)
    _inner = worksheet_estimate("70b-h100", 8, 1, 1, 1, RANK_ORDERS[0])
    _outer = worksheet_estimate("70b-h100", 8, 1, 1, 1, "cp-dp-tp-pp")
    _tp_in = next(c for c in _inner.collectives if c.key == "tp")
    _tp_out = next(c for c in _outer.collectives if c.key == "tp")
    mo.md(
        f"""
    ### Reflection: the same degrees, another order

    TP = {_inner.plan.tp} x DP = {_inner.plan.dp} for the {_inner.model.name}, ZeRO-{_inner.plan.zero_stage}. With TP innermost each TP group is one node and its
    collectives expose **{_tp_in.exposed_s:,.1f} s** per step on {_tp_in.link}; MFU {_inner.mfu:.1%}.
    With DP innermost the same TP groups span {_tp_out.nodes} nodes, {_tp_out.members_per_node} GPU per node, and
    expose **{_tp_out.exposed_s:,.1f} s** on {_tp_out.link}; MFU {_outer.mfu:.1%}. The bytes are the same
    ({_tp_in.sent_bytes / 1e9:,.0f} GB per GPU per step): the link and the lost overlap make the difference. Which
    axis of your own design would you move inward next, and what would it push out of the node?
    """
    )
    return


@app.cell(hide_code=True)
def _(dp64_committed, pp_free_committed):
    ui.gate(dp64_committed, pp_free_committed, what="the key takeaways")
    _ests = reference_estimates()
    _z3 = _ests["70b-h100"]["DP=64, ZeRO-3"]
    _rows = pp_costs("70b-h100", SMALL_BATCH)
    mo.md(
        f"""
    ## Key takeaways

    - DP = 64 is a memory question first: plain data parallelism needs
      {_ests['13b-a100']['DP=64, ZeRO-0'].memory.total / 1e9:,.0f} GB per GPU for the 13B; ZeRO-3 shards the state but not the
      activations, so the 70B still needs {_z3.memory.total / 1e9:,.0f} GB at DP = 64 with selective recompute; full
      recomputation would fit it for {100 * (dp64_recompute()['selective'].mfu - dp64_recompute()['full'].mfu):.0f} points of MFU.
    - The chattiest collective (TP, every layer) belongs on the fastest link: the rank order, not
      only the degree, decides whether it stays inside a node.
    - Pipeline stages across nodes send little, but pay a bubble that grows with p and shrinks with
      the micro-batches: {_rows[1]['bubble_fraction']:.1%} at PP = 2 and {_rows[-1]['bubble_fraction']:.1%} at PP = 8 for {SMALL_BATCH} sequences.
    - Say the bottleneck with its link and its seconds, not only the degrees.

    **Next:** Lab 10 (failures at scale) asks what the same 64 GPUs lose to checkpoints and restarts.
    """
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my worksheet to the ledger")
    return (submit_button,)


@app.cell
def _(
    design_inputs,
    dp64_committed,
    identity,
    pp_free_committed,
    reason_inputs,
    spoken_now,
    submit_button,
    variant,
):
    ui.gate(dp64_committed, pp_free_committed)

    def _steps():
        _design_inputs = design_inputs()  # the instruments as they stand when the button is pressed
        _design, _design_error = design_of(_design_inputs)
        if _design is None:
            yield ui.NotSaved("worksheet", f"the design is invalid ({_design_error})")
            return
        # The spoken bottleneck is committed at the first submit, like a prediction: a later submit, made
        # after the marked map showed the answer, records a change and keeps the first (newcomer 38bda0b).
        _first = ui.open_ledger(identity).commit_prediction(LAB, SPOKEN_QUESTION, json.dumps(spoken_now["spoken"], sort_keys=True), variant=variant.record())
        _inputs = {**_design_inputs, **{f"reason_{k}": v for k, v in reason_inputs.value.items()}, **json.loads(_first["answer"]),
                   "paragraph": spoken_now["paragraph"]}
        _predictions = {"dp64": dp64_committed.answer, "pp_free": pp_free_committed.answer}
        yield LAB, "worksheet", _inputs, _predictions, worksheet_outcomes(_inputs, _predictions, variant=variant), variant

    _view, submitted = ui.submit_to_ledger(identity, submit_button, _steps)
    _view
    return (submitted,)


@app.cell
def _(submitted):
    mo.stop(submitted is None)
    _step = submitted["labs"][LAB]["worksheet"]
    _o, _in = _step["outcomes"], _step["inputs"]
    _keys = ("bottleneck_correct", "link_correct", "time_correct")
    _marks = " · ".join(f"{name} {'✔' if _o.get(k) else '✘'}" for name, k in zip(("collective", "link", "time"), _keys))
    _names = {v: k for k, v in BOTTLENECK_CHOICES.items()}
    _said = _names.get(_in.get("bottleneck"), "none named")
    _truth = (f"the map's bottleneck is **{_names.get(_o['dominant'], _o['dominant'])}**, {'across nodes' if _o['dominant_link'] == 'inter' else 'inside a node'}, "
              f"{_o['dominant_exposed_s'] * 1e3:,.1f} ms exposed per step") if _o.get("dominant") else "this design runs no collective"
    mo.vstack([
        mo.callout(
            mo.md(f"**Your spoken bottleneck, as submitted** ({_said}): {_marks} (time within {TIME_TOLERANCE:.0%} of the engine's). Checked: {_truth}."),
            kind="success" if all(_o.get(k) for k in _keys) else "warn",
        ),
        mo.md("**The submitted design's communication map, marked**\n\n" + map_markdown(inputs_estimate(_in), mark_dominant=True)),
    ])
    return


@app.cell
def _(design, submitted):
    mo.stop(submitted is None or design is None)
    _scenario = submitted["labs"][LAB]["worksheet"]["inputs"]["scenario"]
    _r = recipe(_scenario)
    _best = _r["best"]
    _mine = design
    mo.vstack([
        mo.md(
            f"""
    ### The engine's best plan beside yours ({JOB_LABELS[_scenario]})

    | | yours | engine's best |
    |---|---|---|
    | layout | TP {_mine.plan.tp} x PP {_mine.plan.pp} x DP {_mine.plan.dp}, ZeRO-{_mine.plan.zero_stage}, micro-batch {_mine.plan.micro_batch} | TP {_best.tp} x PP {_best.pp} x DP {_best.dp}, ZeRO-{_best.zero_stage}, micro-batch {_best.micro_batch} |
    | MFU | {_mine.mfu:.1%} | {_best.mfu:.1%} |
    | memory per GPU | {_mine.memory.total / 1e9:.1f} GB | {_best.memory_bytes / 1e9:.1f} GB |

    **The recipe, applied.** (1) *Fit memory*: of the {_r['plans']} plans of this lab's software,
    {_r['fitting']} fit in {_mine.cluster.gpu.hbm_bytes / 1e9:.1f} GB; the smallest model-parallel
    degree TP x PP among them is {_r['smallest_model_parallel']}. (2) *Reach the global batch*: DP is what
    is left of 64, and every pipeline then runs {GLOBAL_BATCH:,} / (micro-batch x DP) micro-batches
    ({_r['best_m']} for the best plan). (3) *Maximise throughput*: the fastest of those is the one above.
    """
        ),
        charts.design_front(_r["frame"], _mine),
    ])
    return


@app.cell
def _(bottleneck_dropdown, design, dp64_committed, submitted):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "prediction": dp64_committed.describe(),
            "design": f"TP{design.plan.tp}·PP{design.plan.pp}·DP{design.plan.dp}·ZeRO-{design.plan.zero_stage} ({design.plan.rank_order})" if design is not None else "—",
            "MFU": f"{design.mfu:.1%}" if design is not None else "—",
            "fits": ("yes" if design.fits else "no") if design is not None else "—",
            "bottleneck named": bottleneck_dropdown.value or "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


if __name__ == "__main__":
    app.run()
