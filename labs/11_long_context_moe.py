import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 11: Long context and mixture of experts",
)

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import cp_svg, ui
    from labs.core.engine.perf import CP_ALGORITHMS
    from labs.core.scenarios.prose import STACK, ep_bytes_by_link, sp_regather
    from labs.core.scenarios.lab11 import (
        DEEPSEEK_A2A_SMS,
        DEEPSEEK_COMM_TO_COMPUTE,
        CAPACITY_CHOICES,
        CP_CHOICES,
        CP_LABELS,
        CP_LONG,
        EP_LAYOUTS,
        KV_HEAD_CHOICES,
        LAB,
        LLAMA3_128K,
        LLAMA3_VARIANTS,
        LONG_SEQ,
        MOE_NODE_LIMIT,
        PP,
        SEQ_CHOICES,
        SHORT_SEQ,
        STEP,
        TP,
        capacity_point,
        context_outcomes,
        cp_curves,
        deepseek_rows,
        dense_twin,
        ep_platform_rows,
        ep_rows,
        fit_estimates,
        fit_estimates_stack,
        imbalance_cost,
        imbalance_rows,
        llama3_estimate,
        llama3_own_stack_estimate,
        long_model,
        moe_estimate,
        moe_facts,
        moe_cluster,
        moe_model,
        order_rows,
        sp_rows,
        ulysses_kv_repeat,
        ulysses_limit,
    )


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 11 · Long context and mixture of experts

    Two axes that the 3D layout of Lab 05 does not have. **Context parallelism** cuts one long
    sequence over GPUs; **expert parallelism** spreads a mixture-of-experts layer's experts over
    them. Both pay in communication that a dense, short-context model never sends. Every number
    below comes from the engine in `labs/core`. About 40 minutes.

    **Before you start:** The Llama 3 Herd of Models (arXiv:2407.21783) Sec. 3.3.2 and Table 4;
    Liu et al. 2023, *Ring Attention*; Jacobs et al. 2023, *DeepSpeed-Ulysses*; the DeepSeek-V3
    technical report (arXiv:2412.19437) Sec. 2.1 and 3.2; Labs 05 (TP and SP) and 09 (rank order).
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


