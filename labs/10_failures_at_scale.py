import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 10: Failures at scale, checkpoint cadence and goodput",
)

with app.setup:
    from functools import lru_cache

    import marimo as mo
    import numpy as np

    from labs.core import ENGINE_VERSION, ui
    from labs.core.engine.memory import BYTES_PER_PARAM, OPTIMIZER_BYTES, WEIGHT_BYTES
    from labs.core.engine.models import MODELS
    from labs.core.failure_svg import cadence_svg, goodput_histogram_html, mtbf_svg
    from labs.core.engine.reliability import (
        DAY,
        HOUR,
        MINUTE,
        LLAMA3_CAUSES,
        LLAMA3_EFFECTIVE_TRAINING,
        LLAMA3_GPUS,
        LLAMA3_PLANNED,
        LLAMA3_STORAGE_PEAK,
        LLAMA3_STORAGE_SUSTAINED,
        LLAMA3_UNEXPECTED,
        LLAMA3_WINDOW_S,
        best_goodput,
        cadence_curve,
        cause_shares,
        daly_interval,
        expected_interruptions,
        goodput,
        gpu_mtbf_s,
        job_mtbf_s,
        mean_restart_s,
        optimal_interval,
        restart_by_cause,
        simulate,
        straggler_all_reduce,
        wall_breakdown,
        young_interval,
    )
    from labs.core.scenarios.lab10 import (
        CLAIM_INTERVALS_MIN,
        CLAIM_SETTING,
        LAB,
        LAYOUTS,
        RUN_MODEL,
        SEED_CLAIM_MINUTES,
        SEED_CLAIM_MODEL,
        SHARDINGS,
        STRATEGY_LABELS,
        cadence_outcomes,
        checkpoint_rows,
        inverse_rows,
        max_checkpoint_for,
        run_cluster,
        seed_claim_bandwidths,
        setting_costs,
    )

    GPU_STEPS = [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    STORAGE_STEPS = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 7000]
    INTERVAL_STEPS = [1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 720, 1440]
    MODEL_CHOICES = {MODELS[k].name: k for k in LAYOUTS}
    SIM_RUNS, SIM_SEED = 400, 0
    CADENCE_CHARTS = {}  # cadence_chart's figures, by setting and interval
    # The markdown a move shows again unchanged (part B3's and B4's headings and notes, the sources' text beside the
    # MTBF chart) is converted once (0.3-0.5 ms each): an instrument move converts only the text it changes.
    md_once = lru_cache(maxsize=256)(mo.md)


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 10 · Failures at scale: checkpoint cadence and goodput

    A GPU that fails once in years becomes a job that fails every few hours once sixteen thousand
    of them train together. This lab measures that against Llama 3's published interruptions,
    weighs a checkpoint, picks how often to write one, and simulates the long run.

    **Before you start:** Llama Team 2024, *The Llama 3 Herd of Models*, Sec. 3.3.4 and Table 5;
    Young 1974, *A first order approximation to the optimum checkpoint interval*; Daly 2006,
    *A higher order estimate of the optimum checkpoint interval for restart dumps*.
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


# Your run's size, length and file system are drawn from your id (labs.variants), and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    run_gpus, run_days = variant.settings["gpus"], variant.settings["days"]
    return run_days, run_gpus, variant


