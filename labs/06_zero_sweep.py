import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 06: ZeRO sweep, where the 16 bytes per parameter go",
)

with app.setup:
    from dataclasses import replace
    from functools import lru_cache

    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import charts, svg_charts, ui, zero_svg
    from labs.core.filled_md import filled_md
    from labs.core.engine.perf import estimate
    from labs.core.engine.topology import group_cost
    from labs.core.engine.calibration import TABLE2_GPUS, TABLE2_SCHEMES, table2_estimate, table2_plan, table2_published
    from labs.core.engine.hardware import GB, GPUS, Cluster
    from labs.core.engine.memory import BYTES_CONVENTIONS, BYTES_PER_PARAM, OPTIMIZER_STATES, ZERO_STAGES
    from labs.core.engine.perf import CPU_ADAM_BYTES_PER_PARAM
    from labs.core.engine.models import MODELS, RECOMPUTE_MODES
    from labs.core.scenarios.lab06 import (
        FIT_MODEL,
        fit_activations,
        FIT_STAGE,
        zero_sweep_outcomes,
    )
    from labs.core.scenarios.lab05 import tp8_dp_times
    from labs.core.scenarios.prose import STACK, hsdp_rows, recompute_rows
    from labs.core.scenarios.lab06 import (
        DP_SIZES,
        GPU_CLUSTER,
        SWEEP_GPUS,
        SWEEP_MODELS,
        VENDOR_CLAIM_GB,
        VENDOR_CLAIM_GPUS,
        WALL_MODELS,
        Activations,
        dp_estimate,
        dp_memory,
        fewest_gpus,
        memory_curves,
        memory_wall,
        wall_hbm,
        seed_milestones,
        stage_costs,
        traffic_ratio,
    )

    from labs.core.engine.dp_scaling import FSDP_PENALTY_CLAIM, SEQ_LEN, STAGE_STACK, stage_rows
    from labs.core.engine.eras import FSDP2_S_PER_UNSHARD
    from labs.core.engine.hardware import CLUSTERS
    from labs.core.engine.offload import NVME, placement_rows

    LAB = "06_zero_sweep"
    MILESTONE_SERVERS = {f"{CLUSTERS[_k].gpu.name} server ({CLUSTERS[_k].intra.name})": _k for _k in ("dgx-h100", "pcie-a100")}
    OFFLOAD_MODELS = ("llama2-7b", "llama2-70b", "gpt3-175b")
    OFFLOAD_SERVER, OFFLOAD_NVME = "dgx-h100", "deepnvme-nc96ads-a100"
    MODEL_CHOICES = {MODELS[k].name: k for k in SWEEP_MODELS}
    GPU_CHOICES = {GPUS[k].name: k for k in SWEEP_GPUS}
    OPTIMIZER_CHOICES = {v.label: k for k, v in OPTIMIZER_STATES.items()}
    STAGE_CHOICES = {f"ZeRO-{s}": s for s in ZERO_STAGES}
    # Section 2's heading and offload note read no activation setting: an activation move shows them
    # unchanged, and converts their markdown (~0.7-0.9 ms each) only when their text is new.
    md_once = lru_cache(maxsize=64)(mo.md)


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(rf"""
    # Lab 06 · ZeRO sweep: where the {BYTES_PER_PARAM} bytes per parameter go

    Before any question of speed: will the model fit, and what does fitting cost? Mixed-precision
    Adam keeps {BYTES_PER_PARAM} bytes for every parameter, and data parallelism copies all of them onto every
    GPU. ZeRO shards those bytes across the data-parallel GPUs in three stages; this lab measures
    what each stage saves, what it does not save, and what it sends over the wires. About 30 minutes.

    **Before you start:** Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training
    Trillion Parameter Models*, Sections 1-5 and Table 1; Ren et al. 2021, *ZeRO-Offload*,
    Sections 3-4; Narayanan et al. 2021, Section 5.3 and Table 2; Korthikanti et al. 2022, Section 4
    (activation memory).
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


# Your GPU, sequence length, micro-batch, accumulation and ZeRO switch are drawn from your id
# (labs.variants), and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    fit_gpu, fit_act = variant.settings["gpu"], fit_activations(variant.settings)
    fit_n = fewest_gpus(FIT_MODEL, fit_gpu, FIT_STAGE, fit_act)
    return fit_act, fit_gpu, fit_n, variant


@app.cell(hide_code=True)
def _(fit_act, fit_gpu):
    _ddp = dp_memory(FIT_MODEL, VENDOR_CLAIM_GPUS, 0, fit_act)
    ui.stakeholder_message(
        "Fine-tuning lead",
        f"Our {MODELS[FIT_MODEL].name} job dies on one server of eight {GPUS[fit_gpu].name}s under plain data parallelism: it asks for "
        f"**{_ddp.total / GB:,.0f} GB** per GPU and each has {GPUS[fit_gpu].hbm_bytes / GB:.1f}. A vendor tells us to switch on "
        f"ZeRO-3 with activation checkpointing and it will run on the same {VENDOR_CLAIM_GPUS} GPUs at "
        f"{VENDOR_CLAIM_GB[0]}-{VENDOR_CLAIM_GB[1]} GB each. How many {GPUS[fit_gpu].name}s do we really need, and what will the sharding "
        "cost us on the network?",
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


@app.cell
def _(variant):
    zero2_question = ui.variant_question(variant.questions["zero2"])
    zero2_question
    return (zero2_question,)


@app.cell
def _():
    zero2_commit_buttons = ui.commit_buttons()
    return (zero2_commit_buttons,)


@app.cell
def _(held_now, identity, variant, zero2_commit_buttons, zero2_question):
    _row, zero2_committed = ui.commit_prediction(identity, LAB, "zero2", zero2_question, zero2_commit_buttons, variant=variant, held=held_now())
    _row
    return (zero2_committed,)


# The instruments are created, and laid out, in one cell that reads nothing: moving one of them
# then reruns only the cells that read its value, and the panel itself is never redrawn.
@app.cell
def _(fit_act, fit_gpu):
    model_pick = mo.ui.dropdown(options=MODEL_CHOICES, value=MODELS[FIT_MODEL].name, label="Model")
    gpu_pick = mo.ui.dropdown(options=GPU_CHOICES, value=GPUS[fit_gpu].name, label="GPU")
    optimizer_pick = mo.ui.dropdown(options=OPTIMIZER_CHOICES, value=OPTIMIZER_STATES["fp32"].label, label="Optimizer state")
    micro_batch_slider = mo.ui.slider(steps=[1, 2, 4, 8], value=fit_act.micro_batch, label="Micro-batch (sequences)", show_value=True)
    seq_slider = mo.ui.slider(steps=[1024, 2048, 4096, 8192, 16384, 32768], value=fit_act.seq_len, label="Sequence length", show_value=True)
    recompute_pick = mo.ui.dropdown(options=list(RECOMPUTE_MODES), value=fit_act.recompute, label="Activation recompute")
    flash_box = mo.ui.checkbox(value=fit_act.flash_attention, label="Flash attention (no s x s scores kept)")
    offload_box = mo.ui.checkbox(value=False, label="Offload optimizer state to CPU (ZeRO-Offload)")
    dp_slider = mo.ui.slider(steps=list(DP_SIZES), value=8, label="Data-parallel GPUs", show_value=True)
    stage_pick = mo.ui.radio(options=STAGE_CHOICES, value=f"ZeRO-{FIT_STAGE}", label="ZeRO stage", inline=True)
    accumulation_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16], value=1, label="Micro-batches per step (gradient accumulation)", show_value=True)
    instruments = mo.vstack(
        [
            mo.md("### Instruments"),
            mo.hstack([model_pick, gpu_pick, optimizer_pick], justify="start", wrap=True),
            mo.hstack([micro_batch_slider, seq_slider, recompute_pick, flash_box], justify="start", wrap=True),
            mo.hstack([dp_slider, stage_pick, offload_box], justify="start", wrap=True),
            mo.hstack([accumulation_slider], justify="start"),
        ]
    )

    def sweep_settings() -> dict:
        """The instruments' values as the ledger records them, read when called: the submit reads
        them when pressed, so a move does not re-run it."""
        return {
            "model": model_pick.value, "gpu": gpu_pick.value, "optimizer_state": optimizer_pick.value,
            "micro_batch": micro_batch_slider.value, "seq_len": seq_slider.value, "recompute": recompute_pick.value,
            "flash_attention": flash_box.value, "offload": offload_box.value, "dp": dp_slider.value,
            "zero_stage": stage_pick.value, "microbatches": accumulation_slider.value,
        }
    return (
        accumulation_slider,
        dp_slider,
        flash_box,
        gpu_pick,
        instruments,
        micro_batch_slider,
        model_pick,
        offload_box,
        optimizer_pick,
        recompute_pick,
        seq_slider,
        stage_pick,
        sweep_settings,
    )


@app.cell
def _(fit_committed, instruments):
    ui.gate(fit_committed, what="the memory instruments")
    instruments
    return


# Each slider re-runs only the cells that read it: the DP slider section 2's cell (its estimate,
# chart, bar and offload table) and the HUD. The curves and the fewest-GPU search are computed
# where they are drawn, in section 2's cell (cached per exact inputs, so a DP move finds them), and
# the myths read the same cached curves: an activation move re-runs five cells (a cell of their own
# made it six, and a stage move four instead of two). Each cell that re-runs costs the browser a
# redraw of its output, so all the DP slider changes on the page is shown by that one cell.
@app.cell(hide_code=True)
def _(fit_committed, flash_box, micro_batch_slider, recompute_pick, seq_slider, variant):
    ui.gate(fit_committed)
    act = Activations(micro_batch_slider.value, seq_slider.value, recompute_pick.value, flash_box.value)
    _wall = memory_wall(act)
    _hbm = wall_hbm(variant.settings["gpu"])  # the stakeholder's GPU gets its line too
    _named = {MODELS[k].name: m for k, m in _wall.items()}
    _small = _wall[WALL_MODELS[0]]
    mo.vstack(
        [
            mo.md(
                f"""
    ## 1 · The memory wall

    What one GPU holds under plain data parallelism, at your activation settings (micro-batch {act.micro_batch},
    {act.seq_len} tokens, recompute *{act.recompute}*). The number of GPUs does not appear: every GPU holds all of it.
    Even the smallest model here needs **{_small.total / GB:,.0f} GB**, of which {_small.optimizer / GB:,.0f} GB is
    optimizer state that each GPU only ever uses for its own update.
    """
            ),
            mo.Html(svg_charts.memory_wall(_named, _hbm)),  # plain SVG: a Plotly redraw cost the page more than the floor's move
        ]
    )
    return (act,)


@app.cell(hide_code=True)
def _(fit_committed, model_pick):
    ui.gate(fit_committed)
    _params = MODELS[model_pick.value].params
    _rows = [
        {"convention": name, "bytes / parameter": f"{c.bytes_per_param:g}", "what": c.parts,
         f"{MODELS[model_pick.value].name}, one copy": f"{c.bytes_per_param * _params / GB:,.0f} GB", "source": c.source}
        for name, c in BYTES_CONVENTIONS.items()
    ]
    mo.vstack(
        [
            mo.md(
                f"""
    ### Which bytes per parameter?

    Papers and frameworks count differently, so their "bytes per parameter" differ. This lab uses
    ZeRO's {BYTES_PER_PARAM}; Megatron's bf16 default keeps fp32 main gradients (18), and with its
    distributed optimizer shards only the 12 bytes of Adam state (6 + 12/d).
    """
            ),
            ui.static_table(_rows),  # redrawn with the model menu: a plain table, not mo.ui.table's grid
        ]
    )
    return


@app.cell(hide_code=True)
def _(
    accumulation_slider,
    act,
    dp_slider,
    gpu_pick,
    model_pick,
    offload_box,
    optimizer_pick,
    stage_pick,
    sweep_settings,
):
    sweep_inputs = sweep_settings()  # the activation instruments reach this cell through act
    sweep_curves = memory_curves(model_pick.value, act, optimizer_pick.value, offload_box.value)
    sweep_offload = offload_box.value and stage_pick.value > 0
    sweep_fewest = fewest_gpus(model_pick.value, gpu_pick.value, stage_pick.value, act, optimizer_pick.value, sweep_offload)
    sweep_estimate = dp_estimate(model_pick.value, gpu_pick.value, dp_slider.value, stage_pick.value, act, optimizer_pick.value, sweep_offload, accumulation_slider.value)
    _stage = max(1, stage_pick.value)
    _args = (model_pick.value, gpu_pick.value, dp_slider.value, _stage, act, optimizer_pick.value)
    _on_gpu = dp_estimate(*_args, False, accumulation_slider.value)
    _off = dp_estimate(*_args, True, accumulation_slider.value)
    _o = _off.offload
    _host = _off.cluster.host
    _table = ui.static_table(
        [
            {"": "per-GPU memory", "on the GPU": f"{_on_gpu.memory.total / GB:,.1f} GB", "offloaded": f"{_off.memory.total / GB:,.1f} GB"},
            {"": "fits", "on the GPU": "yes" if _on_gpu.fits else "no", "offloaded": "yes" if _off.fits else "no"},
            {"": "CPU memory per server", "on the GPU": "—", "offloaded": f"{_o.host_bytes_per_node / GB:,.0f} of {_host.memory_bytes / GB:,.0f} GB"},
            {"": "PCIe bytes per GPU per step", "on the GPU": "—", "offloaded": f"{_o.pcie_bytes / GB:,.1f} GB"},
            {"": "gradients down / CPU Adam / weights up", "on the GPU": "—", "offloaded": f"{_o.down_s:.2f} / {_o.cpu_adam_s:.2f} / {_o.up_s:.2f} s"},
            {"": "optimizer step on the GPU", "on the GPU": f"{_on_gpu.time.optimizer:.3f} s", "offloaded": "—"},
            {"": "step time", "on the GPU": f"{_on_gpu.step_time_s:.2f} s", "offloaded": f"{_off.step_time_s:.2f} s"},
            {"": "MFU", "on the GPU": f"{_on_gpu.mfu:.1%}", "offloaded": f"{_off.mfu:.1%}"},
        ]
    )
    _gpu = GPUS[gpu_pick.value]
    _mem = sweep_estimate.memory
    _fewest = f"{sweep_fewest:,}" if sweep_fewest else "none"
    _why = [] if sweep_estimate.fits else [
        f"Out of memory: {_mem.total / GB:,.1f} GB per GPU > {_gpu.hbm_bytes / GB:.1f} GB on {_gpu.name}. "
        f"Model state {_mem.model_state / GB:,.1f} GB, activations {_mem.activations / GB:,.1f} GB."
        + ("" if sweep_fewest else f" Activations and unsharded state alone exceed the HBM: no DP size fits {MODELS[model_pick.value].name} at ZeRO-{sweep_inputs['zero_stage']}.")
    ]
    mo.vstack(
        [
            md_once(
                f"""
    ## 2 · The sweep: per-GPU memory against data-parallel size

    {MODELS[model_pick.value].name} on {_gpu.name}, optimizer state *{OPTIMIZER_STATES[sweep_inputs['optimizer_state']].label}*
    {"with the optimizer offloaded to the CPU" if sweep_offload else ""}. Each line is model state plus the activations of one
    micro-batch through all {MODELS[model_pick.value].layers} layers; the dotted line is those activations alone.
    """
            ),
            mo.Html(svg_charts.zero_sweep(DP_SIZES, sweep_curves, [(_gpu.name, _gpu.hbm_bytes, _gpu.confirmed)], (sweep_inputs["dp"], _mem.total))),
            ui.metric_cards(
                {
                    "per-GPU memory": f"{_mem.total / GB:,.1f} GB",
                    "fits": "yes" if sweep_estimate.fits else "no",
                    "model state": f"{_mem.model_state / GB:,.1f} GB",
                    "activations": f"{_mem.activations / GB:,.1f} GB",
                    f"fewest {_gpu.name.split(' ')[0]}s at ZeRO-{sweep_inputs['zero_stage']}": _fewest,
                }
            ),
            ui.failure_banner(_why) or mo.md(""),
            ui.memory_bar(sweep_estimate),
            md_once(
                f"""
    ### Offload: the optimizer state in CPU memory

    ZeRO-{_stage} on {dp_slider.value} GPUs{"" if stage_pick.value else " (offload needs a sharded optimizer, so ZeRO-1 stands in for ZeRO-0)"}.
    The CPU ({_host.name}) runs Adam on each GPU's shard, streaming its DRAM, and {_off.cluster.host_link.name} carries
    the gradients down and the new weights up. The copies are cheap next to the CPU's pass over the optimizer state,
    which is why offload pays only when a step is long: more micro-batches per step (the accumulation slider in the
    instruments) amortise it.
    """
                + (f"\n{_gpu.name}'s step times rest in part on constants the catalog marks unconfirmed: "
                   + ", ".join(f"`{_note.split(':')[0]}`" for _note in _gpu.unconfirmed) + " (`tests/test_unconfirmed.py` lists them)."
                   if _gpu.unconfirmed else "")
            ),
            _table,
            ui.published_beside(_on_gpu),
            ui.failure_banner(_off.warnings) or mo.md(""),
        ]
    )
    return sweep_estimate, sweep_inputs


@app.cell(hide_code=True)
def _(fit_act, fit_committed, fit_n, variant):
    ui.gate(fit_committed, held_note=True)
    _n = fit_n
    _at = {n: dp_memory(FIT_MODEL, n, FIT_STAGE, fit_act).total / GB for n in (8, _n - 1, _n)}
    _selective = Activations(fit_act.micro_batch, fit_act.seq_len, "selective", fit_act.flash_attention)
    _selective_act = dp_memory(FIT_MODEL, 1024, FIT_STAGE, _selective).activations / GB
    mo.vstack([
        ui.variant_reveal(fit_committed, variant.questions["fit"]),
        mo.md(f"On {VENDOR_CLAIM_GPUS} GPUs each needs {_at[8]:,.0f} GB: the sharded model state alone is {BYTES_PER_PARAM} bytes x "
              f"{MODELS[FIT_MODEL].params / 1e9:.0f}B / {VENDOR_CLAIM_GPUS}. Without full checkpointing (selective recompute) activations alone are "
              f"{_selective_act:.0f} GB per GPU at any DP size."),
    ])
    return


@app.cell(hide_code=True)
def _(fit_act, fit_committed, fit_gpu, fit_n):
    ui.gate(fit_committed)
    _n = -(-fit_n // Cluster.get(GPU_CLUSTER[fit_gpu]).gpus_per_node) * Cluster.get(GPU_CLUSTER[fit_gpu]).gpus_per_node  # whole servers
    _rows = recompute_rows(FIT_MODEL, fit_gpu, _n, FIT_STAGE, fit_act)
    _by = {r["recompute"]: r for r in _rows}
    _full, _sel = _by["full"], _by["selective"]
    mo.vstack(
        [
            mo.md(
                f"""
    ### What full checkpointing costs

    {MODELS[FIT_MODEL].name} on {_n} GPUs (the fewest whole servers that fit) at ZeRO-{FIT_STAGE}, micro-batch {fit_act.micro_batch}, {fit_act.seq_len:,} tokens,
    under each recompute setting. *MFU* counts the model's FLOPs; *HFU* also counts the forward passes run again,
    so the gap between them is the recomputation. Full recompute re-runs each layer's forward in the backward:
    HFU {_full['hfu']:.1%} against MFU {_full['mfu']:.1%}. Selective recompute (Korthikanti et al. 2022) re-runs only the
    attention core, which flash attention never stores anyway, so here it costs nothing and saves nothing over none.
    MFU is the engine's for {STACK}.
    """
            ),
            ui.static_table([
                {"recompute": r["recompute"], "activations": f"{r['activations'] / GB:,.1f} GB", "per-GPU memory": f"{r['memory'] / GB:,.1f} GB",
                 "fits": "yes" if r["fits"] else "no", "step": f"{r['step']:.2f} s", "MFU": f"{r['mfu']:.1%}", "HFU": f"{r['hfu']:.1%}"}
                for r in _rows
            ]),
            mo.md(f"Fitting costs {(_full['step'] / _sel['step'] - 1):.0%} more time per step than a selective step would take, if it fitted."),
        ]
    )
    return


@app.cell(hide_code=True)
def _(fit_act, fit_committed, fit_gpu, fit_n):
    ui.gate(fit_committed)
    _n = fit_n
    _node = Cluster.get(GPU_CLUSTER[fit_gpu]).gpus_per_node
    _group = -(-_n // _node) * _node  # whole servers, at least the fewest that fit
    _dp = 8 * _group
    _rows = hsdp_rows(FIT_MODEL, fit_gpu, _dp, _group, fit_act)
    _lines = ["| layout | per-GPU memory | fits | collective | sent / GPU / step | link | exposed | step | MFU |", "|---|---:|---|---|---:|---|---:|---:|---:|"]
    for _r in _rows:
        for _i, (_op, _sent, _link, _exp) in enumerate(_r["collectives"]):
            _head = (f"| {_r['layout']} | {_r['memory'] / GB:,.1f} GB | {'yes' if _r['fits'] else 'no'} " if _i == 0 else "| | | ")
            _tail = (f"| {_r['step']:.2f} s | {_r['mfu']:.1%} |" if _i == 0 else "| | |")
            _lines.append(f"{_head}| {_op} | {_sent / GB:,.1f} GB | {_link} | {_exp:.2g} s {_tail}")
    mo.md(
        f"""
    ### Hybrid sharding (HSDP): shard inside a group, replicate across groups

    ZeRO-3 over all {_dp} GPUs gathers every layer's weights from {_dp} ranks on {_dp // _node} servers. Hybrid sharding
    (PyTorch FSDP's `HYBRID_SHARD`, DeepSpeed's MiCS; the engine's `Plan.shard_group_size`) shards over a group of {_group} GPUs, the fewest whole servers
    that fit {MODELS[FIT_MODEL].name}, and keeps {_dp // _group} replicas of that group: the gathers span {_group} GPUs, and
    the gradients are reduce-scattered in the group and all-reduced across replicas. The price is memory: each GPU holds
    {_rows[1]['model_state'] / GB:,.1f} GB of model state against {_rows[0]['model_state'] / GB:,.1f} GB under full sharding. Replicas also make silent-corruption checks possible (Lab 10): a hash of a
    shard must agree across the replicas that hold it.

    {chr(10).join(_lines)}
    """
    )
    return


@app.cell(hide_code=True)
def _(accumulation_slider, act, gpu_pick, model_pick, zero2_committed):
    ui.gate(zero2_committed, what="the communication instruments")
    _m = accumulation_slider.value

    def _fits_somewhere(key):
        return any(e.fits for e in stage_costs(key, gpu_pick.value, 8, act, _m, "packed").values())

    # A table where nothing fits prices nothing: fall back to the largest model here that fits on 8 GPUs.
    _key = model_pick.value
    if not _fits_somewhere(_key):
        _key = next((k for k in reversed(SWEEP_MODELS) if MODELS[k].params < MODELS[_key].params and _fits_somewhere(k)), _key)
    _swap = "" if _key == model_pick.value else (
        f"{MODELS[model_pick.value].name} does not fit on 8 GPUs under any ZeRO stage at these settings (section 2 finds how many it needs), "
        f"so this section prices {MODELS[_key].name}, the largest model here that fits. "
    )
    costs = {
        "one server (NVLink)": stage_costs(_key, gpu_pick.value, 8, act, _m, "packed"),
        "8 servers (NICs)": stage_costs(_key, gpu_pick.value, 8, act, _m, "spread"),
    }
    _rows = []
    for _placement, _ests in costs.items():
        _base = _ests[0].comm_bytes_per_gpu["dp"]
        for _stage, _e in _ests.items():
            _rows.append(
                {
                    "placement": _placement,
                    "stage": f"ZeRO-{_stage}",
                    "GB sent per GPU per step": f"{_e.comm_bytes_per_gpu['dp'] / GB:,.1f}",
                    "x plain DP": f"{_e.comm_bytes_per_gpu['dp'] / _base:.2f}",
                    "exposed comm (s)": f"{_e.time.dp_comm:.2f}",
                    "step (s)": f"{_e.step_time_s:.2f}",
                    "MFU": f"{_e.mfu:.1%}",
                    "fits": "yes" if _e.fits else f"no ({_e.memory.total / GB:,.0f} GB)",
                }
            )
    mo.vstack(
        [
            mo.md(
                f"""
    ## 3 · What fitting costs

    {_swap}The same {MODELS[_key].name} step on 8 {GPUS[gpu_pick.value].name} GPUs, {_m} micro-batch(es) of
    {act.micro_batch} per GPU per step, under each stage: once inside one server on NVLink, once spread over 8
    servers so every byte crosses a NIC. Move the accumulation slider and watch ZeRO-2 and ZeRO-3's bytes.

    **Gradient accumulation.** Each GPU runs m = {_m} micro-batches of b = {act.micro_batch} before the optimizer
    step, so the batch the optimizer sees is b x m x DP = {act.micro_batch} x {_m} x 8 = **{act.micro_batch * _m * 8} sequences**
    ({act.micro_batch * _m * 8 * act.seq_len:,} tokens): m buys a larger batch without more memory, since only one
    micro-batch's activations are alive at a time. Plain DP and ZeRO-1 need to reduce only once per step: PyTorch DDP
    skips the all-reduce of the first m - 1 backward passes under `no_sync()`, and Megatron accumulates into its fp32
    gradient buffer and overlaps only the last micro-batch's reduction with its backward. Under pipeline parallelism the
    same m is the number of micro-batches each pipeline runs per step, the m of the bubble (p-1)/(m+p-1) in Lab 07:
    at a fixed global batch, more data-parallel replicas leave each pipeline fewer.
    """
            ),
            mo.Html(zero_svg.stage_step_chart(costs)),  # plain SVG: every activation move redraws it once both predictions are in
            ui.static_table(_rows),  # redrawn with the model menu and the accumulation slider
        ]
    )
    return (costs,)


@app.cell(hide_code=True)
def _(variant, zero2_committed):
    ui.gate(zero2_committed, held_note=True)
    ui.variant_reveal(zero2_committed, variant.questions["zero2"])
    return


@app.cell(hide_code=True)
def _(zero2_committed):
    ui.gate(zero2_committed)
    mo.md(
        r"""
    **Whose choice is the per-micro-batch reduce-scatter?** DeepSpeed's stage 2 reduce-scatters
    each micro-batch's gradients from its backward hooks, because a rank keeps only its shard.
    PyTorch FSDP's `SHARD_GRAD_OP` (gradients and optimizer sharded, weights kept gathered from a
    micro-batch's forward to its backward and gathered again for the next) does the same unless the accumulation steps run under `no_sync()`, which holds full gradients
    until the last one. Megatron's distributed optimizer keeps a full fp32 gradient buffer,
    accumulates into it and reduce-scatters once per step: ZeRO-1's traffic, at the price of the
    unsharded gradients in memory.
    """
    )
    return


@app.cell(hide_code=True)
def _(zero2_committed):
    ui.gate(zero2_committed)
    _engine = {(s, n): table2_estimate(s, n).hardware_tflops_per_gpu for s in TABLE2_SCHEMES for n in TABLE2_GPUS}
    _paper = table2_published()  # the reference file's rows: 384 GPUs only
    _series = {s: ([_paper.get((s, n)) for n in TABLE2_GPUS], [_engine[(s, n)] for n in TABLE2_GPUS]) for s in TABLE2_SCHEMES}
    _lo, _hi = TABLE2_GPUS[0], TABLE2_GPUS[-1]
    _z = "ZeRO-3"
    _ptdp = table2_plan("PTD-P", _hi)
    _run = table2_estimate(_z, _hi)
    _mid = TABLE2_GPUS[-2]
    # A fixed batch is a fixed number of FLOPs a step: step time goes as 1 / (GPUs x TFLOP/s per GPU).
    _speedup = (_hi * _engine[(_z, _hi)]) / (_mid * _engine[(_z, _mid)])
    _gather = next(c for c in _run.collectives if c.key == "dp_gather")
    _gather_mb = _gather.sent_bytes / _gather.calls / ((_hi - 1) / _hi) / 1e6  # one gather's message
    _gather_lat = group_cost("all_gather", _gather_mb * 1e6, _run.cluster, _hi, 1, "ring").latency_s
    _tree = estimate(_run.model, _run.cluster, replace(_run.plan, dp_algorithm="tree"))
    _ring_lat = sum(
        _c.calls * group_cost("all_gather" if _c.key == "dp_gather" else "reduce_scatter", _c.sent_bytes / _c.calls / ((_hi - 1) / _hi), _run.cluster, _hi, 1, "ring").latency_s
        for _c in _run.collectives if _c.key in ("dp_gather", "dp_reduce")
    )
    mo.vstack(
        [
            mo.md(
                f"""
    ### At scale: Narayanan et al.'s ZeRO-3 row, and what collapses it

    Narayanan et al. 2021 Table 2 trained {_run.model.name} with a fixed batch of {_ptdp.global_batch} sequences on A100s joined by
    {_run.cluster.inter.name}. At {_lo} GPUs ZeRO-3 ran at {_paper[(_z, _lo)]:.0f} TFLOP/s per GPU and TP {_ptdp.tp} x PP {_ptdp.pp}
    at {_paper[('PTD-P', _lo)]:.0f} (engine: {_engine[(_z, _lo)]:.0f} and {_engine[('PTD-P', _lo)]:.0f}). As the paper doubled the GPUs
    to {_mid} and {_hi}, PTD-P kept its rate per GPU while ZeRO-3's aggregate throughput stayed flat (the chart shows the
    published points this course's reference file holds, the {_lo}-GPU ones).

    A fixed batch is a fixed number of FLOPs per step, so the step time goes as 1 / (GPUs x TFLOP/s per GPU): in the engine, from
    {_mid} to {_hi} GPUs ZeRO-3's step gets **{_speedup:.2f}x** as fast, twice the GPUs for almost no speed-up. That is the signature of a cost
    that grows with the number of ranks, such as the latency of every per-module all-gather on a ring of {_hi} ranks (NCCL had
    only the ring for all-gather and reduce-scatter then; NCCL 2.23's PAT, from 2024, crosses the network in about log2 N
    steps, plus a small cost per rank, but only for groups with one rank per node, which ZeRO-3 over all 8 GPUs of every
    server is not), more than of a fixed software cost per step. The paper puts
    PTD-P's advantage down to "less cross-node communication".

    **The engine reproduces the row from DeepSpeed 2021's mechanism** ({' / '.join(f'{_engine[(_z, n)]:.0f}' for n in TABLE2_GPUS)}
    TFLOP/s per GPU at {' / '.join(str(n) for n in TABLE2_GPUS)} GPUs). Its stage 3 gathers every weight matrix on its own,
    {_gather.calls:,.0f} all-gathers a step at {_hi} GPUs, each a ring over all {_hi} ranks (NCCL's tree runs all-reduces
    only: forcing it changes nothing, {_tree.hardware_tflops_per_gpu:.0f} TFLOP/s), so even a {_gather_mb:,.0f} MB gather pays
    {_gather_lat * 1e3:.1f} ms of ring latency, (N-1) hops, before its bytes. Of the {_run.time.dp_comm:.0f} s a step the
    data-parallel collectives expose there, {_ring_lat:.0f} s is that ring latency and {_run.dp_exposed_bandwidth_s:.0f} s the
    bytes; the rest, {_run.dp_exposed_latency_s - _ring_lat:.0f} s, is DeepSpeed's host work per rank of the group on every
    call, which grows with the ranks as the latency does. The exposed time grows
    ({' / '.join(f'{table2_estimate(_z, n).time.dp_comm:.0f}' for n in TABLE2_GPUS)} s a step) while each GPU's compute halves.
    The lesson Megatron drew: a layout that keeps the weights still (TP inside the server, PP across) sends far less across
    nodes, and what it sends does not pay a cost that grows with the cluster.
    """
            ),
            charts.published_vs_engine(TABLE2_GPUS, _series),
        ]
    )
    return


@app.cell(hide_code=True)
def _(accumulation_slider, act, fit_act, model_pick, offload_box, optimizer_pick):
    _name = MODELS[model_pick.value].name
    _curves = memory_curves(model_pick.value, act, optimizer_pick.value, offload_box.value)  # section 2's, from the cache
    _z3 = _curves[3]
    _dp0 = _curves[0]
    _m = accumulation_slider.value
    _vendor = dp_memory(FIT_MODEL, VENDOR_CLAIM_GPUS, 3, fit_act)
    _myths = [  # (what is said, the engine's reply with {fields} filled in below)
        ("ZeRO shards activations.",
         "{name}, ZeRO-3: activations {z3_at_8} GB per GPU on 8 GPUs and {z3_at_most} GB on {most}. Only model state is sharded."),
        ("ZeRO-3 costs 2x the communication of DDP.",
         "{ratio_1}x at one micro-batch per step (two all-gathers and a reduce-scatter against one "
         "all-reduce); at your {m} micro-batch(es) per step, {ratio_m}x, because the weights are gathered for every micro-batch."),
        ("Adding GPUs reduces memory under plain DP.",
         "{name}, ZeRO-0: {dp0_at_1} GB per GPU on 1 GPU and {dp0_at_most} GB on {most}."),
        (f"ZeRO-3 with checkpointing fits {MODELS[FIT_MODEL].name} on {VENDOR_CLAIM_GPUS} GPUs at {VENDOR_CLAIM_GB[0]}-{VENDOR_CLAIM_GB[1]} GB.",
         "The sharded model state alone is {vendor_state} GB per GPU; with activations, {vendor_total} GB."),
    ]
    filled_md(  # mo.md of the filled-in text, its markdown converted once (labs.core.filled_md)
        "## 4 · Myths, with numbers\n\n" + "\n".join(f"- *\"{_said}\"* **Engine:** {_fact}" for _said, _fact in _myths),
        name=_name, most=f"{DP_SIZES[-1]}", m=f"{_m}",
        z3_at_8=f"{_z3[DP_SIZES.index(8)].activations / GB:,.1f}", z3_at_most=f"{_z3[-1].activations / GB:,.1f}",
        ratio_1=f"{traffic_ratio(3, 0, 1):.2f}", ratio_m=f"{traffic_ratio(3, 0, _m):.2f}",
        dp0_at_1=f"{_dp0[0].total / GB:,.1f}", dp0_at_most=f"{_dp0[-1].total / GB:,.1f}",
        vendor_state=f"{_vendor.model_state / GB:,.0f}", vendor_total=f"{_vendor.total / GB:,.0f}",
    )
    return


@app.cell(hide_code=True)
def _(fit_committed):
    ui.gate(fit_committed)
    _rows = [
        {
            "milestone": m.claim,
            "stated": f"{m.stated_gb:,.1f} GB",
            "engine": f"{m.engine_gb:,.2f} GB",
            "error": f"{m.error:+.1%}",
            "holds": "✔" if m.holds else "✘",
            "see it with": m.where,
        }
        for m in seed_milestones()
    ]
    mo.vstack(
        [
            mo.md(
                "## 5 · Milestones to verify\n\nModel state only (no activations), from the course notes. Set the instruments "
                "to the last column's setting and read the model-state card."
            ),
            ui.static_table(_rows),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(rf"""
    ## 6 · The 100M milestone's step: is FSDP {FSDP_PENALTY_CLAIM[0]:.0%}-{FSDP_PENALTY_CLAIM[1]:.0%} slower than DDP?

    The course notes say FSDP costs {FSDP_PENALTY_CLAIM[0]:.0%}-{FSDP_PENALTY_CLAIM[1]:.0%} of DDP's throughput, for its
    all-gathers in the forward pass. The engine runs the milestone's {MODELS['seed-100m'].name} model on 2 GPUs of one
    server under each, on PyTorch's stack (`{STAGE_STACK}`: eager kernels, FSDP2's `fully_shard`): pick the server and
    the micro-batch, and read what each stage adds and what it saves.
    """)
    return


@app.cell
def _():
    milestone_server_pick = mo.ui.dropdown(options=MILESTONE_SERVERS, value=next(iter(MILESTONE_SERVERS)), label="Server")
    milestone_batch_slider = mo.ui.slider(steps=[1, 2, 4, 8, 16], value=1, label=f"Micro-batch (sequences of {SEQ_LEN:,} tokens per GPU)", show_value=True, debounce=True)
    return milestone_batch_slider, milestone_server_pick


@app.cell
def _(milestone_batch_slider, milestone_server_pick, zero2_committed):
    ui.gate(zero2_committed, what="the milestone's step time")
    _rows = stage_rows("seed-100m", milestone_server_pick.value, 2, milestone_batch_slider.value)
    _ddp, _fsdp = _rows[0], _rows[-1]
    _inside = FSDP_PENALTY_CLAIM[0] <= _fsdp["vs_ddp"] <= FSDP_PENALTY_CLAIM[1]
    _hooks, _gathers = _fsdp["compute_s"] - _ddp["compute_s"], _fsdp["dp_comm_s"] - _ddp["dp_comm_s"]
    _saved = _ddp["optimizer_s"] - _fsdp["optimizer_s"]
    mo.vstack(
        [
            mo.hstack([milestone_server_pick, milestone_batch_slider], justify="start", wrap=True),
            ui.static_table(
                [{"": _r["name"], "model state per GPU": f"{_r['model_state_bytes'] / GB:.2f} GB", "memory per GPU": f"{_r['memory_bytes'] / GB:.2f} GB",
                  "bytes sent per GPU": f"{_r['dp_bytes'] / GB:.2f} GB", "compute, with the host's work": f"{_r['compute_s'] * 1e3:.1f} ms",
                  "exposed communication": f"{_r['dp_comm_s'] * 1e3:.1f} ms", "optimizer": f"{_r['optimizer_s'] * 1e3:.1f} ms",
                  "step": f"{_r['step_s'] * 1e3:.1f} ms", "against DDP": f"{_r['vs_ddp']:+.1%}"} for _r in _rows]
            ),
            mo.md(f"**Engine:** FSDP is **{_fsdp['vs_ddp']:+.1%}** against DDP here, "
                  f"{'inside' if _inside else 'outside'} the notes' {FSDP_PENALTY_CLAIM[0]:.0%}-{FSDP_PENALTY_CLAIM[1]:.0%}: its hooks and buffer "
                  f"copies add {_hooks * 1e3:.1f} ms to the compute, its exposed gathers {_gathers * 1e3:+.1f} ms, and its sharded optimizer "
                  f"step saves {_saved * 1e3:.1f} ms. This model's layers are short: at a few sequences a GPU the host's work around "
                  f"them (PyTorch's launches, FSDP2's {FSDP2_S_PER_UNSHARD * 1e3:.2f} ms a layer's unshard, measured in pytorch/pytorch#133369) "
                  "outlasts the GPU's, and FSDP's hooks add to it; with more sequences the GPU covers them."),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 7 · Past the CPU: ZeRO-Offload against ZeRO-Infinity

    ZeRO-Offload keeps each rank's optimizer shard in the server's CPU memory and runs Adam on the
    CPU; ZeRO-Infinity (DeepSpeed's `offload_optimizer: {device: nvme}`) puts that state on the
    server's local NVMe, so every step reads it back and writes it out again while the CPU runs
    Adam. Both move the same gradients down and weights up over PCIe. Here ZeRO-3 runs on one
    server; pick the model and the micro-batches per step (the more, the longer the
    compute that the optimizer's traffic is paid against). ZeRO-Infinity can also keep the
    weights on NVMe (`offload_param`), read back at every forward and backward: not priced here.

    PyTorch's FSDP2 (`fully_shard`) is the ZeRO-3 of today's PyTorch: each parameter is its own
    `DTensor` sharded on dim 0 across the ranks, instead of FSDP1's flattened buffer per module,
    so a rank's shard is a set of row slices it can offload, checkpoint or reshard one
    parameter at a time. Its CPU offload (`CPUOffloadPolicy`) keeps parameters, gradients and
    optimizer state on the CPU; it has no NVMe tier.
    """)
    return


