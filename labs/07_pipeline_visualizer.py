import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 07: The pipeline bubble, drawn from real schedules",
)

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import charts, timeline_svg, ui
    from labs.core.scenarios.lab05 import ACT2_DESIGNS
    from labs.core.scenarios.lab07 import (
        COSTS_M_PER_STAGE,
        activation_setting,
        interleaving_rows,
        pipeline_outcomes,
        pipeline_setting,
        run_report,
        schedule_cost_rows,
        stage_activation_bytes,
        table5_profile,
        table5_rows,
    )
    from labs.core.engine.perf import estimate
    from labs.core.engine.pipeline import OpCosts, bubble_fraction, timeline
    from labs.core.scenarios.lab05 import design_inputs

    LAB = "07_pipeline_visualizer"
    SCHEDULE_NAMES = {"GPipe": "gpipe", "1F1B": "1f1b", "interleaved 1F1B": "interleaved", "ZB-H1": "zb-h1", "ZB-H2": "zb-h2"}
    SCHEDULE_LABELS = {v: k for k, v in SCHEDULE_NAMES.items()}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 07 · The pipeline bubble, drawn from real schedules

    A pipeline of $p$ stages idles while it fills and drains. How much, and what buys it back:
    more micro-batches, interleaved chunks, or splitting the backward pass? Every box below is an
    op the engine scheduled (`labs.core.engine.pipeline.timeline`); the idle time is counted on the
    drawing, then set beside the formula.

    **Before you start:** Narayanan et al. 2021 Sec. 2.2 (1F1B and interleaving); Qi et al. 2024,
    *Zero Bubble Pipeline Parallelism*, Sec. 2-3.
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


# Your lab's numbers are drawn from your id (labs.variants): the stages, micro-batches and the
# bubble target below are yours.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    deep_p, bubble_target = variant.settings["deep_p"], variant.settings["target"]
    return bubble_target, deep_p, variant


@app.cell(hide_code=True)
def _(deep_p):
    _m = 2 * deep_p
    _deep = bubble_fraction(deep_p, _m, "1f1b", 1, "total")
    ui.stakeholder_message(
        "Pipeline owner",
        f"Our model runs on {deep_p} pipeline stages with {_m} micro-batches per step, and the profiler says the GPUs "
        f"sit idle **{_deep:.0%}** of the time. A colleague says more micro-batches fix it, another says a new "
        "schedule does. How many micro-batches do we need, and what does each fix cost?",
    )
    return


@app.cell
def _(variant):
    utilisation_question = ui.variant_question(variant.questions["utilisation"])
    utilisation_question
    return (utilisation_question,)


@app.cell
def _():
    utilisation_commit_buttons = ui.commit_buttons()
    return (utilisation_commit_buttons,)


@app.cell
def _(held_now, identity, utilisation_commit_buttons, utilisation_question, variant):
    _row, utilisation_committed = ui.commit_prediction(identity, LAB, "utilisation", utilisation_question, utilisation_commit_buttons, variant=variant, held=held_now())
    _row
    return (utilisation_committed,)


@app.cell
def _(variant):
    microbatch_question = ui.variant_question(variant.questions["microbatches"])
    microbatch_question
    return (microbatch_question,)


@app.cell
def _():
    microbatch_commit_buttons = ui.commit_buttons()
    return (microbatch_commit_buttons,)


@app.cell
def _(held_now, identity, microbatch_commit_buttons, microbatch_question, variant):
    _row, microbatch_committed = ui.commit_prediction(identity, LAB, "microbatches", microbatch_question, microbatch_commit_buttons, variant=variant, held=held_now())
    _row
    return (microbatch_committed,)