@app.cell(hide_code=True)
def _(run_days, run_gpus):
    _m = MODELS[RUN_MODEL]
    ui.stakeholder_message(
        "Training lead",
        f"We have {run_gpus:,} H100s booked to train {_m.name}: {run_days} days of compute if nothing breaks. "
        f"Meta's Llama 3 fleet works out to one job-stopping failure per GPU every **{gpu_mtbf_s() / (365 * DAY):.1f} years**, "
        f"counting all {LLAMA3_UNEXPECTED} of its unexpected interruptions against the GPUs, software bugs and network faults included. "
        "How often will the job stop, what does a checkpoint cost us, and how often should we write one?",
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## A1 · How often does the job stop?
    """)
    return


@app.cell
def _(variant):
    mtbf_question = ui.variant_question(variant.questions["mtbf"])
    mtbf_question
    return (mtbf_question,)


@app.cell
def _():
    mtbf_commit_buttons = ui.commit_buttons()
    return (mtbf_commit_buttons,)


@app.cell
def _(held_now, identity, mtbf_commit_buttons, mtbf_question, variant):
    _row, mtbf_committed = ui.commit_prediction(identity, LAB, "mtbf", mtbf_question, mtbf_commit_buttons, variant=variant, held=held_now())
    _row
    return (mtbf_committed,)


@app.cell(hide_code=True)
def _(mtbf_committed, variant):
    ui.gate(mtbf_committed, held_note=True)
    ui.variant_reveal(mtbf_committed, variant.questions["mtbf"])
    return


@app.cell(hide_code=True)
def _(mtbf_committed):
    ui.gate(mtbf_committed)
    mo.md(r"""
    ## A2 · Time between failures against the number of GPUs, calibrated on Llama 3
    """)
    return


# Each instrument is shown by a gated cell of its own through a copy of its HTML (mo.Html of the
# element's text, not the element, which a move would re-run that cell for): a move re-draws the
# cells that read the instrument, never the instrument itself.
@app.cell
def _(run_gpus):
    gpus_slider = mo.ui.slider(steps=GPU_STEPS, value=run_gpus, label="GPUs in the job", show_value=True, debounce=True)
    gpus_panel = mo.Html(gpus_slider.text)

    def job_gpus() -> int:
        return gpus_slider.value
    return gpus_panel, gpus_slider, job_gpus


@app.cell(hide_code=True)
def _(gpus_panel, mtbf_committed):
    ui.gate(mtbf_committed, what="the failure model")
    gpus_panel
    return


@app.cell(hide_code=True)
def _(gpus_slider, mtbf_committed, run_days):
    ui.gate(mtbf_committed)
    _n = gpus_slider.value
    _m = job_mtbf_s(_n)
    _wall = run_days * DAY
    _exp = expected_interruptions(_n, _wall)
    _rows = [
        {"cause (Llama 3 Table 5)": _c.label, "component": _c.category, "in Llama 3's 54 days": _c.count,
         "share": f"{cause_shares()[_c.key]:.1%}", f"expected in {run_days} days at {_n:,} GPUs": f"{_exp[_c.key]:.1f}",
         "job restarts without the node": "yes" if _c.node_swap else "no"}
        for _c in LLAMA3_CAUSES
    ]
    mo.vstack(
        [
            ui.metric_cards({
                "job MTBF": f"{_m / HOUR:.2f} h",
                f"unexpected stops in {run_days} days": f"{_exp['unexpected']:.0f}",
                "planned stops": f"{_exp['planned']:.0f}",
                "one GPU's MTBF": f"{gpu_mtbf_s() / (365 * DAY):.1f} years",
            }),
            mtbf_figure(_n),
            md_once(
                f"Llama 3 counted **{LLAMA3_UNEXPECTED + LLAMA3_PLANNED}** interruptions in {LLAMA3_WINDOW_S / DAY:.0f} days on up to "
                f"{LLAMA3_GPUS:,} GPUs: {LLAMA3_PLANNED} planned, {LLAMA3_UNEXPECTED} unexpected. Spread over all {LLAMA3_GPUS:,} GPUs for "
                f"the whole window (the lowest per-GPU rate the paper allows), that is one unexpected stop every "
                f"**{job_mtbf_s(LLAMA3_GPUS) / HOUR:.2f} hours**, and every GPU adds the same rate: the job's MTBF is the GPU's "
                f"divided by N. GPUs and their memory cause "
                f"{sum(cause_shares()[_c.key] for _c in LLAMA3_CAUSES if _c.category == 'GPU'):.0%} of them; the rest (software bugs, "
                "the network, host maintenance) need not grow with the GPUs, but this lab, like `labs.core.engine.reliability`, assumes "
                "every cause does: a per-GPU rate that counts them all is an upper bound on what the GPUs themselves cause. "
                "Which causes take a node out of the job is this lab's assumption (last column); it matters once restarts are priced."
            ),
            ui.static_table(_rows),  # redrawn with the GPU slider: a plain table (all 11 rows, as the grid's one page showed)
        ]
    )
    return


@app.cell(hide_code=True)
def _(mtbf_committed):
    ui.gate(mtbf_committed)
    mo.md(r"""
    ## A3 · What a checkpoint weighs, and what it costs to write
    """)
    return


@app.cell
def _():
    model_dropdown = mo.ui.dropdown(options=MODEL_CHOICES, value=MODELS[RUN_MODEL].name, label="Model")
    sharding_dropdown = mo.ui.dropdown(options=SHARDINGS, value="FSDP / ZeRO-3 (+ weights)", label="Sharding over data parallel")
    strategy_dropdown = mo.ui.dropdown(options=STRATEGY_LABELS, value="sharded (every GPU writes its slice)", label="Checkpoint strategy")
    dropdowns_panel = mo.hstack([model_dropdown, sharding_dropdown, strategy_dropdown], justify="start", wrap=True)

    def checkpoint_choice() -> dict:
        return {"model": model_dropdown.value, "zero_stage": sharding_dropdown.value, "strategy": strategy_dropdown.value}
    return (
        checkpoint_choice,
        dropdowns_panel,
        model_dropdown,
        sharding_dropdown,
        strategy_dropdown,
    )


@app.cell
def _(variant):
    # Starts at the student's file system (the cadence question's), a value of the slider.
    storage_slider = mo.ui.slider(steps=STORAGE_STEPS, value=variant.settings["storage_gbps"], label="File-system bandwidth (GB/s)", show_value=True, debounce=True)
    storage_panel = mo.Html(storage_slider.text)

    def storage_gbps() -> float:
        return storage_slider.value
    return storage_gbps, storage_panel, storage_slider


@app.cell(hide_code=True)
def _(dropdowns_panel, mtbf_committed, storage_panel):
    ui.gate(mtbf_committed)
    mo.vstack([dropdowns_panel, storage_panel])
    return


@app.cell(hide_code=True)
def _(
    gpus_slider,
    model_dropdown,
    mtbf_committed,
    sharding_dropdown,
    storage_slider,
    strategy_dropdown,
):
    ui.gate(mtbf_committed)
    _rows = checkpoint_rows(sharding_dropdown.value, storage_slider.value, gpus_slider.value)
    setting_cluster = run_cluster(gpus_slider.value)
    _table = [
        {"model": _r["model"], "strategy": _r["strategy"], "checkpoint": f"{_r['job_bytes'] / 1e12:.2f} TB",
         "per GPU": f"{_r['per_gpu_bytes'] / 1e9:.3f} GB", "training paused": fmt_s(_r["stall_s"]),
         "on storage after": fmt_s(_r["write_s"]), "restore": fmt_s(_r["restore_s"])}
        for _r in _rows
    ]
    _bytes, _bw10, _bw30 = seed_claim_bandwidths(sharding_dropdown.value)
    _seed_now = [_r for _r in _rows if _r["model"] == MODELS[SEED_CLAIM_MODEL].name and _r["strategy"].startswith("sync")][0]
    mo.vstack(
        [
            md_once(
                f"A checkpoint holds the bf16 weights and the optimizer state (fp32 master weights, Adam m and v): the engine's "
                f"memory model without the gradients, {_rows[0]['job_bytes'] / MODELS['llama3-8b'].params:.0f} bytes per parameter. "
                f"Per GPU it is each GPU's share under the sharding you chose, at {gpus_slider.value:,} GPUs (TP x PP as in "
                f"`labs/core/scenarios/lab10.py`). The engine assumes storage traffic shares each GPU's backend NIC ({setting_cluster.inter.name}); one writer gets one NIC. "
                "Meta's clusters, like most, reach storage over a separate frontend network, so a writer's real share can differ. "
                "The model, sharding, strategy and bandwidth you pick here carry into part B."
            ),
            ui.static_table(_table),  # redrawn with the checkpoint instruments: a plain table (all 9 rows, one page before)
            md_once(
                f"**The course notes' claim, checked.** \"A sync checkpoint pauses a 70B model for {SEED_CLAIM_MINUTES[0]}-{SEED_CLAIM_MINUTES[1]} "
                f"minutes.\" {MODELS[SEED_CLAIM_MODEL].name}'s checkpoint is {_bytes / 1e12:.2f} TB, so that pause means a file system "
                f"delivering {_bw30 / 1e9:.2f}-{_bw10 / 1e9:.2f} GB/s to the writer: true on a slow NFS share. On Llama 3's "
                f"({LLAMA3_STORAGE_SUSTAINED / 1e12:.0f} TB/s sustained, {LLAMA3_STORAGE_PEAK / 1e12:.0f} TB/s peak) one gathered writer "
                f"is limited by its NIC instead; at {storage_slider.value:g} GB/s the sync write takes **{fmt_s(_seed_now['stall_s'])}**, "
                "a sharded write far less, and an async one pauses training only for the copy out of HBM."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## B1 · Cadence: how often to checkpoint
    """)
    return


