import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 07: The pipeline bubble, drawn from real schedules",
)

with app.setup:
    import marimo as mo
    import pandas as pd

    from labs.core import ENGINE_VERSION
    from labs.core import charts, ui
    from labs.core.memory import activation_bytes_per_layer, in_flight_microbatches
    from labs.core.outcomes import (
        ACT2_DESIGNS,
        BUBBLE_TARGET,
        DEEP_P,
        MICROBATCH_OPTIONS,
        SEED_M,
        SEED_P,
        UTILISATION_OPTIONS,
        UTILISATION_VALUES,
        microbatch_answer,
        pipeline_outcomes,
        seed_utilisation,
        utilisation_answer,
    )
    from labs.core.perf import estimate
    from labs.core.pipeline import OpCosts, bubble_fraction, timeline
    from labs.core.scenarios import design_inputs

    LAB = "07_pipeline_visualizer"
    SCHEDULE_NAMES = {"GPipe": "gpipe", "1F1B": "1f1b", "interleaved 1F1B": "interleaved", "ZB-H1": "zb-h1"}
    SCHEDULE_LABELS = {v: k for k, v in SCHEDULE_NAMES.items()}


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Lab 07 · The pipeline bubble, drawn from real schedules

    A pipeline of $p$ stages idles while it fills and drains. How much, and what buys it back:
    more micro-batches, interleaved chunks, or splitting the backward pass? Every box below is an
    op the engine scheduled (`labs.core.pipeline.timeline`); the idle time is counted on the
    drawing, then set beside the formula.

    **Before you start:** Narayanan et al. 2021 Sec. 2.2 (1F1B and interleaving); Qi et al. 2024,
    *Zero Bubble Pipeline Parallelism*, Sec. 2-3.
    """)
    return


@app.cell
def _():
    student_input = ui.student_identity()
    student_input
    return (student_input,)


@app.cell(hide_code=True)
def _():
    _deep = bubble_fraction(DEEP_P, 32, "1f1b", 1, "total")
    ui.stakeholder_message(
        "Pipeline owner",
        f"Our model runs on {DEEP_P} pipeline stages with 32 micro-batches per step, and the profiler says the GPUs "
        f"sit idle **{_deep:.0%}** of the time. A colleague says more micro-batches fix it, another says a new "
        "schedule does. How many micro-batches do we need, and what does each fix cost?",
    )
    return


@app.cell
def _():
    utilisation_question = ui.prediction_question(
        f"{SEED_P} stages, {SEED_M} micro-batches, 1F1B, forward and backward of equal size per stage: what share of the time is each GPU busy?",
        UTILISATION_OPTIONS,
    )
    utilisation_question
    return (utilisation_question,)


@app.cell
def _():
    microbatch_question = ui.prediction_question(
        f"With {DEEP_P} stages and 1F1B, how many micro-batches keep the bubble under {BUBBLE_TARGET:.0%} of the wall time?",
        MICROBATCH_OPTIONS,
    )
    microbatch_question
    return (microbatch_question,)


@app.cell
def _():
    schedule_a = mo.ui.dropdown(options=SCHEDULE_NAMES, value="1F1B", label="Schedule A")
    return (schedule_a,)


@app.cell
def _():
    schedule_b = mo.ui.dropdown(options=SCHEDULE_NAMES, value="interleaved 1F1B", label="Schedule B")
    return (schedule_b,)


@app.cell
def _():
    p_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64], value=4, label="Stages p", show_value=True)
    return (p_slider,)


@app.cell
def _():
    m_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=8, label="Micro-batches m", show_value=True)
    return (m_slider,)


@app.cell
def _():
    v_slider = mo.ui.slider(steps=[2, 3, 4], value=2, label="Chunks per stage v (interleaved)", show_value=True)
    return (v_slider,)


@app.cell
def _():
    tb_slider = mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=1.0, label="Backward-input time T_B / T_F", show_value=True)
    return (tb_slider,)


@app.cell
def _():
    tw_slider = mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=1.0, label="Weight-gradient time T_W / T_F", show_value=True)
    return (tw_slider,)


@app.cell
def _():
    play_slider = mo.ui.slider(start=0, stop=100, step=5, value=100, label="Play the schedule (% of the step)", show_value=True)
    return (play_slider,)


@app.cell
def _(
    m_slider,
    p_slider,
    play_slider,
    schedule_a,
    schedule_b,
    tb_slider,
    tw_slider,
    utilisation_question,
    v_slider,
):
    ui.prediction_gate(utilisation_question, "the timelines")
    mo.vstack(
        [
            mo.md("### Instruments"),
            mo.hstack([schedule_a, schedule_b], justify="start"),
            mo.hstack([p_slider, m_slider, v_slider], justify="start", wrap=True),
            mo.hstack([tb_slider, tw_slider, play_slider], justify="start", wrap=True),
        ]
    )
    return


@app.cell
def _(
    m_slider,
    p_slider,
    schedule_a,
    schedule_b,
    tb_slider,
    tw_slider,
    utilisation_question,
    v_slider,
):
    mo.stop(utilisation_question.value is None)
    pipeline_inputs = dict(p=p_slider.value, m=m_slider.value, schedule=schedule_a.value, v=v_slider.value if schedule_a.value == "interleaved" else 1, tf=1.0, tb=tb_slider.value, tw=tw_slider.value)
    _costs = OpCosts(1.0, tb_slider.value, tw_slider.value)
    pipeline_runs = {}
    pipeline_errors = []
    for _name in (schedule_a.value, schedule_b.value):
        _v = v_slider.value if _name == "interleaved" else 1
        try:
            pipeline_runs[_name] = timeline(p_slider.value, m_slider.value, _name, _v, _costs)
        except ValueError as _err:
            pipeline_errors.append(f"{_name}: {_err}")
    return pipeline_errors, pipeline_inputs, pipeline_runs


@app.cell
def _(pipeline_errors, pipeline_runs, play_slider):
    mo.stop(not pipeline_runs, ui.failure_banner(pipeline_errors))
    _figs = [
        charts.timeline_figure(_t, f"{SCHEDULE_LABELS[_name]}: p={_t.p}, m={_t.m}, v={_t.v}", _t.makespan * play_slider.value / 100)
        for _name, _t in pipeline_runs.items()
    ]
    mo.vstack([ui.failure_banner(pipeline_errors)] + _figs) if pipeline_errors else mo.vstack(_figs)
    return


@app.cell
def _(pipeline_runs):
    mo.stop(not pipeline_runs)
    _model, _cluster = design_inputs()
    _per_layer = activation_bytes_per_layer(_model.seq_len, 1, _model.hidden, _model.heads, 8, True, "selective")
    _rows = []
    for _name, _t in pipeline_runs.items():
        _c = _t.costs
        _peak = float(_t.peak_in_flight()[0])
        _rows.append(
            {
                "schedule": _name,
                "bubble, measured (of wall time)": f"{_t.bubble_fraction('total'):.1%}",
                "bubble, formula (of wall time)": f"{bubble_fraction(_t.p, _t.m, _name, _t.v, 'total', _c):.1%}",
                "bubble, measured (of ideal time)": f"{_t.bubble_fraction('ideal'):.1%}",
                "bubble, formula (of ideal time)": f"{bubble_fraction(_t.p, _t.m, _name, _t.v, 'ideal', _c):.1%}",
                "utilisation": f"{1 - _t.bubble_fraction('total'):.1%}",
                "peak in flight, stage 0": f"{_peak:g}",
                "GPT-3 activations on stage 0": f"{_per_layer * _model.layers / _t.p * _peak / 1e9:.1f} GB",
            }
        )
    mo.vstack(
        [
            mo.md(
                "**Counted on the timeline, and the closed form.** Activation memory is for GPT-3 175B layers "
                "(TP 8, sequence parallel, selective recompute, micro-batch 1), $L/p$ layers a stage."
            ),
            mo.ui.table(pd.DataFrame(_rows), selection=None, show_column_summaries=False, show_data_types=False),
        ]
    )
    return


@app.cell(hide_code=True)
def _(p_slider):
    _p = p_slider.value
    _model, _cluster = design_inputs()
    _per_layer = activation_bytes_per_layer(_model.seq_len, 1, _model.hidden, _model.heads, 8, True, "selective")
    _m = 4 * _p
    _rows = [
        {
            "schedule": _name,
            "micro-batches held by stage 0": f"{in_flight_microbatches(_key, _p, _m, 2 if _key == 'interleaved' else 1):g}",
            "GPT-3 activations on stage 0": f"{_per_layer * _model.layers / _p * in_flight_microbatches(_key, _p, _m, 2 if _key == 'interleaved' else 1) / 1e9:.1f} GB",
            "bubble with T_F = T_B = T_W": f"{bubble_fraction(_p, _m, _key, 2 if _key == 'interleaved' else 1, 'total'):.1%}",
        }
        for _name, _key in [("GPipe", "gpipe"), ("1F1B", "1f1b"), ("interleaved, v=2", "interleaved"), ("ZB-H1", "zb-h1"), ("ZB-H2", "zb-h2")]
    ]
    mo.vstack(
        [
            mo.md(f"### What each schedule pays for its bubble (p = {_p}, m = {_m})"),
            mo.ui.table(pd.DataFrame(_rows), selection=None, show_column_summaries=False, show_data_types=False),
            mo.md(
                "GPipe and 1F1B idle the same; 1F1B holds p micro-batches instead of m. ZB-H2 removes the "
                "bubble by holding nearly twice as many (Qi et al. 2024 Table 2); its timeline needs the "
                "paper's handcrafted schedule, so it appears here as a formula only."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(utilisation_question):
    mo.stop(utilisation_question.value is None)
    _measured = seed_utilisation()
    ui.reveal(
        utilisation_question.value,
        utilisation_answer(),
        {
            k: f"{v:.0%}: " + ("what the timeline measures, m/(m+p-1)." if k == utilisation_answer() else f"the timeline measures {_measured:.0%}.")
            for k, v in UTILISATION_VALUES.items()
        },
    )
    return


@app.cell(hide_code=True)
def _(microbatch_question):
    ui.prediction_gate(microbatch_question, "the answer on deep pipelines")
    _answer = microbatch_answer()
    ui.reveal(
        microbatch_question.value,
        _answer,
        {o.key: f"m = {o.label}: bubble {bubble_fraction(DEEP_P, int(o.label), '1f1b', 1, 'total'):.1%} of the wall time." for o in MICROBATCH_OPTIONS},
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
def _():
    ui.math_peek(
        "The equations behind the bubble",
        r"""
    GPipe and 1F1B: idle $(p-1)(T_F+T_B+T_W)$ per stage, so the bubble is $\frac{p-1}{m+p-1}$ of the wall
    time, or $\frac{p-1}{m}$ of the bubble-free time $m(T_F+T_B+T_W)$.

    Interleaved 1F1B with $v$ chunks per stage: $\frac{p-1}{v\,m}$ of the ideal time, for $v$ times the
    point-to-point messages.

    ZB-H1: $(p-1)(T_F+T_B-T_W)$ idle; ZB-H2: $(p-1)(T_F+T_B-2T_W)$, zero when $T_W \ge (T_F+T_B)/2$.
    """,
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    microbatch_question,
    pipeline_inputs,
    student_input,
    submit_button,
    utilisation_question,
):
    mo.stop(utilisation_question.value is None)
    _pred = {"utilisation": utilisation_question.value, "microbatches": microbatch_question.value}
    _view, submitted = ui.submit_to_ledger(
        student_input.value, submit_button, lambda: [(LAB, "pipeline", pipeline_inputs, _pred, pipeline_outcomes(pipeline_inputs, _pred))]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Key takeaways

    - The bubble is a fill-and-drain cost: $p-1$ stage-steps out of $m+p-1$. Only more micro-batches,
      more chunks, or splitting the backward pass shrink it.
    - 1F1B does not idle less than GPipe; it holds $p$ micro-batches of activations instead of $m$.
    - Pipeline parallelism sends megabytes per micro-batch; that is why it is the axis that crosses nodes.

    **Back to:** Lab 05, Act II, where the bubble enters the step time of a 175B model.
    """)
    return


@app.cell
def _(microbatch_question, pipeline_runs, submitted, utilisation_question):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "utilisation prediction": utilisation_question.value or "—",
            "micro-batch prediction": microbatch_question.value or "—",
            "bubbles": ", ".join(f"{k} {t.bubble_fraction():.1%}" for k, t in pipeline_runs.items()) if utilisation_question.value else "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


if __name__ == "__main__":
    app.run()
