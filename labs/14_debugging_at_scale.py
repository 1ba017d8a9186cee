import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 14: Debugging at scale, hangs and stragglers on 4,096 GPUs",
)

with app.setup:
    import html

    import marimo as mo
    import numpy as np
    import plotly.graph_objects as go

    from labs.core import ENGINE_VERSION
    from labs.core import charts, ui
    from labs.core.engine import debugging as dbg
    from labs.core.engine.reliability import LLAMA3_UNEXPECTED, job_mtbf_s
    from labs.core.scenarios import lab14
    from labs.core.scenarios.lab14 import LAB, STEP, TIMEOUT_SETTINGS_MIN, diagnosis_outcomes
    from labs.core.style import COLORS, apply_plotly_theme

    MINUTE, HOUR = 60.0, 3600.0
    AXIS_CHOICES = {"TP group (tensor parallel)": "tp", "DP group (data parallel)": "dp", "PP group (pipeline)": "pp", "world (default group)": "world"}
    OUTLIER_CHOICES = {"its TP group": "tp", "its DP group": "dp", "its PP group": "pp", "the whole job": "world"}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 14 · Debugging at scale: hangs and stragglers on 4,096 GPUs

    A job of thousands of GPUs stops, or slows, and nothing says why. This lab hands you what an
    on-call engineer gets (every rank's NCCL flight recorder, the logs, per-rank step timings),
    generated from the job's own plan by `labs.core.engine.debugging`, and asks you to find the rank.

    **Before you start:** PyTorch, *Flight Recorder for Debugging Stuck Jobs* (and its trace analyzer,
    `torch.distributed.flight_recorder`); NVIDIA, *NCCL User Guide*: Environment Variables (`NCCL_DEBUG`)
    and Troubleshooting, RAS; Llama Team 2024, *The Llama 3 Herd of Models*, Sec. 3.3.4 (stragglers, NCCLX).
    """))
    return


@app.cell
def _():
    student_input = ui.student_identity()
    student_input
    return (student_input,)


@app.cell
def _():
    pin_input = ui.student_pin()
    pin_input
    return (pin_input,)


@app.cell
def _(pin_input, student_input):
    identity = ui.identity(student_input.value, pin_input.value)
    return (identity,)


@app.cell
def _():
    lecture_clock, held_now, set_held = ui.live_lecture(LAB)
    lecture_clock
    return held_now, lecture_clock, set_held


@app.cell
def _(held_now, lecture_clock, set_held):
    ui.poll_lecture(LAB, lecture_clock, held_now, set_held)
    return


# Your fault, its rank, where in the step it struck, your file system: drawn from your id (labs.variants).
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    hang = lab14.variant_hang(variant.settings)
    job = hang.job
    timings = lab14.slow_of(variant.settings)
    return hang, job, timings, variant


@app.cell(hide_code=True)
def _(job, timings):
    _p = job.plan
    ui.stakeholder_message(
        "Training lead",
        f"Our {job.model.name} run on {job.ranks:,} H100s (TP {_p.tp} x PP {_p.pp} x DP {_p.dp}, {job.est.step_time_s:.2f} s a step) "
        f"**stopped making progress 10 minutes ago**, at step {job.step_index + 1:,}. Every rank dumped its flight recorder when the "
        "watchdog fired. And the run we restarted yesterday on other nodes is "
        f"**{timings.slowdown - 1:.0%} slower** than it should be. Which rank, which group, what broke, and is our timeout right?",
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## A1 · Which rank holds the job up?
    """)
    return


@app.cell
def _(variant):
    culprit_question = ui.variant_question(variant.questions["culprit"])
    culprit_question
    return (culprit_question,)


@app.cell
def _():
    culprit_commit_buttons = ui.commit_buttons()
    return (culprit_commit_buttons,)


@app.cell
def _(culprit_commit_buttons, culprit_question, held_now, identity, variant):
    _row, culprit_committed = ui.commit_prediction(identity, LAB, "culprit", culprit_question, culprit_commit_buttons, variant=variant, held=held_now())
    _row
    return (culprit_committed,)