@app.cell
def _(variant):
    cadence_question = ui.variant_question(variant.questions["cadence"])
    cadence_question
    return (cadence_question,)


@app.cell
def _():
    cadence_commit_buttons = ui.commit_buttons()
    return (cadence_commit_buttons,)


@app.cell
def _(cadence_commit_buttons, cadence_question, held_now, identity, variant):
    _row, cadence_committed = ui.commit_prediction(identity, LAB, "cadence", cadence_question, cadence_commit_buttons, variant=variant, held=held_now())
    _row
    return (cadence_committed,)


# The cadence instruments and their panel, made in one cell that reads nothing: the panel is shown
# by a cell that reads none of their values, so a move redraws the chart, not the sliders.
@app.cell
def _():
    interval_slider = mo.ui.slider(steps=INTERVAL_STEPS, value=30, label="Checkpoint every (minutes of training)", show_value=True, debounce=True)
    relaunch_slider = mo.ui.slider(start=1, stop=60, step=1, value=10, label="Relaunch after a failure (minutes, plus the checkpoint read)", show_value=True, debounce=True)
    swap_slider = mo.ui.slider(steps=[5, 10, 15, 30, 60, 120, 240], value=60, label="Getting a replacement node without spares (minutes)", show_value=True, debounce=True)
    spares_switch = mo.ui.switch(value=False, label="Hot spares standing by")
    cadence_panel = mo.vstack([
        mo.hstack([interval_slider, relaunch_slider], justify="start", wrap=True),
        mo.hstack([swap_slider, spares_switch], justify="start", wrap=True),
    ])

    def cadence_levers() -> dict:
        return {"relaunch_min": relaunch_slider.value, "swap_min": swap_slider.value, "hot_spares": bool(spares_switch.value),
                "interval_min": interval_slider.value}
    return (
        cadence_levers,
        cadence_panel,
        interval_slider,
        relaunch_slider,
        spares_switch,
        swap_slider,
    )