# Your sequence length and expert layout for the two predictions are drawn from your id
# (labs.variants), and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    fit_seq, fit_cp, fit_flash = variant.settings["seq_len"], variant.settings["cp"], variant.settings.get("flash", True)  # editions 1-4 drew no kernel
    return fit_cp, fit_flash, fit_seq, variant


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## A1 · Long context: the job
    """)
    return


@app.cell(hide_code=True)
def _(fit_cp, fit_flash, fit_seq):
    _model = long_model()
    _plain = fit_estimates_stack(fit_seq, fit_cp, fit_flash)["plain"]
    _kernel = ("Our attention is flash attention." if fit_flash else
               "Our stack's attention kernel is not flash attention: it stores each layer's s x s scores for the backward.")
    ui.stakeholder_message(
        "Head of long-context training",
        f"{_model.name} ({_model.params / 1e9:.0f}B parameters, {_model.layers} layers, {_model.kv_heads} KV heads) trained at "
        f"{SHORT_SEQ:,} tokens on TP {_plain.plan.tp} x PP {_plain.plan.pp}. The next job runs {fit_seq:,} tokens per sequence, "
        f"on the same {_plain.cluster.gpu.name}s ({_plain.cluster.gpu.hbm_bytes / 1e9:.1f} GB each). Sequence parallelism already shards "
        f"the activations TP leaves whole. {_kernel} Can we keep the layout and just feed these sequences?",
    )
    return


@app.cell
def _(variant):
    fit_question = ui.variant_question(variant.questions["fit"])
    fit_question
    return (fit_question,)


@app.cell
def _():
    fit_commit_buttons = ui.commit_buttons()
    return (fit_commit_buttons,)


@app.cell
def _(fit_commit_buttons, fit_question, held_now, identity, variant):
    _row, fit_committed = ui.commit_prediction(identity, LAB, "fit", fit_question, fit_commit_buttons, variant=variant, held=held_now())
    _row
    return (fit_committed,)


@app.cell(hide_code=True)
def _(fit_committed, variant):
    ui.gate(fit_committed, held_note=True)
    ui.variant_reveal(fit_committed, variant.questions["fit"])  # its lines from the spec (lab11.fit_explanations_at)
    return


@app.cell(hide_code=True)
def _(fit_committed):
    ui.gate(fit_committed)
    _no, _sp = sp_rows()
    _re = sp_regather(_sp["tp"])
    mo.md(
        f"""
    ## A2 · Sequence parallelism first

    TP splits the GEMMs but leaves the layer norms, dropout and residual stream whole on every TP
    rank. **Sequence parallelism** shards those along the sequence, and swaps each of TP's
    all-reduces for a reduce-scatter and an all-gather: the same bytes on the wire, as Korthikanti
    et al. count them. Megatron-Core and Transformer Engine, whose layers this engine prices, send a
    little more: they keep only the sequence shard of the QKV and FC1 inputs and all-gather each
    again in the backward for its weight gradient, beside the data-gradient GEMM (what outlasts that
    GEMM is exposed): {_re['megatron_calls']} collectives a layer instead of {_re['calls']}, {_re['ratio']:.2f}x the bytes.
    The table counts that re-gather. At {LONG_SEQ:,} tokens with CP {CP_LONG}, per GPU:

    | | TP collectives | calls / step | sent / GPU / step on {_sp['tp_link']} | exposed | activations | memory | fits |
    |---|---|---:|---:|---:|---:|---:|---|
    | TP 8 | {_no['tp_op']} | {_no['tp_calls']:,.0f} | {_no['tp_sent'] / 1e9:,.1f} GB | {_no['tp_exposed']:.2f} s | {_no['activations'] / 1e9:,.1f} GB | {_no['memory'] / 1e9:,.1f} GB | {'yes' if _no['fits'] else 'no'} |
    | TP 8 + SP | {_sp['tp_op']} | {_sp['tp_calls']:,.0f} | {_sp['tp_sent'] / 1e9:,.1f} GB | {_sp['tp_exposed']:.2f} s | {_sp['activations'] / 1e9:,.1f} GB | {_sp['memory'] / 1e9:,.1f} GB | {'yes' if _sp['fits'] else 'no'} |

    SP saves {(_no['activations'] - _sp['activations']) / 1e9:,.0f} GB for {_sp['tp_calls'] / _no['tp_calls']:.1f}x the calls and {_sp['tp_sent'] / _no['tp_sent']:.2f}x the bytes. It divides
    activations by the TP degree, which the NVLink domain caps; it cannot follow the sequence past that.
    """
    )
    return


@app.cell(hide_code=True)
def _(fit_committed):
    ui.gate(fit_committed)
    mo.md(r"""
    ## A3 · Context parallelism: ring against Ulysses

    CP gives each of $c$ ranks $s/c$ tokens of every sequence for the whole layer. Attention is
    the one place a token needs the others:

    - **Ring attention** passes K/V blocks around the CP group, $c-1$ hops, each hidden behind
      the attention on the block already there (Transformer Engine); Llama 3 instead
      **all-gathers** K and V before attention.
    - **DeepSpeed-Ulysses** runs two all-to-alls per attention: Q, K, V from
      ($s/c$ tokens, all heads) to ($s$ tokens, $1/c$ of the heads), and the output back. Each
      rank needs whole query heads, so the query heads left on a TP rank bound its degree. Under
      grouped-query attention a TP rank may hold fewer K/V heads than the degree: each K/V head is
      then repeated and sent to $c/n_{kv}$ ranks, which multiplies the K and V bytes of the all-to-all.

    Move the sequence length, the CP degree and the KV heads; the curves are the engine's step
    time for Llama 3 405B's layout (TP 8 x PP 16 x DP 8, 16 micro-batches) under each algorithm.
    """)
    return


# The instruments are created, and laid out, in one cell that reads nothing: moving one reruns
# only the cells that read its value, never the panel. The submit reads their setting through
# cp_inputs() when pressed, so a move does not re-run it too.
@app.cell
def _():
    seq_slider = mo.ui.slider(steps=list(SEQ_CHOICES), value=LONG_SEQ, label="Sequence length (tokens)", show_value=True, debounce=True)
    cp_slider = mo.ui.slider(steps=list(CP_CHOICES), value=CP_LONG, label="CP degree", show_value=True, debounce=True)
    kv_slider = mo.ui.slider(steps=list(KV_HEAD_CHOICES), value=KV_HEAD_CHOICES[0], label="KV heads (Llama 3 405B: 8)", show_value=True, debounce=True)
    algorithm_dropdown = mo.ui.dropdown(options={CP_LABELS[a]: a for a in CP_ALGORITHMS}, value=CP_LABELS["ring"], label="Your CP algorithm")
    cp_panel = mo.vstack([mo.md("### Instruments"), mo.hstack([seq_slider, cp_slider, kv_slider], justify="start", wrap=True), algorithm_dropdown])

    def cp_inputs() -> dict:
        return dict(seq_len=seq_slider.value, cp=cp_slider.value, kv_heads=kv_slider.value, algorithm=algorithm_dropdown.value)
    return algorithm_dropdown, cp_inputs, cp_panel, cp_slider, kv_slider, seq_slider


@app.cell
def _(cp_panel, fit_committed):
    ui.gate(fit_committed, what="the context-parallel instruments")
    cp_panel
    return


# The curves, their chart and the cards of your setting in one cell: a move of any of the four
# instruments re-runs this cell alone (a cell's run and output is a round of messages to the page).
@app.cell
def _(algorithm_dropdown, cp_slider, fit_committed, kv_slider, seq_slider):
    ui.gate(fit_committed)
    cp_curve_points = cp_curves(cp_slider.value, kv_slider.value)
    cp_figure_view = cp_figure(cp_curve_points, cp_slider.value, kv_slider.value)
    _point = next((p for p in cp_curve_points if p["seq_len"] == seq_slider.value and p["algorithm"] == algorithm_dropdown.value), None)
    _limit = ulysses_limit(kv_slider.value)
    _repeat = ulysses_kv_repeat(kv_slider.value, cp_slider.value)
    _note = mo.md(
        f"Over TP 8 each TP rank holds {_limit:g} query heads and {kv_slider.value / 8:g} KV head(s): Ulysses splits heads, so its CP degree must divide {_limit:g}. "
        + (f"At CP {cp_slider.value} each KV head is repeated to {_repeat:g} ranks, so the all-to-all carries {_repeat:g}x the K and V bytes." if _repeat > 1
           else f"At CP {cp_slider.value} the KV heads split evenly over the CP ranks: no repeats.")
    )
    if _point is None:
        _view = ui.failure_banner([f"cp={cp_slider.value} does not divide {seq_slider.value:,} tokens"])
    elif _point["error"]:
        _view = mo.vstack([ui.failure_banner([f"The engine refuses this setting: {_point['error']}"]), _note])
    else:
        _view = mo.vstack([
            ui.metric_cards({
                "step time": f"{_point['step']:.2f} s", "MFU": f"{_point['mfu']:.1%}", "memory, busiest GPU": f"{_point['memory'] / 1e9:.1f} GB",
                "fits": "yes" if _point["fits"] else "no", f"CP {_point['cp_op']}": f"{_point['cp_sent'] / 1e9:.2f} GB / GPU / step",
                "CP exposed": f"{_point['cp_exposed']:.2f} s",
            }),
            _note,
        ])
    mo.vstack([cp_figure_view, _view])
    return cp_curve_points, cp_figure_view


@app.cell(hide_code=True)
def _(fit_committed):
    ui.gate(fit_committed)
    _rows = imbalance_rows()
    _cost = imbalance_cost()
    _lines = ["| split | busiest rank's causal work / mean |", "|---|---:|"] + [f"| {r['label']} | {r['imbalance']:.3f} |" for r in _rows]
    mo.md(
        f"""
    ### The causal mask and load balance

    A causal token attends only to the tokens before it. Cut {LONG_SEQ:,} tokens into {CP_LONG} contiguous blocks and the rank
    holding the end of the sequence does almost twice the mean work while the first idles; every ring step waits for it.

    {chr(10).join(_lines)}

    Priced by the engine for the ring at CP {CP_LONG}: step **{_cost['ring_contiguous']['step']:.1f} s** with contiguous blocks
    (MFU {_cost['ring_contiguous']['mfu']:.1%}) against **{_cost['ring']['step']:.1f} s** with the zig-zag split
    (MFU {_cost['ring']['mfu']:.1%}). Zig-zag (rank $i$ holds chunks $i$ and $2c-1-i$ of $2c$) is what Transformer Engine and
    Llama 3 use; striped attention balances by taking every $c$-th token.
    """
    )
    return


@app.cell(hide_code=True)
def _(fit_committed):
    ui.gate(fit_committed)
    _rows = order_rows()
    _lines = ["| rank order (innermost first) | CP ranks apart | CP per node | CP link | CP exposed | TP link | TP exposed | DP group spans | DP exposed | MFU |", "|---|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    _lines += [f"| {r['order']} | {r['cp_stride']:g} | {r['cp_per_node']} | {r['cp_link']} | {r['cp_exposed']:.2f} s | {r['tp_link']} | {r['tp_exposed']:.2f} s | {r['dp_span']:,.0f} GPUs | {r['dp_exposed']:.2f} s | {r['mfu']:.1%} |" for r in _rows]
    _best = max(_rows, key=lambda r: r["mfu"])
    _wide = max(_rows, key=lambda r: r["dp_exposed"])
    mo.md(
        "### Where CP sits in the rank order\n\nLlama 3's 128K layout under each order the engine knows. CP's collectives run in every "
        "layer like TP's, but move only K and V (and hide behind attention in the ring), so it belongs just outside TP, "
        "ahead of DP and PP:\n\n"
        + "\n".join(_lines)
        + f"\n\nThe engine ranks **{_best['order']}** first. Putting CP innermost keeps its ring in the node but pushes TP onto the network. "
        f"Putting PP inside CP ({_wide['order']}) stretches each data-parallel group over {_wide['dp_span']:,.0f} GPUs, past a "
        f"{_wide['pod']:,}-GPU pod, where the 1:{_wide['oversubscription']:g} oversubscribed tier slows its gradient reduce-scatters to "
        f"{_wide['dp_exposed']:.1f} s a step.\n\n"
        "**Llama 3 chose otherwise.** Its order is [TP, CP, PP, DP] (arXiv:2407.21783 Sec. 3.3.2): DP outermost, spanning pods too, "
        "\"because it can tolerate longer network latency by asynchronously prefetching sharded model weights and reducing gradients\". "
        "The engine cannot lay that order out (it keeps CP next to DP, so the gradient group is one strided group), and its penalty "
        "for a DP group across pods comes from fp32 reduce-scatters it prices once per micro-batch and cannot hide behind the next "
        "micro-batch's work. Either Meta's schedule differs from that, or the engine's overlap model is too pessimistic here: "
        "read the ranking as the engine's, not as a verdict on Llama 3."
    )
    return


@app.cell(hide_code=True)
def _(fit_committed, variant):
    ui.gate(fit_committed)
    _r = LLAMA3_128K
    _lines = ["| variant | memory, busiest GPU | fits | bubble | CP exposed | model TFLOP/s per GPU | MFU |", "|---|---:|---|---:|---:|---:|---:|"]
    for _name, _kw in LLAMA3_VARIANTS.items():
        _e = llama3_estimate(**_kw)
        _c = next(c for c in _e.collectives if c.key == "cp")
        _lines.append(f"| {_name} | {_e.memory.total / 1e9:,.1f} GB | {'yes' if _e.fits else 'no'} | {_e.bubble_fraction:.1%} | {_c.exposed_s:.2f} s | {_e.model_tflops_per_gpu:,.0f} | {_e.mfu:.1%} |")
    _e = llama3_estimate()
    _v2 = llama3_estimate(**LLAMA3_VARIANTS["interleaved v = 2, all-gather CP"])
    _gather = next(c for c in _e.collectives if c.key == "cp")
    _held, _hbm = _v2.memory.total / 1e9, _v2.cluster.gpu.hbm_bytes / 1e9
    _own = llama3_own_stack_estimate("interleaved", 2)
    _own_memory = (f"Under Llama 3's own memory practice (each pipeline chunk's input freed after its forward, no allocator slack: "
                   f"Sec. 3.3.2) the same layout holds {_own.memory.total / 1e9:,.1f} GB and {'fits' if _own.fits else 'still does not fit'}.")
    _v2_memory = (f"But under {STACK} the busiest GPU then holds {_held:,.1f} GB, over its {_hbm:,.1f} GB. {_own_memory}"
                  if not _v2.fits else f"And the busiest GPU still fits: {_held:,.1f} GB of {_hbm:,.1f} GB.")
    _a4 = mo.md(
        f"""
    ## A4 · Llama 3's 128K stage

    The layout Llama 3 published (Table 4; its reported throughput is not in this project's reference file, so the
    page does not quote it):

    | GPUs | layout | sequence | sequences per DP rank |
    |---:|---|---:|---:|
    | {_r['gpus']:,} | TP {_r['tp']} x CP {_r['cp']} x PP {_r['pp']} x DP {_r['dp']} | {_r['seq_len']:,} tokens | {_r['batch_per_dp']} |

    The engine lays it out in Megatron's order ({_e.plan.rank_order}) on {_e.cluster.nodes:,} nodes, the first and last
    stages one layer lighter. Its MFU is for {STACK}; Meta ran its own stack.

    {chr(10).join(_lines)}

    What the engine finds:

    - CP {_r['cp']}'s all-gather exposes **{_gather.exposed_s:.2f} s** a step.
    - The 1F1B bubble, {_e.bubble_fraction:.0%} of the step at {_e.plan.microbatches} micro-batches, costs **{_e.time.bubble:.1f} s**
      of the engine's step ({_e.mfu:.0%} MFU under 1F1B).
    - Llama 3 ran the interleaved schedule (its depth at 128K is not published). At v = 2 the engine's bubble falls to
      {_v2.bubble_fraction:.0%} and its MFU rises to {_v2.mfu:.0%}.
    - {_v2_memory}
    """
    )
    mo.vstack([_a4, ui.published_beside(_e)])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## B1 · Experts: two all-to-alls per layer
    """)
    return