@app.cell
def _():
    offload_model_pick = mo.ui.dropdown(options={MODELS[_k].name: _k for _k in OFFLOAD_MODELS}, value=MODELS[OFFLOAD_MODELS[1]].name, label="Model")
    offload_steps_slider = mo.ui.slider(steps=[1, 4, 16, 64], value=16, label="Micro-batches per step", show_value=True, debounce=True)
    return offload_model_pick, offload_steps_slider


@app.cell
def _(fit_committed, offload_model_pick, offload_steps_slider):
    ui.gate(fit_committed, what="the offload comparison")
    _cluster = CLUSTERS[OFFLOAD_SERVER]
    _rows = placement_rows(offload_model_pick.value, OFFLOAD_SERVER, _cluster.gpus_per_node, microbatches=offload_steps_slider.value, nvme=OFFLOAD_NVME)
    _drive = NVME[OFFLOAD_NVME]
    mo.vstack(
        [
            mo.hstack([offload_model_pick, offload_steps_slider], justify="start", wrap=True),
            ui.static_table(
                [{"": _r["name"], "HBM per GPU": f"{_r['hbm_bytes'] / GB:,.1f} GB", "CPU memory per server": f"{_r['cpu_bytes'] / GB:,.0f} GB",
                  "on NVMe": f"{_r['nvme_stored'] / GB:,.0f} GB", "PCIe per GPU per step": f"{_r['pcie_bytes'] / GB:,.1f} GB in {_r['pcie_s']:.2f} s",
                  "NVMe per server per step": f"{_r['nvme_bytes'] / GB:,.0f} GB in {_r['nvme_s']:.1f} s", "CPU Adam": f"{_r['cpu_adam_s']:.2f} s",
                  "step": f"{_r['step_s']:.1f} s", "fits": "yes" if _r["fits"] else "no"} for _r in _rows]
            ),
            mo.md(f"{_cluster.gpu.name} x {_cluster.gpus_per_node}, host: {_cluster.host.name} ({_cluster.host.memory_bytes / GB:,.0f} GB), PCIe: "
                  f"{_cluster.host_link.name}. NVMe: {_drive.name}, {_drive.read_bytes_per_s / GB:.0f} GB/s read and "
                  f"{_drive.write_bytes_per_s / GB:.0f} GB/s write ({_drive.source}). A model fits when its HBM and the host's CPU memory hold it."),
        ]
    )
    return