# cadence_inputs_now() reads the instruments when the submit is pressed, so a move does not re-run the submit
# (its button and the ledger's download mounted again, the ledger read again): only the status line below it.
@app.cell
def _(cadence_levers, checkpoint_choice, job_gpus, storage_gbps):
    def cadence_inputs_now() -> dict:
        """The ledger's inputs, in cadence_outcomes' order: the setting, then the interval."""
        _choice, _levers = checkpoint_choice(), cadence_levers()
        return {"model": _choice["model"], "gpus": job_gpus(), "zero_stage": _choice["zero_stage"], "strategy": _choice["strategy"],
                "storage_gbps": storage_gbps(), **_levers}
    return (cadence_inputs_now,)


@app.cell
def _(cadence_panel, mtbf_committed):
    ui.gate(mtbf_committed)
    cadence_panel
    return


# The setting (every instrument but the interval) and what an interval move changes, computed and drawn in one
# cell: each cell a move re-runs costs marimo a few ms and the page a round of messages, and setting_costs costs
# less than 0.1 ms, so an interval move computes it again rather than a GPU or checkpoint move re-running two cells.
@app.cell(hide_code=True)
def _(
    gpus_slider,
    interval_slider,
    model_dropdown,
    mtbf_committed,
    relaunch_slider,
    sharding_dropdown,
    spares_switch,
    storage_slider,
    strategy_dropdown,
    swap_slider,
):
    ui.gate(mtbf_committed)
    _setting_inputs = dict(
        model=model_dropdown.value, gpus=gpus_slider.value, zero_stage=sharding_dropdown.value, strategy=strategy_dropdown.value,
        storage_gbps=storage_slider.value, relaunch_min=relaunch_slider.value, swap_min=swap_slider.value,
        hot_spares=bool(spares_switch.value),
    )
    setting = setting_costs(**_setting_inputs)
    cadence_inputs = {**_setting_inputs, "interval_min": interval_slider.value}
    _tau = interval_slider.value * MINUTE
    _m, _r, _cost = setting["mtbf_s"], setting["restart_s"], setting["cost"]
    _c = _cost.stall_at(_tau)
    cadence_view = {
        "tau": _tau, "stall": _c, "goodput": goodput(_tau, _c, _r, _m), "shares": wall_breakdown(_tau, _c, _r, _m),
        "young": young_interval(_cost.stall_s, _m), "daly": daly_interval(_cost.stall_s, _m),
        "best": optimal_interval(_cost.stall_s, _m),
        # 80 log-spaced intervals draw these smooth curves as well as 200, at less than half the payload redrawn per move
        "curve": cadence_curve(_cost.stall_s, _r, _m, points=80, write_s=_cost.write_s if _cost.strategy == "async" else 0.0),
    }
    _v = cadence_view
    _s = _v["shares"]
    _banner = None
    if strategy_dropdown.value == "async" and setting["cost"].write_s > _v["tau"]:
        _banner = ui.failure_banner([f"The background write takes {fmt_s(setting['cost'].write_s)}, longer than the {interval_slider.value}-minute "
                                     f"interval: each checkpoint waits for the previous one, a {fmt_s(_v['stall'])} stall."])
    mo.vstack(
        [
            # an empty markdown where no banner shows: the chart keeps its place in the stack, so a move that lifts or
            # raises the banner updates the drawn chart instead of mounting a new one (as Lab 07's, f51e338)
            _banner if _banner is not None else md_once(""),
            ui.metric_cards({
                "goodput": f"{_v['goodput']:.1%}",
                "checkpoint stalls": f"{_s.checkpoint:.2%}",
                "work lost and redone": f"{_s.lost:.1%}",
                "restarts": f"{_s.restart:.1%}",
                "Daly's interval": f"{_v['daly'] / MINUTE:.1f} min",
            }),
            cadence_chart(cadence_inputs, _v),
            md_once(
                f"Stall per checkpoint **{fmt_s(_v['stall'])}**, mean restart R = **{setting['restart_s'] / MINUTE:.1f} min** "
                f"(relaunch, the {fmt_s(setting['restore_s'])} read, and a node swap for the causes that need one"
                f"{' from a hot spare: none to wait for' if spares_switch.value else f' at {swap_slider.value} min each'}), "
                f"job MTBF M = **{setting['mtbf_s'] / HOUR:.2f} h**. Young's $\\sqrt{{2CM}}$ gives {_v['young'] / MINUTE:.1f} min, "
                f"Daly's higher-order form {_v['daly'] / MINUTE:.1f} min, the exact optimum of this model {_v['best'] / MINUTE:.1f} min."
            ),
        ]
    )
    return cadence_inputs, cadence_view, setting