@app.cell
def _(variant):
    moe_question = ui.variant_question(variant.questions["moe"])
    moe_question
    return (moe_question,)


@app.cell
def _():
    moe_commit_buttons = ui.commit_buttons()
    return (moe_commit_buttons,)


@app.cell
def _(held_now, identity, moe_commit_buttons, moe_question, variant):
    _row, moe_committed = ui.commit_prediction(identity, LAB, "moe", moe_question, moe_commit_buttons, variant=variant, held=held_now())
    _row
    return (moe_committed,)


@app.cell(hide_code=True)
def _(moe_committed, variant):
    ui.gate(moe_committed, held_note=True)
    # Each option's line comes from the engine at the student's layout and batch (labs/core/scenarios/lab11.py).
    ui.variant_reveal(moe_committed, variant.questions["moe"])
    return


@app.cell(hide_code=True)
def _(moe_committed):
    ui.gate(moe_committed, what="the expert layouts")
    _rows = ep_rows()
    _split = [ep_bytes_by_link(moe_estimate(**_kw)) for _kw in EP_LAYOUTS.values()]
    _nic, _nvl = moe_cluster().inter.name, moe_cluster().intra.name

    def _by_link(r, sp):
        if sp["total"]:
            return sp["network"], sp["nvlink"]
        return (0.0, r["layer_sent"]) if r["layer_link"] == _nvl else (r["layer_sent"], 0.0)

    _lines = [f"| layout | per-layer collective | sent / GPU / step over {_nic} | over {_nvl} | exposed | all traffic / GPU / step, both links | step | MFU |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    _lines += [f"| {r['layout']} | {r['layer_op']} | {_by_link(r, sp)[0] / 1e9:,.0f} GB | {_by_link(r, sp)[1] / 1e9:,.0f} GB | {r['layer_exposed']:.2f} s | {r['total_sent'] / 1e9:,.0f} GB | {r['step']:.1f} s | {r['mfu']:.1%} |"
               for r, sp in zip(_rows, _split)]
    _in, _across, _limited = _rows[0], _rows[1], _rows[2]
    mo.md(
        f"""
    Each MoE layer sends every token's hidden state to the GPUs of its {moe_estimate().model.experts_per_token} experts (dispatch) and
    brings the outputs back (combine), in forward and again in backward. Inside a node that runs on NVLink; across nodes on
    the NICs, once per destination node. DeepSeek-V3, {moe_estimate().plan.gpus:,} H800s, PP 16, no TP:

    {chr(10).join(_lines)}

    Going from EP 8 inside a node to EP 64 across 8 nodes moves the all-to-all from NVLink to InfiniBand:
    {_in['layer_exposed']:.1f} s to {_across['layer_exposed']:.1f} s exposed. Node-limited routing (at most {MOE_NODE_LIMIT} nodes a token) brings
    it to {_limited['layer_exposed']:.1f} s. The dense twin under TP 8 pays its per-layer all-reduces (a reduce-scatter and an all-gather each under SP) instead, {_rows[3]['layer_exposed']:.1f} s on the H800's export-limited NVLink.
    """
    )
    return