# The instruments are created, and laid out, in one cell that reads nothing: moving one reruns
# only the cells that read its value (the play slider moves a marker), never the panel. The
# submit reads their setting through pipeline_inputs() when pressed, so a move does not re-run it.
@app.cell
def _():
    schedule_a = mo.ui.dropdown(options=SCHEDULE_NAMES, value="1F1B", label="Schedule A")
    schedule_b = mo.ui.dropdown(options=SCHEDULE_NAMES, value="interleaved 1F1B", label="Schedule B")
    p_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64], value=4, label="Stages p", show_value=True, debounce=True)
    m_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=8, label="Micro-batches m", show_value=True, debounce=True)
    v_slider = mo.ui.slider(steps=[2, 3, 4], value=2, label="Chunks per stage v (interleaved)", show_value=True, debounce=True)
    tb_slider = mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=1.0, label="Backward-input time T_B / T_F", show_value=True, debounce=True)
    tw_slider = mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=1.0, label="Weight-gradient time T_W / T_F", show_value=True, debounce=True)
    play_slider = mo.ui.slider(start=0, stop=100, step=5, value=100, label="Play the schedule (% of the step)", show_value=True)
    instruments = mo.vstack(
        [
            mo.md("### Instruments"),
            mo.hstack([schedule_a, schedule_b], justify="start"),
            mo.hstack([p_slider, m_slider, v_slider], justify="start", wrap=True),
            mo.hstack([tb_slider, tw_slider, play_slider], justify="start", wrap=True),
        ]
    )

    def pipeline_inputs() -> dict:
        return pipeline_setting(p_slider.value, m_slider.value, schedule_a.value, v_slider.value, tb_slider.value, tw_slider.value)
    return (
        instruments,
        m_slider,
        p_slider,
        pipeline_inputs,
        play_slider,
        schedule_a,
        schedule_b,
        tb_slider,
        tw_slider,
        v_slider,
    )


@app.cell
def _(instruments, utilisation_committed):
    ui.gate(utilisation_committed, what="the timelines")
    instruments
    return


# The chart of the timelines the cell below plays, with its play marker: a play move re-runs this
# cell alone. Both schedules in one chart, plain SVG (labs.core.timeline_svg): the page parses it
# instead of a Plotly redraw, which cost it more main-thread CPU than the floor page's whole move.
@app.cell
def _(pipeline_errors, pipeline_runs, play_slider, timeline_chart):
    mo.stop(not pipeline_runs, ui.failure_banner(pipeline_errors))
    _fig = mo.Html(timeline_svg.timelines_svg(timeline_chart, play_slider.value / 100))
    _most = max(len(_t.op) for _t in pipeline_runs.values())
    _note = mo.md(f"Over {charts.RASTER_OPS:,} ops a timeline is drawn as a raster of stage x time bins, each bin showing what fills most of it." if _most > charts.RASTER_OPS else "")
    # The chart keeps its place in the stack whether a banner shows or not (an empty one where none
    # does).
    mo.vstack([ui.failure_banner(pipeline_errors) or mo.md(""), _fig, _note])