@app.cell(hide_code=True)
def _(cadence_committed, variant):
    ui.gate(cadence_committed, what="the answer on cadence")
    ui.variant_reveal(cadence_committed, variant.questions["cadence"])
    return


@app.cell(hide_code=True)
def _(mtbf_committed):
    ui.gate(mtbf_committed)
    mo.md(r"""
    ## B2 · The inverse problem: what Llama 3's over-90% implies
    """)
    return


# The inverse table does not depend on the instruments: its own cell, so a setting move re-runs only
# the line about the student's restart cost below (inverse_rows is ~200 goodput optimisations).
@app.cell(hide_code=True)
def _(mtbf_committed, run_gpus):
    ui.gate(mtbf_committed)
    _m = job_mtbf_s(run_gpus)
    _rows = inverse_rows()
    _table = [
        {"restart R": f"{_r['restart_min']} min",
         f"largest checkpoint stall C for {LLAMA3_EFFECTIVE_TRAINING:.0%}": f"none: R alone costs more than {1 - LLAMA3_EFFECTIVE_TRAINING:.0%}" if _r["max_checkpoint_s"] is None else fmt_s(_r["max_checkpoint_s"]),
         "at an interval of": "-" if _r["interval_s"] is None else f"{_r['interval_s'] / MINUTE:.1f} min"}
        for _r in _rows
    ]
    _r_limit = _m * (1 / LLAMA3_EFFECTIVE_TRAINING - 1)
    mo.vstack(
        [
            mo.md(
                f"Llama 3 reports more than {LLAMA3_EFFECTIVE_TRAINING:.0%} effective training time with an unexpected stop every "
                f"{_m / HOUR:.2f} h. Read as goodput against those stops alone (planned ones would tighten it), which checkpoint "
                f"stalls C and restart costs R allow it? Even a free checkpoint needs R under M(1/{LLAMA3_EFFECTIVE_TRAINING:g} - 1) = **{_r_limit / MINUTE:.1f} min**; "
                f"below that, the best cadence leaves this much room for C:"
            ),
            ui.data_table(_table),
        ]
    )
    return


# The line about the student's restart cost, part B3 (the simulation) and part B4's text up to the NIC slider in one
# cell: a GPU move re-runs one cell here, not three (an interval move re-runs the simulation, and with it the rest).
@app.cell(hide_code=True)
def _(
    cadence_view,
    gpus_slider,
    mtbf_committed,
    relaunch_slider,
    run_days,
    run_gpus,
    setting,
    sharding_dropdown,
    spares_switch,
    swap_slider,
):
    ui.gate(mtbf_committed)
    _m = job_mtbf_s(run_gpus)
    _yours = max_checkpoint_for(LLAMA3_EFFECTIVE_TRAINING, setting["restart_s"], _m)
    try:
        simulation = simulate(run_days * DAY, cadence_view["tau"], cadence_view["stall"], setting["mtbf_s"], setting["restarts"], runs=SIM_RUNS, seed=SIM_SEED)
        simulation_error = None
    except ValueError as _err:  # a setting whose run would take millions of failures: shown, not drawn
        simulation, simulation_error = None, str(_err)
    mo.vstack(
        [
            md_once(
                (f"With your restart cost ({setting['restart_s'] / MINUTE:.1f} min) no checkpoint is cheap enough: the restarts alone cost "
                 f"more than {1 - LLAMA3_EFFECTIVE_TRAINING:.0%} of the time" if _yours is None else
                 f"With your restart cost ({setting['restart_s'] / MINUTE:.1f} min) the checkpoint may stall at most **{fmt_s(_yours)}**")
                + f"; your setting stalls {fmt_s(setting['cost'].stall_s)}. Stalls of seconds and restarts of minutes: a "
                "sharded or async checkpoint on fast storage, with automated restarts, not a gathered sync write and a person paged."
            ),
            md_once(r"""
    ## B3 · The long run, simulated
    """),
            simulation_view(simulation, simulation_error, cadence_view, setting, run_days, relaunch_slider.value, swap_slider.value, spares_switch.value),
            md_once(r"""
    ## B4 · Failures that do not stop the job: silent corruption and stragglers
    """),
            corruption_view(gpus_slider.value, sharding_dropdown.value, run_days),
        ]
    )
    return simulation, simulation_error