@app.cell(hide_code=True)
def _(culprit_committed):
    ui.gate(culprit_committed, what="the flight recorder")
    mo.md(r"""
    ## A2 · Every rank's last completed collective

    Each process group numbers its collectives (`collective_seq_id`; pipeline sends `p2p_seq_id`) and NCCL
    matches the members' calls by that number. The map shows, per rank, how far behind the furthest rank of
    the job its last completed call in the group you pick is: ranks grouped as the plan lays them out (columns:
    DP index; rows: pipeline stage, then TP index). A hole is a rank that left no dump.
    """)
    return


# The four instruments the ledger records are created in one cell that reads nothing, so
# committing or changing a prediction never resets them; the cells below gate only what they
# display. Each is shown by a gated cell of its own through a copy of its HTML (not the element,
# which a move would re-run that cell for), so a move re-draws no instrument; the submit reads
# their settings through diagnosis_inputs() when pressed, so no move re-runs it.
@app.cell
def _():
    axis_dropdown = mo.ui.dropdown(options=AXIS_CHOICES, value="TP group (tensor parallel)", label="Process group")
    outlier_dropdown = mo.ui.dropdown(options=OUTLIER_CHOICES, value="the whole job", label="Compare each rank with")
    threshold_slider = mo.ui.slider(steps=[1, 2, 3, 5, 10, 20, 50], value=5, label="Flag ranks slower than the median by (%)", show_value=True, debounce=True)
    timeout_slider = mo.ui.slider(steps=list(TIMEOUT_SETTINGS_MIN), value=10, label="Collective timeout (minutes)", show_value=True, debounce=True)
    axis_panel, timeout_panel = mo.Html(axis_dropdown.text), mo.Html(timeout_slider.text)
    outlier_panel = mo.hstack([outlier_dropdown, threshold_slider], justify="start", wrap=True)

    def diagnosis_inputs() -> dict:
        return {"view_axis": axis_dropdown.value, "timeout_min": timeout_slider.value, "outlier_group": outlier_dropdown.value,
                "threshold_pct": float(threshold_slider.value)}
    return (
        axis_dropdown,
        axis_panel,
        diagnosis_inputs,
        outlier_dropdown,
        outlier_panel,
        threshold_slider,
        timeout_panel,
        timeout_slider,
    )


@app.cell(hide_code=True)
def _(axis_panel, culprit_committed):
    ui.gate(culprit_committed)
    axis_panel
    return


# The heatmap and the table of who has not arrived in one cell: a process-group move re-runs it alone.
@app.cell(hide_code=True)
def _(axis_dropdown, culprit_committed, hang):
    ui.gate(culprit_committed)
    _rows = hang.not_arrived(axis_dropdown.value)
    _mis = hang.mismatch
    _table = [
        {"group": lab14.group_label(hang.job, axis_dropdown.value, _r["group"]), "waiting in seq": f"{_r['seq']:,}",
         "arrived": f"{_r['arrived']} of {_r['members']}",
         "not arrived": ", ".join(map(str, _r["missing"][:8])) + (" ..." if len(_r["missing"]) > 8 else "") or
         ("all arrived: sizes or ops differ" if _mis is not None and _mis[0] == axis_dropdown.value else "all arrived, none completed")}
        for _r in sorted(_rows, key=lambda r: (len(r["missing"]) != 1 and r["missing"] != [], r["seq"]))[:12]
    ]
    mo.vstack([
        seq_heatmap(hang, axis_dropdown.value),
        mo.md(f"**Who has not arrived**, {axis_dropdown.value.upper()} groups with members waiting: {len(_rows):,} of "
              f"{int(hang.job.group_ids[axis_dropdown.value].max()) + 1:,} (the 12 most telling: one rank missing, or none)."),
        ui.static_table(_table) if _table else mo.md("No group of this kind has anyone waiting."),
    ])
    return