# The timelines played, their ops drawn, and the counted bubble beside the closed form (this
# cell's output, below the chart): a move of a schedule instrument re-runs it, the chart above and
# the HUD, three cells.
@app.cell
def _(
    m_slider,
    p_slider,
    schedule_a,
    schedule_b,
    tb_slider,
    tw_slider,
    utilisation_committed,
    v_slider,
):
    ui.gate(utilisation_committed)
    _costs = OpCosts(1.0, tb_slider.value, tw_slider.value)
    pipeline_runs = {}
    pipeline_errors = []
    for _name in (schedule_a.value, schedule_b.value):
        _v = v_slider.value if _name == "interleaved" else 1
        try:
            pipeline_runs[_name] = timeline(p_slider.value, m_slider.value, _name, _v, _costs)
        except ValueError as _err:
            pipeline_errors.append(f"{_name}: {_err}")
    _runs = [(f"{SCHEDULE_LABELS[_name]}: p={_t.p}, m={_t.m}, v={_t.v}", _t) for _name, _t in pipeline_runs.items()]
    timeline_chart = timeline_svg.timelines_panels(_runs) if _runs else None
    _rows, _zb = [], False
    for _name, _t in pipeline_runs.items():
        _r = run_report(_t)
        _no = "does not hold here"
        _zb = _zb or _r["formula_total"] is None
        _rows.append(
            {
                "schedule": SCHEDULE_LABELS[_name],
                "bubble, counted (of wall time)": f"{_r['counted_total']:.1%}",
                "bubble, formula (of wall time)": _no if _r["formula_total"] is None else f"{_r['formula_total']:.1%}",
                "bubble, counted (of ideal time)": f"{_r['counted_ideal']:.1%}",
                "bubble, formula (of ideal time)": _no if _r["formula_ideal"] is None else f"{_r['formula_ideal']:.1%}",
                "bubble in stage windows (Qi et al.)": f"{_r['counted_stage']:.1%}",
                "utilisation": f"{_r['utilisation']:.1%}",
                "stage 0 holds (micro-batches)": f"{_r['held_stage0']:g}",
                "GPT-3 activations on stage 0": f"{stage_activation_bytes(_t.p, _r['held_stage0']) / 1e9:.1f} GB",
            }
        )
    # nothing below the chart where no schedule ran (its banner says why)
    _table = mo.md("") if not pipeline_runs else mo.vstack(
        [
            mo.md(
                "**Counted on the timeline, and the closed form.** Activation memory is for GPT-3 175B layers "
                f"({activation_setting()}), $L/p$ layers a stage, from the engine's per-rank model "
                "(`labs.core.engine.memory`; interleaved warm-up $(p-1)\\cdot 2 + (v-1)\\cdot N$ chunks, micro-batch group $N = p$)."
            ),
            ui.static_table(_rows),  # redrawn with every instrument: a plain table, not mo.ui.table's grid
            mo.md(
                "The zero-bubble closed forms hold once the schedule reaches its steady state, $m \\ge p$ "
                "(ZB-H2: $m \\ge 2p$). ZB-H1's is $(p-1)\\max(T_F + T_B - T_W,\\ T_B)$: Qi et al.'s "
                "$(p-1)(T_F + T_B - T_W)$ with a floor, since no weight pass hides the last backward's trip back "
                "to stage 0. Counted over the whole step it also needs $T_B \\ge \\min(T_F, T_W)$, else the "
                "$(p-1)\\,T_F$ ramp before the last stage starts is the longer wait. Where they do not hold they are not shown."
            ) if _zb else mo.md(""),
        ]
    )
    _table
    return pipeline_errors, pipeline_runs, timeline_chart


@app.cell(hide_code=True)
def _(microbatch_committed, p_slider, utilisation_committed):
    ui.gate(utilisation_committed)
    ui.gate(microbatch_committed, what="what each schedule pays")
    _cost = schedule_cost_rows(p_slider.value)
    _rows = [
        {
            "schedule": _r["label"],
            "micro-batches held by stage 0": f"{_r['held_stage0']:g}",
            "GPT-3 activations on stage 0": f"{_r['activation_bytes'] / 1e9:.1f} GB",
            "bubble with T_F = T_B = T_W": f"{_r['bubble']:.1%}",
        }
        for _r in _cost
    ]
    _one, _zb2 = _cost[1], _cost[4]
    mo.vstack(
        [
            mo.md(f"### What each schedule pays for its bubble (p = {p_slider.value}, m = {COSTS_M_PER_STAGE} x p = {_one['m']})"),
            ui.static_table(_rows),  # redrawn with the stages slider
            mo.md(
                f"GPipe and 1F1B idle the same; 1F1B holds p micro-batches instead of m. ZB-H2 idles nothing inside each "
                f"stage's window when $T_W = T_F = T_B$, by holding {_zb2['held_stage0']:g} micro-batches instead of "
                f"{_one['held_stage0']:g} (Qi et al. 2024 Table 2); its fill ramp lies outside the window, because each stage "
                "starts its next step as soon as it is done with this one. Pick ZB-H2 in the schedule menus to draw it."
            ),
        ]
    )


@app.cell(hide_code=True)
def _(utilisation_committed, variant):
    ui.gate(utilisation_committed, held_note=True)
    ui.variant_reveal(utilisation_committed, variant.questions["utilisation"])
    return


@app.cell(hide_code=True)
def _(microbatch_committed, variant):
    ui.gate(microbatch_committed, held_note=True)
    ui.variant_reveal(microbatch_committed, variant.questions["microbatches"])
    return