@app.function
def simulation_view(simulation, simulation_error, cadence_view, setting, run_days, relaunch_min, swap_min, spares) -> mo.Html:
    """The simulated runs at the student's setting: cards, the goodput histogram and the levers;
    or, for a setting too broken to simulate, why."""
    if simulation is None:
        return ui.failure_banner([
            f"This setting is not simulated: {simulation_error}. Its goodput is {cadence_view['goodput']:.2%}: a checkpoint stall of "
            f"{fmt_s(cadence_view['stall'])} against an interruption every {fmt_s(setting['mtbf_s'])}, so the run hardly ever moves forward."
        ])
    _g = simulation.goodput
    _p5, _p95 = np.percentile(_g, [5, 95])
    _days_median = np.median(simulation.wall_s) / DAY
    _m, _c = setting["mtbf_s"], setting["cost"].stall_s
    _read, _relaunch, _swap = setting["restore_s"], relaunch_min * MINUTE, swap_min * MINUTE
    _lever = {
        "hot spares": best_goodput(_c, mean_restart_s(restart_by_cause(_relaunch + _read, _swap, True)), _m),
        "relaunch halved": best_goodput(_c, mean_restart_s(restart_by_cause(_relaunch / 2 + _read, _swap, bool(spares))), _m),
    }
    return mo.vstack(
        [
            md_once(
                f"{SIM_RUNS} runs of {run_days} days of work at your setting (random seed {SIM_SEED}, so every student sees the same runs): failures drawn at rate 1/M, each with a "
                "cause from Table 5's shares and that cause's restart cost; the work since the last checkpoint is redone."
            ),
            ui.metric_cards({
                "mean goodput (simulated)": f"{_g.mean():.2%}",
                "closed form": f"{simulation.closed_form:.2%}",
                "5th-95th percentile": f"{_p5:.1%} - {_p95:.1%}",
                "interruptions per run": f"{simulation.failures.mean():.0f} ± {simulation.failures.std():.0f}",
                "wall time, median": f"{_days_median:.1f} days",
            }),
            goodput_histogram(_g, simulation.closed_form),
            md_once(
                f"**Levers**, each at its best interval: now {best_goodput(_c, setting['restart_s'], _m):.1%}; with hot spares "
                f"(no wait for a node) {_lever['hot spares']:.1%}; with the relaunch halved {_lever['relaunch halved']:.1%}. "
                f"At your interval the run ends after {_days_median:.1f} days instead of {run_days}: "
                f"one run in twenty takes more than {np.percentile(simulation.wall_s, 95) / DAY:.1f}."
            ),
        ]
    )


@app.cell
def _():
    slow_slider = mo.ui.slider(steps=[0.1, 0.25, 0.5, 0.75, 0.9, 1.0], value=0.5, label="One node's NICs run at this fraction of their speed", show_value=True, debounce=True)
    slow_panel = mo.Html(slow_slider.text)
    return slow_panel, slow_slider


@app.cell(hide_code=True)
def _(mtbf_committed, slow_panel):
    ui.gate(mtbf_committed)
    slow_panel
    return