@app.cell
def _(hang):
    rank_input = mo.ui.number(start=0, stop=hang.job.ranks - 1, step=1, value=lab14.watchdog_rank(hang), label="Rank whose dump to read")
    rank_panel = mo.Html(rank_input.text)  # shown by the cell below: a new rank re-draws the dump, not the field
    return rank_input, rank_panel


@app.cell(hide_code=True)
def _(culprit_committed, rank_panel):
    ui.gate(culprit_committed)
    rank_panel
    return


@app.cell(hide_code=True)
def _(culprit_committed, hang, rank_input):
    ui.gate(culprit_committed)
    _rec = dbg.flight_record(hang, int(rank_input.value), lab14.RECORD_ENTRIES)
    if _rec is None:
        _view = ui.failure_banner([f"Rank {int(rank_input.value)} left no flight-recorder dump: its process did not get to write one."])
    else:
        _view = ui.static_table([
            {"record_id": _e["record_id"], "pg_id": _e["pg_id"], "process_group": f"{_e['process_group'][0]} ({_e['process_group'][1]})",
             "collective_seq_id": _e["collective_seq_id"], "p2p_seq_id": _e["p2p_seq_id"], "profiling_name": _e["profiling_name"],
             "input_sizes": str(_e["input_sizes"]), "output_sizes": str(_e["output_sizes"]), "state": _e["state"]}
            for _e in _rec["entries"]
        ])
    mo.vstack([mo.md(f"Rank {int(rank_input.value)}'s last {lab14.RECORD_ENTRIES} entries, as `torch.distributed`'s flight recorder dumps them "
                                 "(with `TORCH_NCCL_ENABLE_TIMING=1`, so `started` is told apart from `scheduled`):"), _view])
    return


@app.cell(hide_code=True)
def _(culprit_committed, hang):
    ui.gate(culprit_committed)
    mo.vstack([mo.md("**The logs** (`NCCL_DEBUG=INFO` on the suspect's host, its kernel log, the watchdog on a waiting rank, NCCL's RAS):"),
               mo.Html("<pre style='white-space:pre-wrap;font-size:0.8rem'>" + "\n".join(map(html.escape, dbg.log_lines(hang))) + "</pre>")])
    return