@app.cell(hide_code=True)
def _(moe_committed):
    ui.gate(moe_committed, what="expert parallelism inside one NVLink domain")
    _rows = {_r["platform"]: _r for _r in ep_platform_rows()}
    _h800, _dgx, _rack = _rows["h800-ib"], _rows["dgx-b200"], _rows["gb200-nvl72"]
    _lines = ["| platform | EP 64's all-to-all runs on | exposed | compute | step | MFU | fits |", "|---|---|---:|---:|---:|---:|---|"]
    _lines += [f"| {_r['gpus']:,} {_r['gpu']}, {_r['label']} | {_r['ep_link']}" + (f", across {_r['ep_nodes']} nodes" if _r["ep_crosses"] else ", inside one domain")
               + f" | {_r['ep_exposed']:.1f} s | {_r['compute']:.1f} s | {_r['step']:.1f} s | {_r['mfu']:.1%} | {'yes' if _r['fits'] else 'no'} |"
               for _r in _rows.values()]
    _notes = "; ".join(f"{_r['gpu']}'s " + ", ".join(f"`{_f}`" for _f in _r["unconfirmed"]) for _r in _rows.values() if _r["unconfirmed"])
    mo.md(
        f"""
    ### EP 64 inside one NVL72 rack

    DeepSeek-V3 limited each token to {MOE_NODE_LIMIT} nodes and overlapped its all-to-alls with DualPipe because EP 64
    crosses 8 H800 nodes' NICs. A GB200 NVL72 rack holds the whole group in one NVLink domain. The same model and layout
    (PP {moe_estimate().plan.pp}, EP 64, no TP, node-limited routing) on {_h800['gpus']:,} GPUs of three catalog platforms:

    {chr(10).join(_lines)}

    A faster GPU alone does not fix it: on DGX B200 nodes the compute is {_h800['compute'] / _dgx['compute']:.1f}x shorter
    ({_h800['compute']:.1f} s to {_dgx['compute']:.1f} s) but the all-to-all still crosses {_dgx['ep_link']}, {_dgx['ep_exposed']:.1f} s
    exposed, and the MFU is {_dgx['mfu']:.0%} against the H800s' {_h800['mfu']:.0%}.
    In the rack it runs on NVLink 5: **{_rack['ep_exposed']:.1f} s** against **{_dgx['ep_exposed']:.1f} s**
    ({_dgx['ep_exposed'] / _rack['ep_exposed']:.1f}x less), and the step is {_rack['step']:.1f} s against {_dgx['step']:.1f} s. The racks
    here use 64 of their 72 GPUs (16 of 18 trays), so that each EP 64 group fills one rack. The all-to-all's time rests on
    NVLink 5's measured bus bandwidth; the compute rests in part on constants the catalog marks unconfirmed: {_notes}
    (`tests/test_unconfirmed.py` lists them).
    """
    )
    return