@app.cell(hide_code=True)
def _(zero2_committed):
    ui.gate(zero2_committed)
    ui.math_peek(
        "The equations behind the sweep",
        r"""
    Model state per GPU, $\Psi$ parameters, $N$ data-parallel GPUs, $K$ optimizer bytes ($K = 12$ for fp32 Adam):

    | stage | shards | bytes per GPU |
    |---|---|---|
    | 0 | nothing | $(2 + 2 + K)\,\Psi$ |
    | 1 | optimizer state | $(2 + 2 + K/N)\,\Psi$ |
    | 2 | + gradients | $(2 + (2 + K)/N)\,\Psi$ |
    | 3 | + weights | $(2 + 2 + K)\,\Psi / N$ |

    Activations per layer and micro-batch (Korthikanti et al. 2022, for GPT's layer): $sbh(34 + 5as/h)$ without recompute,
    $34\,sbh$ with selective recompute or flash attention, $2\,sbh$ with full recompute. For a Llama layer (SwiGLU,
    grouped-query attention) the engine counts its own tensors, close to but not exactly $34\,sbh$. ZeRO divides none of them.

    Bytes each GPU sends per step, $G = 2\Psi$ bf16 gradient bytes, $m$ micro-batches per step:
    DP and ZeRO-1 $2\frac{N-1}{N}G$; ZeRO-2 $(m+1)\frac{N-1}{N}G$; ZeRO-3 $3m\frac{N-1}{N}G$.

    ZeRO-Offload per step: $2\Psi/N$ bytes down and $2\Psi/N$ up over PCIe, and a CPU Adam pass that streams
    about $%d\,\Psi/N$ bytes of host DRAM.
    """ % CPU_ADAM_BYTES_PER_PARAM,
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit to the ledger")
    return (submit_button,)


@app.cell
def _(
    fit_committed,
    identity,
    submit_button,
    sweep_settings,
    variant,
    zero2_committed,
):
    ui.gate(fit_committed, held=(zero2_committed,))
    _inputs = sweep_settings()  # read when pressed, not a cell reference: a move does not re-run the submit
    _pred = {"fit": fit_committed.answer, "zero2": zero2_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [(LAB, "sweep", _inputs, _pred, zero_sweep_outcomes(_inputs, _pred, variant=variant), variant)]
    )
    _view
    return (submitted,)


@app.cell(hide_code=True)
def _(zero2_committed):
    ui.gate(zero2_committed)
    _server = Cluster.get("dgx-h100")
    _cliff = _server.intra.effective_bytes_per_s / _server.inter_bytes_per_s_per_gpu
    _node = tp8_dp_times()
    mo.md(rf"""
    ## Key takeaways

    - Mixed-precision Adam keeps {BYTES_PER_PARAM} bytes per parameter; plain data parallelism keeps all of them on every GPU.
    - ZeRO-1 and ZeRO-2 shard the optimizer state and gradients at the traffic of plain DP (per micro-batch, for ZeRO-2);
      ZeRO-3 shards the weights too for {traffic_ratio(3, 0, 1):.1f}x the traffic per micro-batch.
    - ZeRO never touches activations: past a point, only checkpointing, smaller micro-batches, tensor and
      sequence parallelism, or context parallelism (which splits each sequence over GPUs, Lab 11) bring a model
      under the HBM line. Pipeline parallelism divides the layers, not a layer's activations, and its first
      stage holds up to p micro-batches in flight under 1F1B: p x L/p = L layers' worth, as much as without it.
    - On a DGX H100 a GPU's own NIC carries {_cliff:.0f}x less than its NVLink: a group with one GPU per server (the
      "spread" placement above) pays that, while a ring over whole servers crosses on all of their NICs at once.
      Data parallelism behind TP = 8 does not pay it in time: each of a server's eight groups carries 1/8 of the
      gradients on its own NIC ({_node['model']} at {_node['gpus']} GPUs: {_node['behind_s'] * 1e3:.0f} ms against
      {_node['whole_s'] * 1e3:.0f} ms over whole servers).

    **Next:** Lab 07 (the pipeline bubble) and Lab 05, Act II (the 3D design for GPT-3 175B).
    """)
    return


@app.cell
def _(fit_committed, submitted, sweep_estimate, sweep_inputs, zero2_committed):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "fit prediction": fit_committed.describe(),
            "ZeRO-2 prediction": zero2_committed.describe(),
            "setting": f"{MODELS[sweep_inputs['model']].name}, ZeRO-{sweep_inputs['zero_stage']}, DP {sweep_inputs['dp']}" if ui.gate(fit_committed, stop=False) else "—",
            "memory": f"{sweep_estimate.memory.total / GB:,.1f} GB" if ui.gate(fit_committed, stop=False) else "—",
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


if __name__ == "__main__":
    app.run()