@app.cell(hide_code=True)
def _(culprit_committed, variant):
    ui.gate(culprit_committed, what="the answer")
    ui.variant_reveal(culprit_committed, variant.questions["culprit"])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## A3 · What kind of fault is it?
    """)
    return


@app.cell
def _(variant):
    kind_question = ui.variant_question(variant.questions["kind"])
    kind_question
    return (kind_question,)


@app.cell
def _():
    kind_commit_buttons = ui.commit_buttons()
    return (kind_commit_buttons,)


@app.cell
def _(held_now, identity, kind_commit_buttons, kind_question, variant):
    _row, kind_committed = ui.commit_prediction(identity, LAB, "kind", kind_question, kind_commit_buttons, variant=variant, held=held_now())
    _row
    return (kind_committed,)


@app.cell(hide_code=True)
def _(hang, kind_committed, variant):
    ui.gate(kind_committed, what="the answer")
    _r, _axis, _g = lab14.culprit(hang)
    mo.vstack([
        ui.variant_reveal(kind_committed, variant.questions["kind"]),
        mo.md(
            f"**The injected fault:** {dbg.HANG_FAULTS[hang.fault.kind]}, rank {_r} (node {hang.job.node(_r)}), holding up "
            f"{lab14.group_label(hang.job, _axis, _g)}. What the tools would have shown: `python -m torch.distributed.flight_recorder.fr_trace` "
            "over the dumps matches each group's calls by sequence id and names the first mismatch or the missing rank; `py-spy dump` on the "
            "suspect shows where its Python is (a data loader, a branch); `nvidia-smi` and DCGM show an Xid or a throttled clock; "
            "`nccl-tests` between the suspect node and a neighbour shows a dead or slow NIC."
        ),
    ])
    return


@app.cell(hide_code=True)
def _(kind_committed, timings):
    ui.gate(kind_committed, what="the timings")
    mo.md(rf"""
    ## B · {timings.slowdown - 1:.0%} slower: per-rank step timings

    Nothing hangs, so no watchdog fires: the step is paced by its slowest member. Each rank's compute, exposed
    DP communication and checkpoint write over 40 steps, each against the median of a group of yours.
    """)
    return


@app.cell(hide_code=True)
def _(kind_committed, outlier_panel):
    ui.gate(kind_committed)
    outlier_panel
    return


@app.cell(hide_code=True)
def _(job, kind_committed, outlier_dropdown, threshold_slider, timings):
    ui.gate(kind_committed)
    _flagged = lab14.flagged(timings, job, outlier_dropdown.value, float(threshold_slider.value))
    _gid = job.group_ids[outlier_dropdown.value]
    _c = dbg.outliers(timings.compute_s.mean(axis=0), _gid)
    _d = dbg.outliers(timings.dp_comm_s.mean(axis=0), _gid)
    _k = timings.checkpoint_s.max(axis=0)
    _rows = [{"rank": _r, "node": job.node(_r), "compute / median": f"{_c[_r]:.3f}", "DP wait / median": f"{_d[_r]:.3f}",
              "checkpoint write": f"{_k[_r]:.1f} s (median {np.median(_k):.1f} s)"} for _r in _flagged[:12]]
    mo.vstack([
        ui.metric_cards({"steps slower than planned": f"{timings.slowdown - 1:.1%}", "ranks flagged": f"{len(_flagged):,}",
                         "planned step": f"{timings.healthy_step_s:.2f} s", "median step": f"{np.median(timings.step_s):.2f} s"}),
        ui.static_table(_rows) if _rows else mo.md("No rank clears this threshold against this group."),
    ])
    return


# The step times do not depend on the group or the threshold: drawn once, not on every move.
@app.cell(hide_code=True)
def _(kind_committed, timings):
    ui.gate(kind_committed)
    step_figure(timings)
    return


@app.cell(hide_code=True)
def _(kind_committed, timings, variant):
    ui.gate(kind_committed)
    _s = variant.settings
    mo.md(f"**The slowdown, revealed:** {dbg.SLOW_FAULTS[_s['slow']]} at rank {_s['slow_rank']} (node {_s['slow_rank'] // 8}): "
          f"{timings.slowdown - 1:.1%} on the mean step, by the engine's formula for it "
          "(a lower clock from the power curve, a ring paced by its slowest link, layers moved onto one stage, a node's kernels launched late, "
          "a node's checkpoint written slowly).")
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## C · The timeout: how long to wait before giving up
    """)
    return


@app.cell
def _(variant):
    timeout_question = ui.variant_question(variant.questions["timeout"])
    timeout_question
    return (timeout_question,)


@app.cell
def _():
    timeout_commit_buttons = ui.commit_buttons()
    return (timeout_commit_buttons,)


@app.cell
def _(held_now, identity, timeout_commit_buttons, timeout_question, variant):
    _row, timeout_committed = ui.commit_prediction(identity, LAB, "timeout", timeout_question, timeout_commit_buttons, variant=variant, held=held_now())
    _row
    return (timeout_committed,)


# The costs of every setting, once per student (the key takeaways read them too, not the slider).
@app.cell
def _(variant):
    timeout_view = lab14.timeout_facts(float(variant.settings["storage_gbps"]), float(variant.settings["checkpoint_min"]))
    return (timeout_view,)


@app.cell(hide_code=True)
def _(timeout_committed, timeout_panel):
    ui.gate(timeout_committed, what="the timeout's cost")
    timeout_panel
    return


