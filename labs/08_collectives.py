import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 08: Collectives, from one ring step to a training step",
)

with app.setup:
    import marimo as mo
    import plotly.graph_objects as go

    from labs.core import ENGINE_VERSION, LINKS
    from labs.core import ui
    from labs.core.engine.compression import compression_rows
    from labs.core.engine.dp_scaling import PCIE_CLAIM_GPUS, PCIE_EFFICIENCY_CLAIM, SEQ_LEN, TORCH_DDP, scaling_efficiency
    from labs.core.engine.hardware import CLUSTERS, Cluster
    from labs.core.engine.models import MODELS, Model
    from labs.core.ps_svg import ps_chart
    from labs.core.ring_svg import ring_chart

    PCIE_SERVERS = ("pcie-a100", "dgx-a100")
    PCIE_MODELS = ("seed-100m", "seed-12l-512")
    from labs.core.scenarios.lab05 import DESIGN_MODEL, tp8_dp_times
    from labs.core.scenarios.lab08 import (
        BUSBW_BYTES,
        LAB,
        LB_SETUPS,
        MILESTONE_BUCKET_BYTES,
        bucket_cluster,
        MILESTONE_MICROBATCHES,
        MILESTONE_SIZE_MODELS,
        MILESTONE_SETUPS,
        NVL72_GPUS,
        NVL72_MEASURED_SOURCE,
        PRIMITIVE_BYTES,
        PRIMITIVE_LINK,
        PRIMITIVE_N,
        PS_SIZES,
        PS_WORKER_LINKS,
        RAILS_BYTES,
        RING_N_LARGE,
        RING_N_SMALL,
        SEED_COMM_MS,
        SEED_COMPUTE_MS,
        STEP,
        STEPPER_LINKS,
        STEPPER_RANKS,
        STEPPER_DEFAULT_SIZE,
        STEPPER_SIZES,
        BUCKET_MACHINES,
        machine_bucket_facts,
        busbw_rows,
        fewest_tokens_to_win,
        lb_curves,
        measured_busbw,
        milestone_estimates,
        nvl72_cluster,
        nvl72_confidence,
        nvl72_rows,
        nvls_busbw_note,
        primitive_rows,
        ps_vs_ring,
        rails_rows,
        ring_computed_rows,
        ring_facts,
        ring_outcomes,
        ring_state,
        seed_example,
        seed_ranges,
        tp_cliff,
    )
    from labs.core.style import COLORS, apply_plotly_theme

    ALGORITHM_COLORS = {"ring": COLORS["blue"], "tree": COLORS["green"], "nvls": COLORS["orange"]}


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 08 · Collectives, from one ring step to a training step

    Every parallel training step ends in a collective: an all-reduce of gradients, a gather of
    weights, an exchange of tokens between experts. This lab plays the ring all-reduce one step at a
    time, puts a clock on each step from a real link, and follows the same collective out to message
    sizes, node boundaries and a two-GPU training run. Every number is the engine's
    (`labs.core.engine.collectives`, `labs.core.engine.topology`) or a measured NCCL figure with its source.

    **Before you start:** Thakur, Rabenseifner and Gropp 2005, *Optimization of Collective
    Communication Operations in MPICH* (Sec. 2-4); nccl-tests `doc/PERFORMANCE.md` (algbw and busbw);
    Sergeev and Del Balso 2018, *Horovod* (Sec. 3, the parameter server and the ring).
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


# Your message sizes and GPU counts are drawn from your id (labs.variants), and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    bucket_bytes, bucket_nodes = variant.settings["bucket_bytes"], variant.settings["bucket_nodes"]
    bucket_box = BUCKET_MACHINES[variant.settings["bucket_machine"]][0]
    return bucket_box, bucket_bytes, bucket_nodes, variant