@app.cell
def _():
    capacity_slider = mo.ui.slider(steps=list(CAPACITY_CHOICES), value=CAPACITY_CHOICES[2], label="Capacity factor c", show_value=True, debounce=True)
    capacity_panel = mo.vstack([mo.md("### Capacity factor, dropping and imbalance"), capacity_slider])

    def capacity_input() -> float:  # read by the submit when pressed (see cp_inputs)
        return capacity_slider.value
    return capacity_input, capacity_panel, capacity_slider


@app.cell
def _(capacity_panel, moe_committed):
    ui.gate(moe_committed)
    capacity_panel
    return


@app.cell
def _(capacity_slider, moe_committed):
    ui.gate(moe_committed)
    _c = capacity_point(capacity_slider.value)
    mo.vstack([
        mo.md(
            f"Every expert is padded to c = {_c['capacity']:g} times its balanced load: the experts compute that much whatever the router does, "
            f"and tokens beyond it are dropped. Step **{_c['step']:.1f} s** against {_c['free_step']:.1f} s with no padding. "
            f"An expert here receives {_c['tokens_per_expert']:,.0f} tokens per micro-batch: a router balanced in expectation "
            f"(Poisson loads) drops {_c['dropped']:.3%} of them at this c; an expert that saw {_c['small_lambda']:,.0f} tokens per micro-batch would drop "
            f"{_c['dropped_small']:.2%}. A real router is skewed: without a cap the layer waits for its hottest expert, so c is also "
            "the imbalance the layer pays for. DeepSeek-V3 itself drops no tokens (Sec. 2.1.2): it balances the router with a bias "
            "instead of an auxiliary loss and has no capacity cap, so this slider shows the GShard and Switch Transformer alternative "
            "on its layout, not what DeepSeek ran."
        ),
    ])
    return