@app.cell(hide_code=True)
def _(job, timeout_committed, timeout_slider, timeout_view):
    ui.gate(timeout_committed)
    _now = timeout_view["loss"][timeout_slider.value]
    mo.vstack([
        ui.metric_cards({"GPU-hours lost a month": f"{_now['gpu_hours']:,.0f}", "hangs a month": f"{_now['hangs']:.1f}",
                         "healthy jobs killed a month": f"{_now['false_kills']:.0f}", "longest healthy wait": f"{timeout_view['wait_s'] / MINUTE:.1f} min"}),
        timeout_figure(timeout_view, timeout_slider.value),
        mo.md(f"Hangs come from Llama 3's Table 5 causes that leave a job waiting in a collective ({', '.join(dbg.HANG_CAUSES)}), per GPU, "
              f"at {job.ranks:,} GPUs (the job's MTBF over all {LLAMA3_UNEXPECTED} causes is {job_mtbf_s(job.ranks) / HOUR:.1f} h). PyTorch's default is "
              f"{dbg.DEFAULT_TIMEOUT_S / MINUTE:.0f} min; the heartbeat monitor (`TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC`, {dbg.HEARTBEAT_TIMEOUT_S / MINUTE:.0f} min) "
              "aborts a process whose watchdog itself is stuck."),
    ])
    return


@app.cell(hide_code=True)
def _(timeout_committed, variant):
    ui.gate(timeout_committed, what="the answer")
    ui.variant_reveal(timeout_committed, variant.questions["timeout"])
    return


@app.cell(hide_code=True)
def _(culprit_committed, kind_committed, timeout_committed):
    ui.gate(culprit_committed, kind_committed, timeout_committed)
    ui.math_peek(
        "The rules behind the records and the costs",
        r"""
    A call of group $G$ with sequence id $s$ completes when every member of $G$ has issued its own call $s$:
    rank $r$ stops at the first call $j$ for which $\min_{p \in G(j)} \text{issued}_p < s(j) + 1$. A rank that skips a call
    is matched against its peers' next one; a rank that never issues one holds its group at $s - 1$, and the groups of
    those waiting members stop in turn.

    Ring pacing: a ring moves at its slowest link, $t = (N-1)\alpha + \frac{N-1}{N}\frac{M}{B_{min}}$.

    Timeout cost a month: $(h + k\,[T \le W])(T + R)\,N$ GPU-hours, with $h$ hangs a month, $k$ healthy waits of length $W$
    a month, restart $R$, $N$ GPUs: the best $T$ is the shortest above $W$.
    """,
    )
    return


@app.cell(hide_code=True)
def _(culprit_committed, hang, job, kind_committed, timeout_committed, timeout_view, timings):
    ui.gate(culprit_committed, kind_committed, timeout_committed)
    _best = timeout_view["loss"][timeout_view["best_min"]]["gpu_hours"]
    _default = timeout_view["loss"][int(dbg.DEFAULT_TIMEOUT_S / MINUTE)]["gpu_hours"]
    mo.md(f"""
    ## Key takeaways

    - A hang shows as sequence ids: the group whose members stopped one call short of the rest, and the one member
      that did not arrive (or arrived with another size or op), name the rank. Here {hang.not_arrived(lab14.culprit(hang)[1]).__len__():,}
      {lab14.culprit(hang)[1].upper()} groups have members waiting; one of them holds the job.
    - The watchdog's message comes from a waiting rank, not the faulty one; a missing dump, a transport warning or a
      `py-spy` stack tells the kinds apart.
    - A slow job is paced by its slowest member: {timings.slowdown - 1:.1%} here, from one fault among {job.ranks:,} GPUs.
    - The timeout trades hangs against healthy waits: {timeout_view['best_min']} min loses {_best:,.0f} GPU-hours a month,
      the {dbg.DEFAULT_TIMEOUT_S / MINUTE:.0f}-minute default {_default:,.0f}.

    **Back to:** Lab 09's rank grid (the groups here), Lab 10's failure rates (how often this happens).
    """)
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    culprit_committed,
    diagnosis_inputs,
    identity,
    kind_committed,
    submit_button,
    timeout_committed,
    variant,
):
    ui.gate(culprit_committed, held=(kind_committed, timeout_committed))
    _inputs = diagnosis_inputs()
    _pred = {"culprit": culprit_committed.answer, "kind": kind_committed.answer, "timeout": timeout_committed.answer}
    _view, submitted = ui.submit_to_ledger(identity, submit_button, lambda: [ui.ledger_step(LAB, STEP, _inputs, _pred, diagnosis_outcomes, "the diagnosis", variant)])
    mo.vstack([_view, ui.hud({"engine": ENGINE_VERSION, "culprit prediction": culprit_committed.describe(), "kind prediction": kind_committed.describe(),
                              "timeout prediction": timeout_committed.describe(), "ledger": "saved" if submitted else "not submitted"})])
    return (submitted,)