@app.cell(hide_code=True)
def _(bubble_target, deep_p, microbatch_committed, utilisation_committed):
    ui.gate(utilisation_committed)
    ui.gate(microbatch_committed)
    _rows = interleaving_rows(deep_p, bubble_target)
    _one = _rows[0]
    _table = [
        {
            "chunks per stage v": _r["v"],
            "fewest m (formula)": _r["fewest_m_formula"],
            "fewest m the schedule runs": _r["fewest_m_runs"],
            "bubble counted there": f"{_r['bubble_counted']:.2%}",
            "m saved against 1F1B": f"{_one['fewest_m_runs'] / _r['fewest_m_runs']:.2f}x",
            "stage 0 holds (micro-batches)": f"{_r['held_stage0']:g}",
            "p2p messages per stage and step": _r["p2p_messages"],
        }
        for _r in _rows
    ]
    mo.vstack(
        [
            mo.md(
                f"### Deep pipelines are run interleaved\n\n"
                f"No one runs {deep_p} stages of plain 1F1B with {_one['fewest_m_runs']} micro-batches: the global batch "
                "would be too big. Megatron-LM runs deep pipelines interleaved (NVIDIA's 175B recipe on H100 is TP 4, PP 8, "
                "v = 6): each stage holds v chunks of layers, the bubble's stage-steps shrink by v, and so does the number of "
                f"micro-batches needed to stay under {bubble_target:.0%}, rounded up to a multiple of p = {deep_p} (the schedule plays micro-batches in "
                "groups of p). It costs v times the point-to-point messages, and more activations held on stage 0 "
                "while the first backward waits."
            ),
            ui.data_table(_table),
        ]
    )
    return