@app.cell(hide_code=True)
def _(moe_committed):
    ui.gate(moe_committed)
    _d = deepseek_rows()
    _p, _full, _tp, _r, _dp = _d["published"], _d["full"], _d["tp8"], _d["recipe"], _d["dualpipe"]
    _model_state = lambda e: e.memory.weights + e.memory.gradients + e.memory.optimizer  # noqa: E731
    _ep = next(c for c in _p.collectives if c.key == "ep")
    _tpc = next(c for c in _tp.collectives if c.key == "tp")
    mo.md(
        f"""
    ## B2 · DeepSeek-V3's layout

    PP {_p.plan.pp}, EP {_p.plan.ep} over {_ep.nodes} nodes, no TP, ZeRO-{_p.plan.zero_stage} over DP {_p.plan.dp}: {_p.plan.gpus:,} {_p.cluster.gpu.name}s,
    {_p.plan.global_batch:,} sequences of {_p.model.seq_len:,} tokens.

    | | step | EP all-to-all exposed | TP exposed | memory, busiest GPU | fits | MFU |
    |---|---:|---:|---:|---:|---|---:|
    | the published layout, BF16, no recomputation | {_p.step_time_s:.1f} s | {_p.time.ep_comm:.1f} s | — | {_p.memory.total / 1e9:,.1f} GB | {'yes' if _p.fits else 'no'} | {_p.mfu:.1%} |
    | with full recomputation | {_full.step_time_s:.1f} s | {_full.time.ep_comm:.1f} s | — | {_full.memory.total / 1e9:,.1f} GB | {'yes' if _full.fits else 'no'} | {_full.mfu:.1%} |
    | TP 8 x EP {_tp.plan.ep} instead | {_tp.step_time_s:.1f} s | {_tp.time.ep_comm:.1f} s | {_tpc.exposed_s:.1f} s | {_tp.memory.total / 1e9:,.1f} GB | {'yes' if _tp.fits else 'no'} | {_tp.mfu:.1%} |
    | DeepSeek's recipe: FP8, norms and MLA up-projections recomputed, BF16 Adam moments, 1F1B | {_r.step_time_s:.1f} s | {_r.time.ep_comm:.1f} s | — | {_r.memory.total / 1e9:,.1f} GB | {'yes' if _r.fits else 'no'} | {_r.mfu:.1%} |
    | the same with DualPipe, as it ran | {_dp.step_time_s:.1f} s | {_dp.time.ep_comm:.1f} s | — | {_dp.memory.total / 1e9:,.1f} GB | {'yes' if _dp.fits else 'no'} | {_dp.mfu:.1%} |

    (MFU of the last two rows against the FP8 peak.)

    **Why no TP:** the H800's NVLink is export-limited, and TP's per-layer collectives would take it
    ({_tpc.exposed_s:.1f} s a step) on top of the all-to-alls. Without TP each GPU keeps whole attention
    and whole experts. The first row keeps every activation in BF16; DeepSeek's recipe recomputes its norms and MLA
    up-projections, caches activations in FP8 and keeps AdamW's moments in BF16 (Sec. 3.2.3, 3.3.3), which brings the busiest GPU to {_r.memory.total / 1e9:,.1f} GB.

    **What DualPipe buys:** under 1F1B the engine exposes every all-to-all: {_r.time.ep_comm:.1f} s of a {_r.step_time_s:.1f} s
    step with DeepSeek's recipe ({_d['recipe_ep_share']:.0%}), against {_r.time.compute:.1f} s of compute. DeepSeek-V3 (Sec. 3.2.1)
    puts its cross-node expert parallelism near 1:1 communication to computation, which is why it built DualPipe. The engine
    disagrees: its ratio is {_r.time.ep_comm / _r.time.compute:.2f} against DeepSeek's ~{DEEPSEEK_COMM_TO_COMPUTE:g}. Likely causes: the engine's InfiniBand rate
    per GPU may be higher than what DeepSeek's all-to-all reached; DeepSeek ran its all-to-all on only
    {DEEPSEEK_A2A_SMS} SMs, which slows it; and the engine's FP8 GEMMs may run faster than DeepSeek's did. Read the engine's
    exposure as a lower bound on DeepSeek's problem. DualPipe: half the
    micro-batches enter at each end of the pipeline, and a forward of one direction runs beside a backward of the other, so
    that each one's dispatch and combine run under the other's compute. Of {_d['ep_wire']:.1f} s of all-to-all the engine hides
    {_d['dualpipe_hidden']:.0%}: what stays exposed is the passes the warm-up and cool-down run alone, and the SMs the
    communication takes from the compute beside it. The bubble falls from {_r.bubble_fraction:.1%} to {_dp.bubble_fraction:.1%},
    and the busiest GPU's compute from {_r.time.compute:.1f} s to {_dp.time.compute:.1f} s: under 1F1B the last stage runs the output
    layer and the loss for every micro-batch, under DualPipe each end runs them for the half that leaves there. The step falls
    from {_r.step_time_s:.1f} s to {_dp.step_time_s:.1f} s. The price is memory: every GPU holds two chunks of the model
    ({_model_state(_r) / 1e9:,.1f} GB of weights, gradients and optimizer state become {_model_state(_dp) / 1e9:,.1f} GB) and the
    activations of {_dp.plan.pp + 1} micro-batches, {_dp.memory.total / 1e9:,.1f} GB in all. And the two copies of each
    stage must add up their gradients once a step (DualPipe's example sums them after its step): {_d['mirror'].sent_bytes / 1e9:,.1f} GB
    per GPU with its mirror rank over {_d['mirror'].link}, which the engine runs bucket by bucket behind the data-parallel
    reduction, so {_d['mirror'].exposed_s:.3f} s of its {_d['mirror'].wire_s:.2f} s wait.
    """
    )
    return