@app.cell(hide_code=True)
def _(gpus_slider, model_dropdown, mtbf_committed, slow_slider):
    ui.gate(mtbf_committed)
    _n = gpus_slider.value
    _tp, _pp = LAYOUTS[model_dropdown.value]
    _dp = _n // (_tp * _pp)
    _grad = 2 * MODELS[model_dropdown.value].params / (_tp * _pp)
    _rows = []
    for _label, _bytes, _group, _stride in (
        (f"{MODELS[model_dropdown.value].name} gradients, DP ring of {_dp:,}", _grad, _dp, _tp),
        (f"the same bytes, one ring over all {_n:,} GPUs", _grad, _n, 1),
    ):
        _s = straggler_all_reduce(_bytes, run_cluster(_n), _group, _stride, slow_slider.value)  # setting's cluster, not read from it: no re-run for a restart move
        _rows.append({"all-reduce": _label, "bytes": f"{_bytes / 1e9:.1f} GB", "healthy": fmt_s(_s.healthy.total_s),
                      "with the slow node": fmt_s(_s.paced.total_s), "slower by": f"{_s.slowdown:.2f}x"})
    mo.vstack(
        [
            ui.static_table(_rows),  # redrawn with the GPUs, the checkpoint instruments and the NIC slider: a plain table (2 rows)
            md_once(
                "Nothing crashes, so no watchdog fires: per-link latency monitoring and per-rank step timings find the node, and the "
                "job drains it like a failure."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(cadence_committed, mtbf_committed):
    ui.gate(mtbf_committed)
    ui.gate(cadence_committed)
    ui.math_peek(
        "The equations behind cadence and goodput",
        r"""
    Job failure rate: $\lambda_{job} = N \lambda_{GPU}$, so $M = M_{GPU} / N$; fitted on Llama 3,
    """
        + f"$\\lambda_{{GPU}}$ = {LLAMA3_UNEXPECTED} / ({LLAMA3_GPUS:,} x {LLAMA3_WINDOW_S / DAY:.0f} days).\n"
        + r"""
    One segment is $\tau$ of work plus a checkpoint stall $C$. With exponential failures, the expected
    wall time per segment is $(M + R)\,(e^{(\tau + C)/M} - 1)$, so

    $$\text{goodput} = \frac{\tau}{(M + R)\,(e^{(\tau + C)/M} - 1)}$$

    (Daly 2006 writes $M e^{R/M}$ for $M + R$, counting failures during restarts too).

    Young 1974: $\tau = \sqrt{2CM}$. Daly 2006: $\tau = \sqrt{2CM}\left(1 + \tfrac{1}{3}\sqrt{\tfrac{C}{2M}} + \tfrac{1}{9}\tfrac{C}{2M}\right) - C$
    for $C < 2M$, else $\tau = M$. Near the optimum, goodput $\approx 1 - \sqrt{2C/M} - R/M$.

    Ring all-reduce: $2(N-1)\alpha + 2\frac{N-1}{N}\frac{M}{B_{min}}$: the slowest member's bandwidth sets $B$.
    """
        + f"\nCheckpoint bytes: ({WEIGHT_BYTES} + {OPTIMIZER_BYTES}) bytes per parameter for the job (bf16 weights; fp32 master, Adam m and v); "
        "write time = bytes / min(storage bandwidth, writers x NIC bandwidth); an async stall = a GPU's share / PCIe bandwidth.",
    )
    return


@app.cell(hide_code=True)
def _(cadence_committed, mtbf_committed):
    ui.gate(mtbf_committed)
    ui.gate(cadence_committed)
    mo.md(r"""
    ### Reflection

    Your team doubles the cluster to train the next model in half the time. Which number in this lab
    changes most, which lever would you buy first (faster storage, hot spares, faster restarts), and why?
    Write your answer in your lab report.
    """)
    return


@app.cell(hide_code=True)
def _(cadence_committed, mtbf_committed, run_gpus, variant):
    ui.gate(mtbf_committed)
    ui.gate(cadence_committed)
    # The cadence question's setting (no hot spares, the student's storage), so the same interval reads the same goodput here.
    _claim = {**CLAIM_SETTING, "gpus": run_gpus, "storage_gbps": variant.settings["storage_gbps"]}
    _run = setting_costs(strategy="sharded", **_claim)
    _sync = setting_costs(strategy="sync", **_claim)
    _hot = setting_costs(strategy="sharded", **{**_claim, "hot_spares": True})
    _m, _c, _r = _run["mtbf_s"], _run["cost"].stall_s, _run["restart_s"]
    mo.md(
        f"""
    ## Key takeaways

    - A job's MTBF is the GPU's divided by N: {gpu_mtbf_s() / (365 * DAY):.1f} years per GPU is
      {job_mtbf_s(run_gpus) / HOUR:.1f} hours at {run_gpus:,} GPUs, as Llama 3 measured.
    - {MODELS[RUN_MODEL].name}'s checkpoint is {_run['size'].job_bytes / 1e12:.1f} TB. On {_claim['storage_gbps'] / 1e3:g} TB/s storage
      a sharded write pauses {fmt_s(_c)}; gathered to one writer it pauses {fmt_s(_sync['cost'].stall_s)}.
    - Cadence has an optimum: Young's $\\sqrt{{2CM}}$ = {young_interval(_c, _m) / MINUTE:.1f} min there; checkpointing every
      {CLAIM_INTERVALS_MIN[0]} min or once a day both lose goodput
      ({goodput(CLAIM_INTERVALS_MIN[0] * MINUTE, _c, _r, _m):.1%} and {goodput(CLAIM_INTERVALS_MIN[1] * MINUTE, _c, _r, _m):.1%}
      against {best_goodput(_c, _r, _m):.1%} at the best interval, with a {_claim['relaunch_min']}-minute relaunch and a
      {_claim['swap_min']}-minute wait for a replacement node, the setting of the cadence answer). Hot spares lift the best to
      {best_goodput(_c, _hot['restart_s'], _m):.1%}.
    - Over {LLAMA3_EFFECTIVE_TRAINING:.0%} goodput at a {job_mtbf_s(run_gpus) / HOUR:.1f}-hour MTBF needs restarts under
      {job_mtbf_s(run_gpus) * (1 / LLAMA3_EFFECTIVE_TRAINING - 1) / MINUTE:.0f} minutes and stalls of seconds: restart time is the lever.
    - Some failures never stop the job: silent corruption (hash replicas, watch gradient norms) and stragglers
      (one slow NIC paces the whole ring).

    **Back to:** Lab 06, where the same {BYTES_PER_PARAM} bytes per parameter decide what fits; here {WEIGHT_BYTES + OPTIMIZER_BYTES} of them decide what a checkpoint costs.
    """
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


# The submit row reads the instruments through cadence_inputs_now() when pressed: no move re-runs it.
@app.cell
def _(
    cadence_committed,
    cadence_inputs_now,
    identity,
    mtbf_committed,
    submit_button,
    variant,
):
    ui.gate(mtbf_committed, held=(cadence_committed,))
    _pred = {"mtbf": mtbf_committed.answer, "cadence": cadence_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, "cadence", cadence_inputs_now(), _pred, cadence_outcomes, "the cadence design", variant)]
    )
    _view
    return (submitted,)


# The status line, below the submit row: a move re-runs this line alone.
@app.cell
def _(cadence_committed, cadence_view, mtbf_committed, submitted):
    ui.gate(mtbf_committed, held=(cadence_committed,))
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "MTBF prediction": mtbf_committed.describe(),
            "cadence prediction": cadence_committed.describe(),
            "goodput": f"{cadence_view['goodput']:.1%} at {cadence_view['tau'] / MINUTE:.0f} min",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def corruption_view(gpus: int, zero_stage: int, run_days: int) -> mo.Html:
    """Part B4's text above the NIC slider: silent corruptions expected at `gpus` over the run,
    what catches them under the sharding, and the stragglers' introduction."""
    _replicas = zero_stage < 3  # ZeRO-0/1/2 keep whole bf16 weights on every data-parallel replica
    _sharding = next(k for k, v in SHARDINGS.items() if v == zero_stage)
    _sdc = expected_interruptions(gpus, run_days * DAY)["silent_data_corruption"]
    return mo.vstack(
        [
            md_once(
                f"Llama 3 caught **{dict((c.key, c.count) for c in LLAMA3_CAUSES)['silent_data_corruption']}** silent data corruptions in "
                f"{LLAMA3_WINDOW_S / DAY:.0f} days: at {gpus:,} GPUs expect **{_sdc:.1f}** detected ones in {run_days} days, and the undetected "
                "ones do not show in a loss curve at all: a flipped bit in one replica's gradient is averaged into everyone's weights, "
                "and the loss drifts by less than its noise. What catches them: "
                + (f"under your sharding ({_sharding}) every data-parallel replica holds the same bf16 weights after the step, so a hash "
                   "of the weights compared across replicas must agree; " if _replicas else
                   f"under your sharding ({_sharding}) no two GPUs hold the same shard, so there is no replica to compare a hash with: "
                   "the check needs hybrid sharding's replica groups (HSDP, Lab 06) or whole-weight replicas (plain DP, ZeRO-1 or 2); ")
                + "a gradient norm ten times its running mean with an ordinary loss points at one rank; a fixed validation batch "
                "re-scored on a schedule catches slow drift. On a hit, restart from the last checkpoint known to be good, not the most recent."
            ),
            md_once(
                "**Stragglers.** A ring all-reduce moves in lock step: every step waits for its slowest member, so one degraded NIC "
                "paces the whole ring (a throttled GPU does the same to the compute). The collectives model, with one node's NICs slowed:"
            ),
        ]
    )


@app.function
def fmt_s(seconds: float) -> str:
    """Seconds at a readable scale."""
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 2 * HOUR:
        return f"{seconds / MINUTE:.1f} min"
    return f"{seconds / HOUR:.1f} h"


@app.function
def mtbf_figure(gpus: int) -> mo.Html:
    """The job's MTBF against GPUs with Llama 3's point and the current N (failure_svg.mtbf_svg)."""
    return mo.Html(mtbf_svg(gpus))


@app.function
def cadence_chart(inputs: dict, view: dict) -> mo.Html:
    """cadence_figure(view), kept per setting and interval (`view` is a function of `inputs`,
    cadence_inputs): moving the interval back to a position shows its chart again without
    drawing it again. Shared between sessions, so never changed after it is built."""
    key = tuple(sorted(inputs.items()))
    if key not in CADENCE_CHARTS:
        if len(CADENCE_CHARTS) >= 512:
            CADENCE_CHARTS.clear()
        CADENCE_CHARTS[key] = cadence_figure(view)
    return CADENCE_CHARTS[key]


@app.function
def cadence_figure(view: dict) -> mo.Html:
    """Goodput and the wall-time shares against the checkpoint interval, with the optima (failure_svg.cadence_svg)."""
    return mo.Html(cadence_svg(view))


@app.function
def goodput_histogram(values, closed_form: float, bins: int = 40) -> mo.Html:
    """Simulated runs' goodput in `bins` equal bins, the closed form as a line (failure_svg.goodput_histogram_html)."""
    return mo.Html(goodput_histogram_html(values, closed_form, bins))


if __name__ == "__main__":
    app.run()