@app.cell(hide_code=True)
def _(bucket_box, bucket_bytes, bucket_nodes):
    _rows = {r["n"]: r for r in busbw_rows()}
    _eight = _rows[8]
    _bucket_cluster, _bucket_n = bucket_cluster(bucket_nodes)
    ui.stakeholder_message(
        "Infrastructure lead",
        f"nccl-tests on one DGX H100 prints **{_eight['algbw'] / 1e9:.0f} GB/s** of algbw and **{_eight['busbw'] / 1e9:.0f} GB/s** "
        f"of busbw for a {BUSBW_BYTES / 2**30:.0f} GB all-reduce: which one is our bandwidth? We reduce gradients in "
        f"{bucket_bytes / 1e6:g} MB buckets on {bucket_box} nodes and are about to go from {RING_N_SMALL} to {_bucket_n:,} GPUs. One engineer "
        "says every GPU will then send far more bytes, another wants a parameter server back. What does each GPU "
        "really send, which algorithm should reduce our buckets, and what does a training step pay?",
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)  # its all-reduce row answers the ring question
    _rows = primitive_rows()
    _table = [
        {
            "primitive": _r["primitive"],
            "who sends": _r["sends"],
            "who receives": _r["receives"],
            "each ends with": _r["ends"],
            "bytes each sender puts on the wire": f"{_r['bytes_per_rank'] / 1e9:.3f} GB",
            f"time on {LINKS[PRIMITIVE_LINK].name}": f"{_r['time_s'] * 1e3:.2f} ms",
            "where training uses it": _r["use"],
        }
        for _r in _rows
    ]
    mo.vstack(
        [
            mo.md(
                f"## 1 · The primitives\n\n"
                f"A message of {PRIMITIVE_BYTES / 1e9:.0f} GB over {PRIMITIVE_N} ranks (send/recv: 2), bytes from "
                "`collectives.bytes_sent_per_rank`, time from the alpha-beta cost at the link's measured efficiency. "
                "An all-reduce is a reduce-scatter followed by an all-gather, in bytes and in time."
            ),
            ui.data_table(_table),
        ]
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


@app.cell
def _(variant):
    bucket_question = ui.variant_question(variant.questions["bucket"])
    bucket_question
    return (bucket_question,)


@app.cell
def _():
    bucket_commit_buttons = ui.commit_buttons()
    return (bucket_commit_buttons,)


@app.cell
def _(bucket_commit_buttons, bucket_question, held_now, identity, variant):
    _row, bucket_committed = ui.commit_prediction(identity, LAB, "bucket", bucket_question, bucket_commit_buttons, variant=variant, held=held_now())
    _row
    return (bucket_committed,)


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    mo.md(r"""
    ## 2 · Ring all-reduce, step by step

    Split the message into $N$ chunks. In each of $N-1$ reduce-scatter steps every rank sends one
    chunk to its right neighbour, which adds it to its own; then every rank owns one fully reduced
    chunk. $N-1$ all-gather steps pass the finished chunks round the ring. Each step costs
    $\alpha + \frac{M/N}{B}$ on the link.
    """)
    return


# The stepper's instruments are shown by a gated cell of their own through copies of their HTML
# (mo.Html of each element's text, not the element, which a move would re-run that cell for): a
# move re-draws the ring below, never the instruments.
@app.cell
def _():
    ring_n_slider = mo.ui.slider(steps=list(STEPPER_RANKS), value=4, label="Ranks N", show_value=True)
    ring_size_dropdown = mo.ui.dropdown(options=STEPPER_SIZES, value=STEPPER_DEFAULT_SIZE, label="Message")
    ring_link_dropdown = mo.ui.dropdown(options={LINKS[_k].name: _k for _k in STEPPER_LINKS}, value=LINKS[STEPPER_LINKS[0]].name, label="Link")
    ring_panel = mo.hstack([mo.Html(_w.text) for _w in (ring_n_slider, ring_size_dropdown, ring_link_dropdown)], justify="start", wrap=True)

    def ring_setting() -> dict:
        return dict(n=ring_n_slider.value, nbytes=ring_size_dropdown.value, link=ring_link_dropdown.value)
    return (
        ring_link_dropdown,
        ring_n_slider,
        ring_panel,
        ring_setting,
        ring_size_dropdown,
    )


# ring_inputs() reads the instruments when the submit is pressed, so a move does not re-run the
# submit. The step slider is made anew for each N: its value reaches ring_inputs through state
# the slider sets (on_change), which no cell reads, so a Ranks N move re-runs neither cell.
@app.cell
def _(ring_setting):
    _get_step, set_ring_step = mo.state(0)

    def ring_inputs() -> dict:
        _s = ring_setting()
        return dict(**_s, step=min(_get_step(), 2 * (_s["n"] - 1)))
    return ring_inputs, set_ring_step


@app.cell
def _(ring_n_slider, set_ring_step):
    ring_step_slider = mo.ui.slider(start=0, stop=2 * (ring_n_slider.value - 1), step=1, value=0, label="Step (0: before the first)", show_value=True, on_change=set_ring_step)
    set_ring_step(0)  # a new N's slider starts at step 0
    ring_step_panel = mo.Html(ring_step_slider.text)
    return ring_step_panel, ring_step_slider


@app.cell
def _(ring_committed, ring_panel):
    ui.gate(ring_committed, what="the ring stepper")
    mo.vstack([mo.md("### Instruments"), ring_panel])
    return


@app.cell
def _(ring_committed, ring_step_panel):
    ui.gate(ring_committed)
    ring_step_panel  # a cell of its own: a new N re-draws the step slider, not the three above
    return


# The stepper's state and its drawing in one cell: a step move re-runs one cell here, not three.
@app.cell
def _(
    ring_committed,
    ring_link_dropdown,
    ring_n_slider,
    ring_size_dropdown,
    ring_step_slider,
):
    ui.gate(ring_committed)
    ring_view = ring_state(n=ring_n_slider.value, nbytes=ring_size_dropdown.value, link=ring_link_dropdown.value, step=min(ring_step_slider.value, 2 * (ring_n_slider.value - 1)))
    _v = ring_view
    _phase = {"start": "before the first step", "reduce-scatter": "reduce-scatter", "all-gather": "all-gather"}[_v["phase"]]
    mo.vstack(
        [
            mo.hstack([mo.Html(ring_chart(_v)), holds_grid(_v)], widths=[5, 6], align="center"),  # plain SVG: a Plotly ring's redraw cost a Ranks N move more than the floor page's whole move
            ui.metric_cards(
                {
                    "phase": _phase,
                    "step": f"{_v['step']} of {_v['steps']}",
                    "bytes on each link this step": f"{_v['link_bytes'][0] / 1e6:,.1f} MB",
                    "sent per rank so far": f"{_v['sent_so_far'] / 1e6:,.1f} MB",
                    "closed form 2(N-1)/N M": f"{_v['sent_total'] / 1e6:,.1f} MB",
                    "clock": f"{_v['clock_s'] * 1e3:.3f} ms",
                    "all_reduce_time": f"{_v['all_reduce_time_s'] * 1e3:.3f} ms",
                }
            ),
            mo.md(
                f"Each step moves one chunk of {_v['chunk_bytes'] / 1e6:,.1f} MB "
                f"over every link at once and costs {_v['latency_s'] * 1e6:.1f} µs + chunk / {_v['bandwidth'] / 1e9:.0f} GB/s on "
                f"{_v['link_name']}; after all {_v['steps']} steps the clock reads `all_reduce_time` and each rank has sent "
                f"2(N-1)/N of the message. Left: who sends which chunk this step. Right: how many ranks' "
                "contributions each rank's copy of each chunk holds (N = the full sum)."
            ),
        ]
    )
    return (ring_view,)


@app.cell
def _(ring_committed, ring_link_dropdown, ring_size_dropdown):
    ui.gate(ring_committed)
    _rows = ring_computed_rows(ring_size_dropdown.value, ring_link_dropdown.value)
    _table = [
        {
            "ranks N": f"{_r['n']:,}",
            "bytes each rank sends": f"{_r['bytes_per_rank'] / 1e6:,.1f} MB",
            "of which 2M": f"{_r['bytes_per_rank'] / (2 * ring_size_dropdown.value):.1%}",
            "latency term 2(N-1) alpha": f"{_r['latency_s'] * 1e3:.3f} ms",
            "ring time": f"{_r['time_s'] * 1e3:.3f} ms",
        }
        for _r in _rows
    ]
    mo.vstack(
        [
            mo.md("**Larger N, computed (not animated).** The bytes level off at 2M; the latency term keeps growing with N."),
            ui.data_table(_table),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed, variant):
    ui.gate(ring_committed, held_note=True)
    ui.variant_reveal(ring_committed, variant.questions["ring"])
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    mo.md(r"""
    ## 3 · The parameter server against the ring

    A parameter server receives every worker's gradient and sends the sum back: its NIC carries
    $N \cdot M$ each way, growing with $N$, while a ring rank sends $2\frac{N-1}{N}M$ whatever $N$ is.
    This is one server. Sharded parameter servers (Li et al. 2014; BytePS) split the parameters over
    $S$ servers, each carrying $N \cdot M / S$, which removes the single NIC's bottleneck: the comparison
    below is the classic single-server design, not the best a parameter server can do.
    """)
    return


# The two dropdowns are shown by a gated cell of their own through a copy of their HTML (mo.Html
# of each element's text, not the element, which a move would re-run that cell for): a move
# re-draws the comparison below, never the dropdowns.
@app.cell
def _():
    ps_size_dropdown = mo.ui.dropdown(options=PS_SIZES, value=next(iter(PS_SIZES)), label="Gradient per step")
    ps_worker_dropdown = mo.ui.dropdown(options={LINKS[_k].name: _k for _k in PS_WORKER_LINKS}, value=LINKS[PS_WORKER_LINKS[0]].name, label="Workers' NIC (the ring runs on it)")
    ps_panel = mo.hstack([mo.Html(ps_size_dropdown.text), mo.Html(ps_worker_dropdown.text)], justify="start")
    return ps_panel, ps_size_dropdown, ps_worker_dropdown


@app.cell(hide_code=True)
def _(ps_panel, ring_committed):
    ui.gate(ring_committed)
    ps_panel
    return


@app.cell
def _(ps_size_dropdown, ps_worker_dropdown, ring_committed):
    ui.gate(ring_committed)
    _res = ps_vs_ring(ps_size_dropdown.value, ps_worker_dropdown.value)
    _by_n = {_r["n"]: _r for _r in _res["rows"]}
    _x = _res["crossover"]
    _big = _res["rows"][-1]
    mo.vstack(
        [
            mo.Html(ps_chart(_res)),  # plain SVG: a Plotly redraw cost this move more than the floor page's whole move
            mo.md(
                f"One server NIC ({_res['server']}, {_res['server_gbs']:.0f} GB/s achieved) against a ring over the workers' "
                f"{_res['worker']} ({_res['worker_gbs']:.1f} GB/s). "
                + (f"The ring is faster from **N = {_x}** on" + (f" (at N = {_x}: ring {_by_n[_x]['ring_s'] * 1e3:,.2f} ms, server {_by_n[_x]['ps_s'] * 1e3:,.2f} ms)" if _x in _by_n else "") + ". " if _x else "The server stays faster over this range. ")
                + f"At N = {_big['n']:,} the server receives **{_big['server_bytes'] / 1e9:,.0f} GB** per step and needs "
                f"{_big['ps_s']:,.2f} s; each ring rank sends {_big['ring_bytes'] / 1e6:,.0f} MB in {_big['ring_s']:,.3f} s."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(bucket_committed, ring_committed):
    ui.gate(ring_committed)
    # The heading shows with its neighbours' (no gap in the numbering before the bucket commit);
    # the text waits for the bucket commit: the latency steps it names answer the bucket question.
    mo.md("## 4 · Latency against bandwidth") if not ui.gate(bucket_committed, stop=False) else mo.md(r"""
    ## 4 · Latency against bandwidth

    Small messages pay the $\alpha$ steps, large ones the bytes. The ring takes $2(N-1)$ latency
    steps; NCCL's tree (all-reduce only) climbs a chain inside each node and a double binary tree
    of $\log_2$(nodes) levels across them, at 0.92 of the ring's bandwidth; NVLS lets the NVSwitch
    add the chunks inside a node, and runs as NVLSTree across nodes. For each message NCCL also
    picks a protocol: LL (about 0.6 µs a hop on NVLink, half the bandwidth) for small ones, LL128,
    or Simple (3.4 µs a hop, all of it) for large ones. Inside a node NCCL also reaches its
    plateau only at hundreds of MB: each rank's slice moves in chunks too small to keep every
    channel busy, so the engine stretches the bandwidth term by a ramp fitted on measured curves.
    The engine's curves are drawn against measured NCCL bus bandwidth.
    """)
    return


@app.cell
def _():
    lb_setup_dropdown = mo.ui.dropdown(options=list(LB_SETUPS), value=next(iter(LB_SETUPS)), label="Cluster")
    return (lb_setup_dropdown,)


@app.cell
def _(bucket_committed, lb_setup_dropdown):
    ui.gate(bucket_committed, what="the latency-bandwidth curves")
    _curves = lb_curves(lb_setup_dropdown.value)
    _measured = measured_busbw(lb_setup_dropdown.value)
    _rows = [
        {
            "algorithm": _alg,
            "peak busbw (engine)": f"{_c['peak_busbw'] / 1e9:.0f} GB/s",
            "busbw at 1 MB": f"{float(_c['busbw'][nearest_index(_c['sizes'], 1e6)]) / 1e9:.1f} GB/s",
            "busbw at 10 GB": f"{float(_c['busbw'][-1]) / 1e9:.0f} GB/s",
            "alpha = beta at": f"{_c['crossover_bytes'] / 1e6:,.1f} MB",
        }
        for _alg, _c in _curves.items()
    ]
    _sources = [f"- {_alg} curve: {_src}" for _alg, (_, _src) in _measured["curves"].items()] + [f"- {_p['busbw_gbs']} GB/s at {_p['bytes'] / 2**30:.0f} GB ({_p['algorithm']}): {_p['source']}" for _p in _measured["points"]]
    mo.vstack(
        [
            lb_setup_dropdown,
            lb_figure(_curves, _measured),
            ui.data_table(_rows),
            mo.md(
                "Below the *alpha = beta* size a collective is latency-bound: doubling the message barely changes the time. "
                "Above it, bandwidth-bound.\n\n**Measured (tests/data/nccl_busbw.json):**\n" + ("\n".join(_sources) if _sources else "- none stored for this setup")
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(bucket_committed, variant):
    ui.gate(bucket_committed)
    _q = variant.questions["bucket"]
    ui.reveal(bucket_committed.answer, _q.key, {_o.key: f"{_o.label}: {_q.explanations[_o.key]}" for _o in _q.options})
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    _rows = busbw_rows()
    _nvls = nvls_busbw_note()
    _table = [
        {
            "ranks N": f"{_r['n']:,}",
            "time": f"{_r['time_s'] * 1e3:.2f} ms",
            "algbw = S / t": f"{_r['algbw'] / 1e9:.0f} GB/s",
            "x 2(N-1)/N": f"{_r['factor']:.3f}",
            "busbw": f"{_r['busbw'] / 1e9:.0f} GB/s",
        }
        for _r in _rows
    ]
    mo.vstack(
        [
            mo.md(
                f"## 5 · algbw against busbw\n\n"
                f"nccl-tests prints two bandwidths for a {BUSBW_BYTES / 2**30:.0f} GB all-reduce. **algbw** is the message over the "
                "time; it falls as N grows because each rank must move 2(N-1)/N of the message. **busbw** multiplies that factor "
                "back in: the rate each rank's wires run at, comparable across N and against the link's speed."
            ),
            ui.data_table(_table),
            mo.md(
                f"nccl-tests applies 2(N-1)/N to NVLS too, where the switch does the adding: {_nvls['n']} {_nvls['gpu']} then show "
                f"**{_nvls['busbw'] / 1e9:.0f} GB/s** of busbw ({_nvls['algbw'] / 1e9:.0f} GB/s algbw), above NVLink's "
                f"{_nvls['line'] / 1e9:.0f} GB/s line rate each way. Compare busbw with busbw, and read NVLS's as an "
                f"effective rate. At N = {_rows[-1]['n']:,} the busbw falls to {_rows[-1]['busbw'] / 1e9:.0f} GB/s: "
                "not the wires, the ring's latency steps at this size."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    _rows = rails_rows()
    _table = [
        {
            "group (two DGX H100 nodes)": _r["label"],
            "NICs per node it crosses on": f"{_r['nics']:g}" if _r["nics"] else "none (NVLink)",
            "engine busbw": f"{_r['busbw'] / 1e9:.0f} GB/s",
            "NCCL measured": f"{_r['measured'] / 1e9:.0f} GB/s",
            "error": f"{_r['busbw'] / _r['measured'] - 1:+.2%}",
        }
        for _r in _rows
    ]
    _cliff = tp_cliff()
    _t8, _t16 = _cliff[8], _cliff[16]
    _node = tp8_dp_times(_cliff["gpus"], DESIGN_MODEL)
    mo.vstack(
        [
            mo.md(
                f"## 6 · Across nodes: rails, and the real cliff\n\n"
                f"NCCL runs one ring per channel and crosses each node boundary on a different NIC. A ring over whole nodes "
                f"therefore uses all eight NICs of a DGX H100; a group with one GPU per node uses one. Ring all-reduce of "
                f"{RAILS_BYTES / 2**30:.0f} GB:"
            ),
            ui.data_table(_table),
            mo.md(
                f"""
    A data-parallel ring over whole nodes is not walled by one NIC. The group behind TP = {_rows[2]['stride']} is, at
    **{_rows[2]['busbw'] / 1e9:.0f} GB/s**, {_rows[0]['busbw'] / _rows[2]['busbw']:.0f}x below NVLink, in bus bandwidth but not in
    time: it carries only 1/8 of the gradients, and a node's eight such groups run at once, one per NIC, so per node it
    is the same eight NICs as a ring over whole nodes ({_node['model']}'s bf16 gradients at {_node['gpus']} GPUs:
    **{_node['whole_s'] * 1e3:.0f} ms** over whole nodes, **{_node['behind_s'] * 1e3:.0f} ms** behind TP = 8). And it runs once a step,
    overlapped with the backward.

    **The cliff that hurts is a per-layer collective leaving the NVLink domain.** {_cliff['model']} on
    {_cliff['gpus']:,} H100s (Lab 05, Act II): at TP = {_t8['plan'].tp} the step exposes **{_t8['tp_comm_s']:.2f} s** of
    tensor-parallel communication ({_t8['mfu']:.0%} MFU, the engine's for the `{_cliff['stack']}` software stack); at TP = {_t16['plan'].tp}, spanning two nodes, **{_t16['tp_comm_s']:.2f} s**
    ({_t16['mfu']:.0%} MFU). Each GPU moves {_t16['tp_bytes'] / _t8['tp_bytes']:.1f}x the bytes, pays network latency on
    every layer, and Transformer Engine can no longer hide the collectives behind the GEMMs.
    """
            ),
            ui.published_beside(_t8["estimate"]),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    _rows = nvl72_rows()
    _rack, _conf = nvl72_cluster(), nvl72_confidence()
    _table = [
        {
            "all-reduce of N GPUs": f"{_r['n']}" + (f" ({_r['racks']} racks)" if _r["racks"] > 1 else ""),
            "DGX B200, ring": f"{_r['dgx'] / 1e9:.0f} GB/s ({_r['dgx_nodes']} node{'s' if _r['dgx_nodes'] > 1 else ''})",
            "DGX B200, NCCL's pick": f"{_r['dgx_auto'] / 1e9:.0f} GB/s",
            "GB200 NVL72, ring": f"{_r['nvl72'] / 1e9:.0f} GB/s",
            "GB200 NVL72, NCCL's pick (NVLS)": f"{_r['nvl72_auto'] / 1e9:.0f} GB/s",
            "measured (NVL72)": f"{_r['measured'] / 1e9:.0f} GB/s" if _r["measured"] else "",
        }
        for _r in _rows
    ]
    _r72 = next(_r for _r in _rows if _r["n"] == NVL72_GPUS)
    _r64 = next(_r for _r in _rows if _r["n"] == 64)
    _fields = "; ".join(f"{_g}'s " + ", ".join(f"`{_f}`" for _f in _fs) for _g, _fs in _conf["gpu_fields"].items() if _fs)
    mo.vstack(
        [
            mo.md(
                f"### NVL72: {NVL72_GPUS} GPUs on one NVLink domain\n\n"
                f"A GB200 NVL72 rack is {_rack.nodes} trays (hosts) of {_rack.gpus_per_node} GPUs joined by NVLink switches into "
                f"one {_rack.domain_gpus}-GPU domain ({_rack.intra.name}: {_conf['line'] / 1e9:.0f} GB/s each way per GPU), "
                f"with one NIC per GPU ({_rack.inter.name}) to other racks. A DGX B200 has the same NVLink 5 inside "
                f"{_rows[0]['node_gpus']} GPUs and its NICs beyond them. The switches also add (NVLink SHARP, NVLS): "
                f"each GPU sends its data once and reads the sum back, so NCCL picks NVLS for large all-reduces. "
                f"All-reduce bus bandwidth at {RAILS_BYTES / 2**30:.0f} GB:"
            ),
            ui.data_table(_table),
            mo.md(
                f"A group of up to {NVL72_GPUS} GPUs no longer meets the bandwidth cliff of section 6: at 64 GPUs the rack's "
                f"NVLS all-reduce runs at **{_r64['nvl72_auto'] / 1e9:.0f} GB/s** against **{_r64['dgx_auto'] / 1e9:.0f} GB/s** "
                f"on {_r64['dgx_nodes']} DGX B200s ({_r64['nvl72_auto'] / _r64['dgx_auto']:.1f}x), because no byte crosses a NIC. "
                "A data-parallel or, above all, an expert-parallel group of a rack runs its all-reduces and all-to-alls at "
                "NVLink rate, which is NVL72's main payoff for training. It does not make tensor parallelism of 72 worthwhile: "
                "a GPU's TP bytes per token stay the same as the degree grows while its share of each GEMM shrinks (Lab 05, "
                "Act II), so past some degree the collectives outlast the GEMMs on any link (the scaling book bounds TP by the "
                "model's FFN width times the link's bandwidth over the GPU's FLOP/s), and the degree must also divide the "
                "attention heads (Lab 13 sweeps it on this rack)."
            ),
            mo.md(
                f"**What is measured, what is assumed.** NVLink 5's figures are measured: the ring's "
                f"{_conf['ring_busbw'] / 1e9:.0f} GB/s busbw on one 4-GPU GB200 tray (Azure, NCCL 2.25.1) and NVLS's "
                f"{_conf['nvls_busbw'] / 1e9:.0f} GB/s at 8 GB over a whole rack; the measured column is {NVL72_MEASURED_SOURCE} "
                f"(the engine is {_r72['nvl72_auto'] / _r72['measured'] - 1:+.0%} on one rack). So are the GPUs' matmul rates "
                f"(GB200 {_conf['mamf_gb200'] / 1e12:,.0f}, B200 {_conf['mamf_b200'] / 1e12:,.0f} TFLOP/s BF16, MAMF). Still "
                f"unconfirmed in the catalog: {_fields}"
                + (", and NVLS's rate on fewer GPUs than a whole rack (an 8-GPU DGX B200 board, part of a rack), taken as "
                   "the rack's measured one: every NCCL's-pick figure below 72 GPUs rests on it" if _conf["nvls_assumed_on_hgx"] else "")
                + " (`tests/test_unconfirmed.py` lists them)."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    import labs.core.scenarios.lab08_sharp as _sharp

    _rows, _m = _sharp.sharp_rows(), _sharp.sharp_measured()
    _one, _whole = _rows
    _gb = _sharp.SHARP_BYTES / 2**30
    _table = [
        {
            f"all-reduce of {_gb:.0f} GB across {_sharp.SHARP_NODES} DGX H100s": _r["label"],
            "each NIC sends, ring": f"{_r['nic_bytes_off'] / 1e9:.2f} GB",
            "each NIC sends, SHARP": f"{_r['nic_bytes_on'] / 1e9:.2f} GB",
            "switches forward (NCCL's pick)": f"{_r['time_off_s'] * 1e3:.1f} ms",
            "switches add (SHARP)": f"{_r['time_on_s'] * 1e3:.1f} ms",
            "speed-up": f"{_r['speedup']:.2f}x",
        }
        for _r in _rows
    ]
    mo.vstack(
        [
            mo.md(
                f"### SHARP: the scale-out switches add too\n\n"
                f"NVLS adds inside an NVLink domain. InfiniBand switches can add across nodes ({_sharp.sharp_fabric_name()}; "
                "NCCL runs it as CollNet, or NVLS+SHARP, when the SHARP plugin is enabled): every node sends its "
                "data up once and receives the sum once, where a ring passes partial sums around and sends "
                "2(N-1)/N of it. Seed 002 says \"SHARP halves all-reduce traffic\". The engine, SHARP off and on:"
            ),
            ui.data_table(_table),
            mo.md(
                f"**The claim, checked.** On the wire it holds: each NIC sends {_one['nic_bytes_on'] / _one['nic_bytes_off']:.2f} "
                f"of the ring's bytes ({_one['nic_bytes_off'] / 1e9:.2f} GB against {_one['nic_bytes_on'] / 1e9:.2f} GB "
                f"with one GPU a node; exactly half only as N grows, and nothing saved at N = 2). In time it holds only "
                f"where the NIC is what limits: the data-parallel group behind TP = 8, one GPU and one NIC a node, "
                f"finishes **{_one['speedup']:.2f}x** sooner. Whole nodes gain **{_whole['speedup']:.2f}x**: with a NIC "
                f"per GPU the NICs were not the only limit, and inside each node NVLink must still reduce the node's data "
                f"and spread the sum, about as slow as the ring's NIC traffic (NCCL's developers: with 8 NICs \"the "
                f"bottleneck becomes NVLink\"). {_m['source']} measured {_m['measured'] / 1e9:.0f} GB/s of bus bandwidth "
                f"on {_m['gpus']} GPUs ({_m['nodes']} nodes) at {_gb:.0f} GB with SHARP; the engine gives "
                f"{_m['engine_on'] / 1e9:.0f} GB/s with SHARP and {_m['engine_off'] / 1e9:.0f} without. "
                "No datasheet gives the switches' reduction rate: the engine takes the ports' line rate "
                "(unconfirmed; `tests/test_unconfirmed.py` lists it)."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)  # with sections 1-6, not alone above them before the first commit
    mo.md(
        f"""
    ## 7 · The two-GPU milestone

    A small model trained with PyTorch DDP on two GPUs, over PCIe or over NVLink, at the same batch
    per GPU as on one. DDP keeps fp32 parameters under autocast, so it all-reduces fp32 gradients,
    in {MILESTONE_BUCKET_BYTES / 2**20:.0f} MiB buckets; with overlap the buckets go out while the backward pass is still running.
    *Communication efficiency* is compute / (compute + exposed communication).
    """
    )
    return


@app.cell
def _():
    milestone_setup_dropdown = mo.ui.dropdown(options=list(MILESTONE_SETUPS), value=next(iter(MILESTONE_SETUPS)), label="Two GPUs joined by")
    return (milestone_setup_dropdown,)


@app.cell
def _():
    milestone_mb_slider = mo.ui.slider(steps=list(MILESTONE_MICROBATCHES), value=4, label="Sequences per GPU per step", show_value=True)
    return (milestone_mb_slider,)


@app.cell
def _():
    milestone_overlap_switch = mo.ui.switch(value=False, label="Bucketed overlap with the backward")
    return (milestone_overlap_switch,)


@app.cell
def _(
    milestone_mb_slider,
    milestone_overlap_switch,
    milestone_setup_dropdown,
    ring_committed,
):
    ui.gate(ring_committed)
    _e = milestone_estimates(milestone_setup_dropdown.value, milestone_mb_slider.value, milestone_overlap_switch.value)
    mo.vstack(
        [
            mo.hstack([milestone_setup_dropdown, milestone_mb_slider, milestone_overlap_switch], justify="start", wrap=True),
            ui.metric_cards(
                {
                    "compute": f"{_e['compute_s'] * 1e3:.1f} ms",
                    "all-reduce": f"{_e['comm_s'] * 1e3:.1f} ms",
                    "exposed": f"{_e['exposed_s'] * 1e3:.1f} ms",
                    "communication efficiency": f"{_e['efficiency']:.0%}",
                    "step time vs 1 GPU": f"{_e['overhead']:+.0%}",
                    "same data, 2 GPUs vs 1": f"{_e['speedup']:.2f}x",
                }
            ),
            mo.md(
                f"{_e['model']} ({_e['params'] / 1e6:.0f}M parameters), {_e['tokens_per_gpu']:,} tokens per GPU per step. "
                + ("**Two GPUs get through the data slower than one here.**" if _e["speedup"] < 1 else "")
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    _ranges = seed_ranges()
    _example = seed_example()
    _near = _example["nearest"]

    _table = [
        {
            "course notes' claim": f"{_r['setup'].split(' ')[0]}: {_r['range'][0]:.0%}-{_r['range'][1]:.0%} overhead",
            "reduction": "bucketed overlap" if _r["overlap"] else "after the backward",
            "engine, fewest to most tokens": f"{_r['overheads'][0][1]:.1%} at {_r['overheads'][0][0]:,} to {_r['overheads'][-1][1]:.1%} at {_r['overheads'][-1][0]:,}",
            "where the notes hold": f"{', '.join(f'{_t:,}' for _t in _r['inside'])} tokens per GPU" if _r["inside"] else "nowhere in this range",
        }
        for _r in _ranges
    ]
    _wins = []
    for _m in MILESTONE_SIZE_MODELS:
        _e = milestone_estimates(next(iter(MILESTONE_SETUPS)), MILESTONE_MICROBATCHES[0], False, _m)
        _row = {"model": f"{_e['model']} ({_e['params'] / 1e6:.0f}M parameters)"}
        for _s in MILESTONE_SETUPS:
            for _o in (False, True):
                _t = fewest_tokens_to_win(_s, _o, _m)
                _row[f"{_s.split(' ')[0]}, {'overlap' if _o else 'no overlap'}"] = f"{_t:,} tokens" if _t else "never in range"
        _wins.append(_row)
    mo.vstack(
        [
            mo.md(
                f"""
    ### The course notes' numbers, checked

    The course notes' example, {SEED_COMPUTE_MS:.0f} ms of compute and {SEED_COMM_MS:.0f} ms of communication, is
    {_example['efficiency']:.1%} efficient: the arithmetic holds. The engine's nearest setting is {_near['model']}
    over PCIe without overlap at {_near['tokens_per_gpu']:,} tokens per GPU: {_near['compute_s'] * 1e3:.1f} ms + {_near['exposed_s'] * 1e3:.1f} ms,
    {_near['efficiency']:.0%}. Its overheads hold only in a band of batch sizes:
    """
            ),
            ui.data_table(_table),
            mo.md(
                "**When are 2 GPUs slower than 1?** The course notes blame a model that is too small; the engine blames a batch per "
                "GPU that is too small. The fewest tokens per GPU at which two GPUs get through the same data "
                "faster (the slider's grid is one sequence). The gradient and the compute both grow with the parameters, so "
                "their ratio, and this threshold, are set by the tokens each GPU processes per step more than by the model's size:"
            ),
            ui.data_table(_wins),
        ]
    )
    return


@app.cell(hide_code=True)
def _(ring_committed):
    ui.gate(ring_committed)
    mo.md(
        f"""
    ## 8 · Four GPUs over PCIe, and compressing the gradients

    The course notes expect {PCIE_EFFICIENCY_CLAIM[0]:.0%}-{PCIE_EFFICIENCY_CLAIM[1]:.0%} scaling efficiency at {PCIE_CLAIM_GPUS} GPUs over PCIe. *Scaling
    efficiency* here is the step on one GPU over the step on {PCIE_CLAIM_GPUS}, each GPU keeping its own micro-batch (PyTorch
    DDP as in section 7: {TORCH_DDP['grad_reduce_dtype']} gradients in {TORCH_DDP['bucket_bytes'] / 2**20:.0f} MiB buckets): 100% when the all-reduce costs nothing. The same {PCIE_CLAIM_GPUS} GPUs over NVLink sit beside them.
    When the all-reduce is what is left, the notes suggest compressing the gradients: fewer bytes, for kernels
    that compress and rebuild them.
    """
    )
    return


@app.cell
def _():
    pcie_model_pick = mo.ui.dropdown(options={MODELS[_k].name: _k for _k in PCIE_MODELS}, value=MODELS[PCIE_MODELS[0]].name, label="Model")
    pcie_batch_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16], value=4, label=f"Micro-batch (sequences of {SEQ_LEN:,} tokens per GPU)", show_value=True, debounce=True)
    pcie_overlap_switch = mo.ui.switch(value=True, label="Bucketed overlap with the backward")
    powersgd_rank_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32], value=4, label="PowerSGD rank r", show_value=True, debounce=True)
    return pcie_batch_slider, pcie_model_pick, pcie_overlap_switch, powersgd_rank_slider


@app.cell
def _(pcie_batch_slider, pcie_model_pick, pcie_overlap_switch, powersgd_rank_slider, ring_committed):
    ui.gate(ring_committed)
    _rows = []
    for _key in PCIE_SERVERS:
        _s = scaling_efficiency(pcie_model_pick.value, _key, PCIE_CLAIM_GPUS, pcie_batch_slider.value, dp_overlap=pcie_overlap_switch.value)
        _rows.append({"server": f"{CLUSTERS[_key].gpu.name}, {CLUSTERS[_key].intra.name}", "step on 1 GPU": f"{_s['one_s'] * 1e3:.1f} ms",
                      f"step on {PCIE_CLAIM_GPUS}": f"{_s['many_s'] * 1e3:.1f} ms", "exposed all-reduce": f"{_s['dp_comm_s'] * 1e3:.1f} ms",
                      "scaling efficiency": f"{_s['efficiency']:.0%}",
                      "notes' band": "inside" if PCIE_EFFICIENCY_CLAIM[0] <= _s["efficiency"] <= PCIE_EFFICIENCY_CLAIM[1] else ("above" if _s["efficiency"] > PCIE_EFFICIENCY_CLAIM[1] else "below")})
    _model = Model.get(pcie_model_pick.value, seq_len=SEQ_LEN)
    _pcie = Cluster.get(PCIE_SERVERS[0], nodes=1, gpus_per_node=PCIE_CLAIM_GPUS)
    _comp = compression_rows(_model, _pcie, PCIE_CLAIM_GPUS, powersgd_rank_slider.value, TORCH_DDP["grad_reduce_dtype"])
    _best = max(_comp, key=lambda _r: _r["saved_s"])
    _fewest = min(_comp, key=lambda _r: _r["bytes"])
    mo.vstack(
        [
            mo.hstack([pcie_model_pick, pcie_batch_slider, pcie_overlap_switch], justify="start", wrap=True),
            ui.static_table(_rows),
            mo.md(f"**Compressing the gradients** on the {_pcie.gpu.name} server ({PCIE_CLAIM_GPUS} GPUs): bytes each GPU all-reduces per step, "
                  "the all-reduce's time, the compression kernels' time on each GPU, and what the two together save against the plain "
                  f"{TORCH_DDP['grad_reduce_dtype']} all-reduce (before any overlap)."),
            powersgd_rank_slider,
            ui.static_table(
                [{"scheme": _r["name"], "bytes all-reduced": f"{_r['bytes'] / 1e6:,.1f} MB", "fewer bytes": f"{_r['ratio']:,.0f}x",
                  "all-reduce": f"{_r['comm_s'] * 1e3:.2f} ms", "kernels": f"{_r['kernel_s'] * 1e3:.2f} ms",
                  "saved": f"{_r['saved_s'] * 1e3:+.2f} ms"} for _r in _comp]
            ),
            mo.md(f"Most time saved here: **{_best['name']}**; fewest bytes: **{_fewest['name']}**. PowerSGD pays three skinny GEMMs "
                  "through every weight matrix, bound by reading the matrix whatever r is; the 1-bit and 8-bit schemes pay elementwise "
                  "passes over every gradient. 1-bit and PowerSGD also change what the optimizer sees (biased, repaired by error feedback)."),
        ]
    )
    return


@app.cell(hide_code=True)
def _(bucket_committed, ring_committed):
    ui.gate(ring_committed)
    ui.gate(bucket_committed)
    ui.math_peek(
        "The equations behind the collectives",
        r"""
    Ring all-reduce of $M$ bytes over $N$ ranks, link bandwidth $B$, latency $\alpha$ per step:
    $T = 2(N-1)\,\alpha + 2\frac{N-1}{N}\frac{M}{B}$, in $2(N-1)$ steps of $\alpha + \frac{M}{NB}$ each.
    Reduce-scatter and all-gather: $(N-1)\,\alpha + \frac{N-1}{N}\frac{M}{B}$ each; all-reduce is their sum.

    NCCL's tree (all-reduce only; never reduce-scatter or all-gather): $2\left((g-1)\,\alpha_{\mathrm{NVLink}} + \lfloor\log_2 \mathrm{nodes}\rfloor\,\alpha_{\mathrm{net}}\right)$
    of latency with $g$ GPUs per node, and $\frac{2M}{0.92\,\mathrm{busbw}}$ of transfer (NCCL `tuning.cc`).
    Each $\alpha$ depends on the protocol NCCL picks for the message size (LL, LL128, Simple).
    Inside one NVLink domain the transfer term is stretched by NCCL's measured ramp,
    $1 + \frac{e}{1 + x / x_{1/2}}$, $x$ the bytes each rank's pipeline carries ($M/N$ for the ring and
    NVLS, $M$ for the tree), $e$ and $x_{1/2}$ fitted on nccl-tests curves of 8 A100s, 8 H100s and 4 GB200s
    (`collectives.ring_ramp`).

    A single parameter server with NIC bandwidth $B_s$: $2\alpha + \frac{N M}{B_s}$.

    nccl-tests: $\mathrm{algbw} = M / t$; all-reduce $\mathrm{busbw} = \mathrm{algbw}\cdot\frac{2(N-1)}{N}$;
    reduce-scatter, all-gather, all-to-all $\cdot\frac{N-1}{N}$; broadcast and reduce $\cdot 1$.

    Across nodes a group with $g$ of a node's $G$ GPUs crosses on $g/G$ of its NICs:
    $\mathrm{busbw} = \min\left(B_{\mathrm{NVLink}},\ \tfrac{g}{G}\,\mathrm{rails}\cdot B_{\mathrm{NIC}}\right)$.
    """,
    )
    return


@app.cell(hide_code=True)
def _(bucket_nodes, ring_committed):
    ui.gate(ring_committed)
    _whole, _one = rails_rows()[1], rails_rows()[2]
    mo.md(
        f"""
    ### Reflection

    A data-parallel ring over whole nodes runs at {_whole['busbw'] / 1e9:.0f} GB/s of bus bandwidth, one behind
    TP = {_one['stride']} at {_one['busbw'] / 1e9:.0f} GB/s. If you had to place a {bucket_cluster(bucket_nodes)[1]:,}-GPU job's tensor-parallel, pipeline and
    data-parallel groups, which would you let cross nodes first, and which message sizes would each send? Write two
    sentences in your notes, then check them against Lab 05's Act II.
    """
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    bucket_committed,
    identity,
    ring_committed,
    ring_inputs,
    submit_button,
    variant,
):
    ui.gate(ring_committed, held=(bucket_committed,))
    _pred = {"ring": ring_committed.answer, "bucket": bucket_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, STEP, ring_inputs(), _pred, ring_outcomes, "the ring stepper", variant)]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _(bucket_box, bucket_bytes, bucket_committed, bucket_nodes, ring_committed, variant):
    ui.gate(ring_committed)
    ui.gate(bucket_committed)
    _f = ring_facts()
    _bf = machine_bucket_facts(bucket_bytes, bucket_nodes, variant.settings["bucket_group"], variant.settings["bucket_machine"])
    _b, _n = _bf["times"], _bf["ranks"]
    _rails = rails_rows()
    _cliff = tp_cliff()
    _nvls = nvls_busbw_note()
    _pcie = milestone_estimates(next(iter(MILESTONE_SETUPS)), MILESTONE_MICROBATCHES[0], False)
    mo.md(
        f"""
    ## Key takeaways

    - A ring rank sends 2(N-1)/N of the message: {_f['small'] / 1e9:.2f} GB at N = {RING_N_SMALL}, {_f['large'] / 1e9:.3f} GB at
      N = {RING_N_LARGE:,} for {_f['message'] / 1e9:.0f} GB. A parameter server receives N times the message.
    - The size, the group and the machine pick the algorithm: your {bucket_bytes / 1e6:g} MB bucket over {_n:,} GPUs of {bucket_box} nodes takes
      {", ".join(f"{_t * 1e3:.2f} ms as {'NVLS' if _a == 'nvls' else 'a ' + _a}" for _a, _t in _b.items())}. A small message over many
      nodes is latency, and the tree's log N steps win; a large one inside a node is bandwidth, and the switch that adds wins
      where it can (H100's NVSwitch can; A100's cannot, and there a bucket of a few MB takes the ring and the tree about as long).
    - Compare busbw, not algbw: busbw = algbw x 2(N-1)/N is the wires' rate; NVLS shows {_nvls['busbw'] / 1e9:.0f} GB/s on 8 H100s
      because the switch adds.
    - Rails: a ring over whole DGX H100 nodes reaches {_rails[1]['busbw'] / 1e9:.0f} GB/s, one GPU per node {_rails[2]['busbw'] / 1e9:.0f} GB/s;
      TP = {_cliff[16]['plan'].tp} across two nodes exposes {_cliff[16]['tp_comm_s']:.2f} s a step where TP = {_cliff[8]['plan'].tp} exposes {_cliff[8]['tp_comm_s']:.2f} s.
    - Two GPUs pay off only with enough tokens per GPU: over PCIe, without overlap, the {_pcie['model']} model at
      {_pcie['tokens_per_gpu']:,} tokens per GPU gets through its data {_pcie['speedup']:.2f}x as fast as one GPU; it takes
      {fewest_tokens_to_win(_pcie['setup'], False, MILESTONE_SIZE_MODELS[-1]):,} tokens per GPU to beat one.

    **Back to:** Lab 05, Act I (the data-parallel wall) and Act II (why TP stays inside a node).
    """
    )
    return


@app.cell
def _(bucket_committed, ring_committed, ring_view, submitted):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "ring prediction": ring_committed.describe(),
            "bucket prediction": bucket_committed.describe(),
            "stepper": f"N = {ring_view['n']}, step {ring_view['step']}/{ring_view['steps']}, {ring_view['clock_s'] * 1e3:.3f} ms" if ui.gate(ring_committed, stop=False) else "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def nearest_index(values, target):
    """Index of the value nearest `target` in log space."""
    import numpy as np

    return int(np.argmin(abs(np.log(values) - np.log(target))))


@app.function
def holds_grid(view: dict) -> mo.Html:
    """Each rank's copy of each chunk, shaded by how many ranks' contributions it sums (the
    number; N is the full sum), the chunk each rank sends this step outlined. Plain HTML beside
    the ring, not a Plotly heatmap: a heatmap redrawn on every step cost this CPU more than the
    rest of the move. `data-holds` carries the numbers drawn (the browser test reads them)."""
    import json

    n, holds, sends = view["n"], view["holds"], view["sends"]
    blue = tuple(int(COLORS["blue"][i:i + 2], 16) for i in (1, 3, 5))
    cell = "padding:0;text-align:center;font-size:{}px;width:{}px;height:{}px".format(*((12, 30, 26) if n <= 8 else (9, 20, 18)))

    def td(r: int, c: int) -> str:
        share = holds[r][c] / n
        ring = f";outline:2px solid {COLORS['red']};outline-offset:-2px" if sends is not None and sends[r] == c else ""
        ink = "#fff" if share > 0.55 else COLORS["ink"]
        return (f'<td title="GPU {r}, chunk c{c}: {holds[r][c]} of {n}" style="{cell};color:{ink};'
                f'background:rgba({blue[0]},{blue[1]},{blue[2]},{share:.3f}){ring}">{holds[r][c]}</td>')

    head = "".join(f'<th style="{cell};font-weight:normal">c{c}</th>' for c in range(n))
    rows = "".join(f'<tr><th style="{cell};width:auto;padding-right:6px;font-weight:normal;text-align:right">GPU {r}</th>'
                   + "".join(td(r, c) for c in range(n)) + "</tr>" for r in range(n))
    return mo.Html(
        f'<div style="color:{COLORS["ink"]}"><table data-holds="{json.dumps(holds)}" style="border-collapse:separate;border-spacing:1px;'
        f'background:{COLORS["panel"]}"><thead><tr><th></th>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f'<div style="font-size:0.8rem;margin-top:4px">chunk (columns) per rank (rows): how many ranks\' parts its copy sums; '
        f'<span style="outline:2px solid {COLORS["red"]};outline-offset:1px">outlined</span>: sent this step</div></div>'
    )


@app.function
def lb_figure(curves: dict, measured: dict) -> go.Figure:
    """busbw against message size per algorithm (engine lines) with NCCL's measured points."""
    fig = go.Figure()
    for alg, c in curves.items():
        fig.add_scatter(x=list(c["sizes"]), y=[b / 1e9 for b in c["busbw"]], name=f"{alg} (engine)", mode="lines", line=dict(color=ALGORITHM_COLORS[alg], width=3))
    for alg, (points, _src) in measured["curves"].items():
        fig.add_scatter(x=list(points), y=[b / 1e9 for b in points.values()], name=f"{alg}, NCCL measured", mode="markers",
                        marker=dict(symbol="x", size=11, color=ALGORITHM_COLORS.get(alg, COLORS["ink"])))
    for p in measured["points"]:
        fig.add_scatter(x=[p["bytes"]], y=[p["busbw_gbs"]], name=f"{p['algorithm']}, NCCL measured ({p['id']})", mode="markers",
                        marker=dict(symbol="diamond", size=12, color=ALGORITHM_COLORS.get(p["algorithm"], COLORS["ink"]), line=dict(width=1, color=COLORS["ink"])))
    fig.update_layout(height=420, xaxis=dict(type="log", title="message size (bytes)", tickvals=[1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10], ticktext=["1 KB", "10 KB", "100 KB", "1 MB", "10 MB", "100 MB", "1 GB", "10 GB"]),
                      yaxis=dict(title="all-reduce busbw (GB/s)", rangemode="tozero"), legend=dict(orientation="h", y=-0.3), margin=dict(b=120))
    return apply_plotly_theme(fig)


if __name__ == "__main__":
    app.run()