@app.cell(hide_code=True)
def _(fit_committed, moe_committed):
    ui.gate(fit_committed)
    ui.gate(moe_committed)
    ui.math_peek(
        "The equations behind CP and EP",
        r"""
    Per layer and micro-batch of $b$ sequences, $s$ tokens over $c$ CP ranks and $t$ TP ranks, hidden
    $h$, K/V width $d_{kv}$ (KV heads x head width), 2-byte activations:

    - **Ring** (zig-zag): $c-1$ sends of a K/V block $2\cdot 2\,b\,\tfrac{s}{c}\,\tfrac{d_{kv}}{t}$ in forward, K/V and their
      gradients in backward: $3(c-1)$ blocks per layer; each hop hides behind $\tfrac1c$ of the attention.
    - **All-gather** (Llama 3): $\frac{c-1}{c}\cdot 2\cdot 2\,b\,s\,\tfrac{d_{kv}}{t}$ gathered in forward, reduce-scattered in backward.
    - **Ulysses**: two all-to-alls per pass, $\frac{c-1}{c}\cdot 2\,b\,\tfrac{s}{c}\,\tfrac{2h + 2r\,d_{kv}}{t}$ bytes, $r = \max(1, \tfrac{c\,t}{n_{kv}})$
      the times each K/V head is repeated; $c$ must divide the query heads per TP rank, $a/t$, and divide or be a multiple of $n_{kv}/t$.
    - **Causal work** per rank, contiguous split: rank $i$ does $i + \tfrac12$ blocks, the busiest $2 - \tfrac1c$ times the mean;
      zig-zag: $(i+\tfrac12) + (2c-1-i+\tfrac12) = 2c$ chunk-pairs on every rank.
    - **EP**: dispatch and combine of each token's $h$-vector to $k$ experts, per pass; across nodes once per destination node,
      $N\,(1-(1-1/N)^k)$ of $N$ nodes on average, capped by node-limited routing; capacity $C = c\,\tfrac{T k}{E}$ per expert.
    """,
    )
    return