@app.cell(hide_code=True)
def _(microbatch_committed, utilisation_committed):
    ui.gate(utilisation_committed)
    ui.gate(microbatch_committed)
    _prof = table5_profile()
    _rows = table5_rows()
    _table = [
        {
            "m": _r["m"],
            "schedule": _r["schedule"],
            "formula, no messages": f"{_r['formula']:.2%}",
            "timeline with messages (engine)": f"{_r['counted']:.2%}",
            "Qi et al. Table 5": f"{_r['paper']:.2%}",
            "idle per stage": f"{_r['idle_per_stage_ms']:.0f} ms",
        }
        for _r in _rows
    ]
    _h2 = [_r for _r in _rows if _r["schedule"] == "ZB-H2"]
    _first = _h2[0]
    mo.vstack(
        [
            mo.md(
                f"""
    ### The formulas beside Qi et al.'s measured bubble rates

    Qi et al. 2024 Table 5 profiles a {_prof['inputs']['model']} model on p = {_prof['inputs']['pp']} A100 stages:
    $T_F$ = {_first['tf_ms']:.1f} ms, $T_B$ = {_first['tb_ms']:.1f} ms, $T_W$ = {_first['tw_ms']:.1f} ms and
    {_first['comm_ms']:.2f} to {_h2[-1]['comm_ms']:.2f} ms per message. The engine plays their handcrafted schedules with
    those times and counts the idle time in each stage's window, as the paper does: it gives the published rates.

    **ZB-H2 is not bubble-free there:** {", ".join(f"{_r['paper']:.2%} at m = {_r['m']}" for _r in _h2)}. Its closed form
    $(p-1)(T_F+T_B-2T_W)$ is zero only when $T_W \\ge (T_F+T_B)/2$; the profiled $T_W$ is
    {_first['tw_ms'] / _first['tf_ms']:.2f} $T_F$, so each stage still idles {_first['idle_per_stage_ms']:.0f} ms a step
    at m = {_first['m']}, messages included.
    """
            ),
            ui.data_table(_table),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    _model, _cluster = design_inputs()
    _est = estimate(_model, _cluster, ACT2_DESIGNS["C"])
    _pp_mb = _est.comm_bytes_per_gpu["pp"] / (2 * _est.plan.microbatches) / 1e6
    mo.md(
        f"""
    ### Where pipeline parallelism belongs

    For {_model.name} as TP {_est.plan.tp} x PP {_est.plan.pp} x DP {_est.plan.dp} on {_cluster.gpus} H100s, each GPU
    sends **{_pp_mb:.1f} MB** per micro-batch across a stage boundary (each way), **{_est.comm_bytes_per_gpu['pp'] / 1e9:.2f} GB**
    per step, while its tensor-parallel all-reduces move **{_est.comm_bytes_per_gpu['tp'] / 1e9:.0f} GB** per step. Pipeline
    traffic is small and point-to-point, so it can cross nodes on a NIC; tensor-parallel traffic needs NVLink.
    """
    )
    return


@app.cell(hide_code=True)
def _(microbatch_committed, utilisation_committed):
    ui.gate(utilisation_committed)
    ui.gate(microbatch_committed)
    ui.math_peek(
        "The equations behind the bubble",
        r"""
    GPipe and 1F1B: idle $(p-1)(T_F+T_B+T_W)$ per stage, so the bubble is $\frac{p-1}{m+p-1}$ of the wall
    time, or $\frac{p-1}{m}$ of the bubble-free time $m(T_F+T_B+T_W)$.

    Interleaved 1F1B with $v$ chunks per stage: $\frac{p-1}{v\,m}$ of the ideal time, for $v$ times the
    point-to-point messages.

    ZB-H1: $(p-1)(T_F+T_B-T_W)$ idle; ZB-H2: $(p-1)(T_F+T_B-2T_W)$ in each stage's window (Qi et al.'s forms,
    which assume $T_W \le \min(T_F, T_B)$ and enough micro-batches, $m \ge p$, ZB-H2 $m \ge 2p$; inside that
    regime ZB-H2's idle reaches zero only at $T_F = T_B = T_W$). In general the timelines idle $(p-1)\max(T_F+T_B-T_W,\ T_B)$ and
    $(p-1)\max(T_F+T_B-2T_W,\ T_B-T_F,\ 0)$, the forms the engine uses throughout. With point-to-point time $T_{comm}$ Qi et al.'s schedules idle $(p-1)(T_F+T_B-T_W+4T_{comm})$ and
    $(p-1)(T_F+T_B-2T_W+2T_{comm})$.
    """,
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    identity,
    microbatch_committed,
    pipeline_inputs,
    submit_button,
    utilisation_committed,
    variant,
):
    ui.gate(utilisation_committed, held=(microbatch_committed,))
    _pred = {"utilisation": utilisation_committed.answer, "microbatches": microbatch_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, "pipeline", pipeline_inputs(), _pred, pipeline_outcomes, "the pipeline design", variant)]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _(microbatch_committed, utilisation_committed):
    ui.gate(utilisation_committed)
    ui.gate(microbatch_committed)
    mo.md(r"""
    ## Key takeaways

    - The bubble is a fill-and-drain cost: $p-1$ stage-steps out of $m+p-1$. Only more micro-batches,
      more chunks, or splitting the backward pass shrink it.
    - 1F1B does not idle less than GPipe; it holds $p$ micro-batches of activations instead of $m$.
    - Deep pipelines run interleaved: $v$ chunks per stage divide the micro-batches needed by about $v$.
    - Zero-bubble schedules fill the drain with weight-gradient passes, as far as $T_W$ reaches: at
      Qi et al.'s profiled times ZB-H2 still idles.
    - Pipeline parallelism sends megabytes per micro-batch; that is why it is the axis that crosses nodes.

    **Back to:** Lab 05, Act II, where the bubble enters the step time of a 175B model.
    """)
    return


@app.cell
def _(microbatch_committed, pipeline_runs, submitted, utilisation_committed):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "utilisation prediction": utilisation_committed.describe(),
            "micro-batch prediction": microbatch_committed.describe(),
            "bubbles": ", ".join(f"{k} {t.bubble_fraction():.1%}" for k, t in pipeline_runs.items()) if ui.gate(utilisation_committed, stop=False) else "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


if __name__ == "__main__":
    app.run()