@app.function
def seq_heatmap(h, axis: str) -> go.Figure:
    """One heatmap trace over the rank grid (columns: DP index; rows: stage, then TP index): each
    rank's last completed call in `axis` behind the furthest rank's. A rank with no dump is a hole.
    Built from plain dicts (charts.figure, the JSON the page receives equal to the validated
    build's), its axes without the theme's automargin (the left margin fixed for the axis title
    and 2-digit ticks) and with ticklabeloverflow='allow' (every label fits; Plotly's default
    measured each one, a forced layout of the page each): a process-group move redraws it."""
    j = h.job
    p = j.plan
    done = h.last_completed_seq(axis).astype(float)
    behind = done - done.max()
    tp, _, dp, pp = j.coords.T
    z = np.zeros((p.pp * p.tp, p.dp))
    z[pp * p.tp + tp, dp] = behind
    ranks = np.zeros((p.pp * p.tp, p.dp), dtype=int)
    ranks[pp * p.tp + tp, dp] = np.arange(j.ranks)
    zl = z.tolist()
    if h.fault.kind == "gpu_fell_off_bus":
        f = h.fault.rank
        zl[int(pp[f] * p.tp + tp[f])][int(dp[f])] = None
    # Viridis as the validated build spells it out (plotly.py's, not Plotly.js's own 'Viridis')
    heat = dict(type="heatmap", z=zl, customdata=ranks, colorscale=go.Heatmap(colorscale="Viridis").colorscale, colorbar=dict(title=dict(text="calls behind"), ticklabeloverflow="allow"),
                hovertemplate="rank %{customdata}<br>DP %{x}, row %{y}<br>%{z} calls behind<extra></extra>")
    return charts.figure([heat], dict(
        height=360, xaxis=dict(title=dict(text="DP index"), automargin=False, ticklabeloverflow="allow"),
        yaxis=dict(title=dict(text="stage x TP + TP index"), autorange="reversed", automargin=False, ticklabeloverflow="allow"),
        title=dict(text=f"last completed call in each rank's {axis.upper()} group"), margin=dict(l=70),
    ))


@app.function
def step_figure(t) -> go.Figure:
    """The job's step time over the 40 steps against the plan's."""
    fig = go.Figure()
    fig.add_scatter(y=t.step_s, mode="lines+markers", name="step time", line=dict(color=COLORS["blue"]))
    fig.add_scatter(y=[t.healthy_step_s] * len(t.step_s), mode="lines", name="planned (the engine's estimate)", line=dict(color=COLORS["muted"], dash="dot"))
    fig.update_layout(height=280, xaxis=dict(title="step"), yaxis=dict(title="seconds"))
    return apply_plotly_theme(fig)


@app.function
def timeout_figure(view: dict, current: int) -> go.Figure:
    """GPU-hours lost a month at each timeout setting, the current one marked. Built from plain
    dicts (charts.figure), its axes without the theme's automargin (the left margin fixed for
    the axis title and ticks up to '100k') and with ticklabeloverflow='allow': a timeout move
    redraws it."""
    xs = list(view["loss"])
    bar = dict(type="bar", x=[str(x) for x in xs], y=[view["loss"][x]["gpu_hours"] for x in xs], name="GPU-hours lost a month",
               marker=dict(color=[COLORS["red"] if x == current else COLORS["sky"] for x in xs]))
    return charts.figure([bar], dict(
        height=300, xaxis=dict(title=dict(text="collective timeout (minutes)"), automargin=False, ticklabeloverflow="allow"),
        yaxis=dict(title=dict(text="GPU-hours a month"), type="log", automargin=False, ticklabeloverflow="allow"), margin=dict(l=75),
    ))


if __name__ == "__main__":
    app.run()