@app.cell(hide_code=True)
def _(fit_committed, moe_committed):
    ui.gate(fit_committed)
    ui.gate(moe_committed)
    _r = cp_curves(CP_LONG, KV_HEAD_CHOICES[-1])
    _u = next(p for p in _r if p["algorithm"] == "ulysses" and p["seq_len"] == LONG_SEQ)
    _g = next(p for p in _r if p["algorithm"] == "ring" and p["seq_len"] == LONG_SEQ)
    _gqa = next(p for p in cp_curves(CP_LONG, long_model().kv_heads) if p["algorithm"] == "ulysses" and p["seq_len"] == LONG_SEQ)
    mo.md(
        f"""
    ### Reflection

    With {KV_HEAD_CHOICES[-1]} KV heads (multi-head attention) the engine prices Ulysses at CP {CP_LONG} and
    {LONG_SEQ:,} tokens at {_u['step']:.1f} s a step against the ring's {_g['step']:.1f} s; with {long_model().name}'s own
    {long_model().kv_heads} KV heads, each repeated {ulysses_kv_repeat(long_model().kv_heads, CP_LONG):g}x, at
    {_gqa['step']:.1f} s. Which would you pick for a model with grouped-query attention at a million tokens, and what
    would you combine with it (USP runs Ulysses on one axis and the ring on another)?
    """
    )
    return


@app.cell(hide_code=True)
def _(fit_committed, moe_committed):
    ui.gate(fit_committed)
    ui.gate(moe_committed)
    _e = fit_estimates()
    _plain = _e["TP 8 + SP"]
    _cp = _e[f"TP 8 + SP + CP {CP_LONG}"]
    _cost = imbalance_cost()
    _f = moe_facts()
    _d = deepseek_rows()
    mo.md(
        f"""
    ## Key takeaways

    - TP and SP divide activations by at most the TP degree ({TP}); at {LONG_SEQ:,} tokens the busiest GPU still needs {_plain.memory.total / 1e9:,.0f} GB.
      CP {CP_LONG} brings it to {_cp.memory.total / 1e9:,.1f} GB by splitting the sequence itself.
    - The ring hides its K/V hops behind attention; Ulysses' degree is capped by the query heads per TP rank
      ({ulysses_limit(long_model().kv_heads):g} for Llama 3 405B at TP 8), and past the KV heads each K/V head is repeated
      ({ulysses_kv_repeat(long_model().kv_heads, CP_LONG):g}x at CP {CP_LONG}), multiplying the K/V bytes of its all-to-all.
    - Balance the causal mask: contiguous blocks cost {_cost['ring_contiguous']['step'] / _cost['ring']['step'] - 1:.0%} more step time than zig-zag at CP {CP_LONG}.
    - An MoE's active size sets its FLOPs, not its traffic: at DeepSeek-V3's own layout and batch, {_f['moe'] / 1e9:,.0f} GB per GPU per step against a
      dense twin's {_f['dense'] / 1e9:,.0f} GB, nearly all of it dispatch and combine. The all-to-alls grow with the tokens a GPU routes, the expert
      gradients with the experts it holds: at a small batch and a small EP the gradients dominate instead.
    - DeepSeek-V3 drops TP and limits each token to {MOE_NODE_LIMIT} nodes; under 1F1B its all-to-alls are {_d['recipe_ep_share']:.0%} of the step.
      DualPipe hides {_d['dualpipe_hidden']:.0%} of them behind the other direction's compute, for twice the weights on every GPU.

    **Back to:** Lab 09, where the rank order decides which link each axis gets.
    """
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my long-context design to the ledger")
    return (submit_button,)


@app.cell
def _(
    capacity_input,
    cp_inputs,
    fit_committed,
    identity,
    moe_committed,
    submit_button,
    variant,
):
    ui.gate(fit_committed, held=(moe_committed,))
    _inputs = {**cp_inputs(), "capacity": capacity_input()}
    _pred = {"fit": fit_committed.answer, "moe": moe_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, STEP, _inputs, _pred, context_outcomes, "the context-parallel design", variant)]
    )
    _view
    return (submitted,)


@app.cell
def _(fit_committed, moe_committed, submitted):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "fit prediction": fit_committed.describe(),
            "MoE prediction": moe_committed.describe(),
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


@app.function
def cp_figure(points, cp: int, kv_heads: int) -> mo.Html:
    """Step time against sequence length for each CP algorithm (the engine's), the points where
    the busiest GPU overflows its HBM marked, as plain SVG (labs.core.cp_svg): a Plotly redraw of
    this chart was most of a CP or KV-heads move's time in the page."""
    return mo.Html(cp_svg.cp_chart(points, cp, kv_heads, CP_ALGORITHMS, CP_LABELS, SEQ_CHOICES))


if __name__ == "__main__":
    app.run()
