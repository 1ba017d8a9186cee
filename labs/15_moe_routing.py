import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Lab 15: Where the tokens go (MoE routing and balance)",
)

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION
    from labs.core import ui
    from labs.core.scenarios.lab15 import (
        AUX_COEFFS,
        BASELINE_LABEL,
        CAPACITIES,
        DEFAULT_INPUTS,
        DRIFTS,
        EP,
        GAMMAS,
        LAB,
        NODE_LIMITS,
        NODES,
        SCHEME_LABELS,
        SCHEMES,
        SKEWS,
        STEP,
        STEPS,
        WINDOW,
        a2a_bytes,
        cost_ratio,
        engine_copies,
        router_runs,
        routing_outcomes,
        step_cost,
        summary,
    )
    from labs.core.scenarios.lab11 import MOE_GPUS, moe_cluster, moe_model
    from labs.core import routing_svg


@app.cell(hide_code=True)
def _():
    ui.with_stylesheet(mo.md(r"""
    # Lab 15 · Where the tokens go: MoE routing and balance

    A mixture-of-experts layer sends each token to a few of its experts, and the experts sit on
    different GPUs. The expert-parallel group waits for its busiest GPU, so a router that favours
    a few experts slows every step. Here the router runs on real arrays (`labs/core/engine/routing.py`):
    DeepSeek-V3's 256 experts, 8 a token, over 64 GPUs in 8 nodes; every step price comes from the
    engine in `labs/core`. About 35 minutes.

    **Before you start:** the DeepSeek-V3 technical report (arXiv:2412.19437) Sec. 2.1.2 (auxiliary-loss-free
    balancing, node-limited routing) and 3.2.2 (the all-to-all); Switch Transformer (arXiv:2101.03961) Sec. 2.2;
    GShard (arXiv:2006.16668) Sec. 2.2; Megatron-Core's MoE guide (token dispatchers, capacity, aux loss);
    Lab 11's expert section.
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


# Your router's skew, drift and auxiliary-loss coefficient are drawn from your id (labs.variants),
# and so is the options' order.
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    return (variant,)


@app.cell(hide_code=True)
def _(variant):
    _ratio = cost_ratio(variant.settings)
    _c = step_cost(_ratio)
    _m = moe_model()
    ui.stakeholder_message(
        "MoE training lead",
        f"{_m.name} on {MOE_GPUS:,} {moe_cluster().gpu.name}s, PP 16 x EP {EP}: the engine's estimate for a balanced router is "
        f"{_c['balanced_s']:.1f} s a step, and we measure {_c['hot_s']:.1f} s. The router's logs say the busiest GPU of each "
        f"EP group receives {_ratio:.2f}x the mean GPU's tokens: one expert is hot. Do we turn on the auxiliary loss, DeepSeek's "
        "bias update, or limit each token's nodes? And what will it buy us?",
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## A · Three predictions
    """)
    return


@app.cell
def _(variant):
    balance_question = ui.variant_question(variant.questions["balance"])
    balance_question
    return (balance_question,)


@app.cell
def _():
    balance_commit_buttons = ui.commit_buttons()
    return (balance_commit_buttons,)


@app.cell
def _(balance_commit_buttons, balance_question, held_now, identity, variant):
    _row, balance_committed = ui.commit_prediction(identity, LAB, "balance", balance_question, balance_commit_buttons, variant=variant, held=held_now())
    _row
    return (balance_committed,)


@app.cell(hide_code=True)
def _(balance_committed, variant):
    ui.gate(balance_committed, held_note=True)
    ui.variant_reveal(balance_committed, variant.questions["balance"])
    return


@app.cell
def _(variant):
    drops_question = ui.variant_question(variant.questions["drops"])
    drops_question
    return (drops_question,)


@app.cell
def _():
    drops_commit_buttons = ui.commit_buttons()
    return (drops_commit_buttons,)


@app.cell
def _(drops_commit_buttons, drops_question, held_now, identity, variant):
    _row, drops_committed = ui.commit_prediction(identity, LAB, "drops", drops_question, drops_commit_buttons, variant=variant, held=held_now())
    _row
    return (drops_committed,)


@app.cell(hide_code=True)
def _(drops_committed, variant):
    ui.gate(drops_committed, held_note=True)
    ui.variant_reveal(drops_committed, variant.questions["drops"])
    return


@app.cell
def _(variant):
    cost_question = ui.variant_question(variant.questions["cost"])
    cost_question
    return (cost_question,)


@app.cell
def _():
    cost_commit_buttons = ui.commit_buttons()
    return (cost_commit_buttons,)


@app.cell
def _(cost_commit_buttons, cost_question, held_now, identity, variant):
    _row, cost_committed = ui.commit_prediction(identity, LAB, "cost", cost_question, cost_commit_buttons, variant=variant, held=held_now())
    _row
    return (cost_committed,)


@app.cell(hide_code=True)
def _(cost_committed, variant):
    ui.gate(cost_committed, held_note=True)
    ui.variant_reveal(cost_committed, variant.questions["cost"])
    return


# The instruments are created, and laid out, in one cell that reads nothing: moving one reruns
# only the cells that read its value, never the panel. The submit reads the step's inputs through
# router_inputs() when pressed: a move re-runs neither the submit (which reads the ledger) nor the HUD.
@app.cell
def _():
    scheme_dropdown = mo.ui.dropdown(options={SCHEME_LABELS[s]: s for s in SCHEMES}, value=SCHEME_LABELS[DEFAULT_INPUTS["scheme"]], label="Router")
    aux_dropdown = mo.ui.dropdown(options=[f"{a:g}" for a in AUX_COEFFS], value=f"{DEFAULT_INPUTS['aux_coeff']:g}", label="Aux-loss coefficient alpha")
    gamma_dropdown = mo.ui.dropdown(options=[f"{g:g}" for g in GAMMAS], value=f"{DEFAULT_INPUTS['gamma']:g}", label="Bias update rate gamma")
    nodes_slider = mo.ui.slider(steps=list(NODE_LIMITS), value=DEFAULT_INPUTS["max_nodes"], label=f"Nodes a token may reach (of {NODES})", show_value=True, debounce=True)
    skew_slider = mo.ui.slider(steps=list(SKEWS), value=DEFAULT_INPUTS["skew"], label="Popularity skew (logits, std)", show_value=True, debounce=True)
    drift_slider = mo.ui.slider(steps=list(DRIFTS), value=DEFAULT_INPUTS["drift"], label="Drift (logits a step)", show_value=True, debounce=True)
    capacity_slider = mo.ui.slider(steps=list(CAPACITIES), value=DEFAULT_INPUTS["capacity"], label="Capacity factor c", show_value=True, debounce=True)
    router_panel = mo.vstack([
        mo.md("### Instruments"),
        mo.hstack([scheme_dropdown, aux_dropdown, gamma_dropdown], justify="start", wrap=True),
        mo.hstack([nodes_slider, skew_slider, drift_slider, capacity_slider], justify="start", wrap=True),
    ])

    def router_inputs() -> dict:
        """The ledger step's inputs: the instruments' setting and the capacity factor."""
        return dict(scheme=scheme_dropdown.value, aux_coeff=float(aux_dropdown.value), gamma=float(gamma_dropdown.value), max_nodes=nodes_slider.value,
                    skew=skew_slider.value, drift=drift_slider.value, capacity=capacity_slider.value)
    return (
        aux_dropdown,
        capacity_slider,
        drift_slider,
        gamma_dropdown,
        nodes_slider,
        router_inputs,
        router_panel,
        scheme_dropdown,
        skew_slider,
    )


@app.cell
def _(balance_committed, cost_committed, drops_committed, router_panel):
    ui.gate(balance_committed, drops_committed, cost_committed, what="the router's instruments")
    router_panel
    return


# The router, its chart (heatmap and busiest GPU) and cards in one cell that reads every instrument
# but the capacity factor, which only re-reads the runs' loads: a capacity move re-runs the drop
# card and chart (one cell), not the router or its chart. The reference router (no balancing,
# every node) reads only the skew and drift (the data): a move of the router's own knobs (scheme,
# alpha, gamma, node limit) runs one router, not two.
@app.cell
def _(
    aux_dropdown,
    balance_committed,
    cost_committed,
    drift_slider,
    drops_committed,
    gamma_dropdown,
    nodes_slider,
    scheme_dropdown,
    skew_slider,
):
    ui.gate(balance_committed, drops_committed, cost_committed)
    router_setting = dict(scheme=scheme_dropdown.value, aux_coeff=float(aux_dropdown.value), gamma=float(gamma_dropdown.value), max_nodes=nodes_slider.value,
                          skew=skew_slider.value, drift=drift_slider.value)
    router_view, baseline_view = router_runs([  # one draw for both: they share the token noise
        router_setting,
        {"scheme": "none", "max_nodes": NODES, "skew": router_setting["skew"], "drift": router_setting["drift"]},
    ])
    router_summary = summary(router_view)
    router_label = SCHEME_LABELS[router_setting["scheme"]]
    router_chart = routing_svg.router_chart(router_view, baseline_view, router_label)  # plain SVG: no Plotly redraw a move
    _cost = step_cost(router_summary["busiest_gpu"])
    mo.vstack([
        mo.Html(router_chart),
        ui.metric_cards({
            f"busiest GPU / mean, steps {STEPS - WINDOW + 1}-{STEPS}": f"{router_summary['busiest_gpu']:.2f}x",
            "busiest expert / mean": f"{router_summary['busiest_expert']:.2f}x",
            "step, the EP group waiting": f"{_cost['hot_s']:.1f} s",
            "step, balanced": f"{_cost['balanced_s']:.1f} s",
            "MFU": f"{_cost['hot_mfu']:.1%}",
        }),
    ])
    return baseline_view, router_chart, router_label, router_setting, router_summary, router_view


@app.cell
def _(baseline_view, capacity_slider, router_label, router_summary, router_view):
    drops_view = routing_svg.drops_chart(router_view, baseline_view, router_label, capacity_slider.value)
    mo.vstack([ui.metric_cards({f"dropped at c = {capacity_slider.value:g}": f"{router_summary['dropped'][capacity_slider.value]:.2%}"}), mo.Html(drops_view)])
    return (drops_view,)


@app.cell(hide_code=True)
def _(router_setting, router_summary):
    _mine = a2a_bytes(router_summary["network_per_token"], router_summary["nvlink_per_token"])
    _net, _nvl = engine_copies(router_setting["max_nodes"])
    _engine = a2a_bytes(_net, _nvl)
    _all_net, _all_nvl = engine_copies(NODES)
    _c = moe_cluster()
    _cost = step_cost(router_summary["busiest_gpu"])
    mo.md(
        f"""
    ### The all-to-all: inside and across nodes

    A token goes once over {_c.inter.name} to each other node that holds one of its experts, and is forwarded over
    {_c.intra.name} to each expert not on the GPU it landed on (DeepSeek-V3 Sec. 3.2.2). Per GPU, per MoE layer and
    {moe_model().seq_len:,}-token micro-batch (FP8 dispatch + BF16 combine):

    | | network copies / token | NVLink copies / token | across nodes | inside the node |
    |---|---:|---:|---:|---:|
    | this router's arrays (at most {router_setting['max_nodes']} nodes a token) | {router_summary['network_per_token']:.2f} | {router_summary['nvlink_per_token']:.2f} | {_mine['network'] / 1e6:,.0f} MB | {_mine['nvlink'] / 1e6:,.0f} MB |
    | the engine's formula, the same limit | {_net:.2f} | {_nvl:.2f} | {_engine['network'] / 1e6:,.0f} MB | {_engine['nvlink'] / 1e6:,.0f} MB |
    | the engine's formula, no limit | {_all_net:.2f} | {_all_nvl:.2f} | {a2a_bytes(_all_net, _all_nvl)['network'] / 1e6:,.0f} MB | {a2a_bytes(_all_net, _all_nvl)['nvlink'] / 1e6:,.0f} MB |

    The NIC carries {_c.inter_bytes_per_s_per_gpu / 1e9:.0f} GB/s per GPU against NVLink's {_c.intra.effective_bytes_per_s / 1e9:.0f} GB/s:
    the network copies set the time, which is why DeepSeek-V3 caps each token at 4 nodes. The busiest GPU also *receives*
    more than the mean; the step below prices the all-to-all at the mean GPU's bytes.

    ### What the hot expert costs the step

    The EP group runs its expert GEMMs in lock-step: every GPU waits for the one with the most tokens. The engine prices
    DeepSeek-V3's published layout with every expert padded to the busiest GPU's load ({_cost['ratio']:.2f}x the mean):
    compute {_cost['compute_s']:.1f} s becomes {_cost['hot_compute_s']:.1f} s and the step {_cost['balanced_s']:.1f} s becomes
    **{_cost['hot_s']:.1f} s** ({_cost['rise']:+.1%}). The all-to-all's {_cost['ep_comm_s']:.1f} s is priced unchanged.

    *How the engine prices it:* a GPU's experts run as one grouped GEMM whose tiles share the waves; each expert's tokens
    pad to the tile and each expert reads its own weights, so below a few hundred tokens an expert the weights' bytes, not the
    FLOPs, set the time. Padding every expert to the busiest GPU's load is the capacity factor's price: the dispatch and
    combine stay at the mean GPU's bytes, so the busiest GPU's extra receiving is not in this step.
    """
    )
    return


@app.cell(hide_code=True)
def _(balance_committed, cost_committed, drops_committed):
    ui.gate(balance_committed, drops_committed, cost_committed)
    ui.math_peek(
        "The equations behind the router",
        r"""
    Token $t$, expert $i$ of $E$, $k$ experts a token, $T$ tokens a step, logits $z_{t,i}$:

    - **Top-k** (Switch, GShard, Mixtral): the $k$ largest $z_{t,i}$; expert $i$'s load $n_i = \sum_t [i \in \mathrm{TopK}(z_t)]$, $\sum_i n_i = kT$.
    - **Capacity** (GShard, Switch): expert $i$ keeps $C = \lceil c\,kT/E \rceil$ and drops $\max(n_i - C, 0)$.
    - **Auxiliary loss** (Switch eq. 4, top-k form): $L = \alpha E \sum_i f_i P_i$, $f_i = n_i/(kT)$, $P_i = \frac1T\sum_t \mathrm{softmax}(z_t)_i$;
      at balance $f_i = P_i = 1/E$ and $L = \alpha$. Here its gradient moves a per-expert logit bias:
      $\partial L/\partial c_j = \alpha E\,\frac1T\sum_t p_{t,j}\,(f_j - \sum_i f_i p_{t,i})$.
    - **Bias update** (DeepSeek-V3): choose the top-k of $s_{t,i} + b_i$, $s = \sigma(z)$; after each step
      $b_i \leftarrow b_i + \gamma\,\mathrm{sign}(\bar n - n_i)$.
    - **Node-limited routing**: keep the $M$ nodes with the largest sum of their top $k/M$ scores, then the top-k among them.
    - **Hot expert**: the EP group's expert GEMMs take $\max_g n_g / \bar n$ times the balanced time, $n_g$ the tokens of GPU $g$'s experts.
    """,
    )
    return


@app.cell(hide_code=True)
def _(balance_committed, cost_committed, drops_committed):
    ui.gate(balance_committed, drops_committed, cost_committed)
    _none, _bias, _aux = (summary(r) for r in router_runs([{"scheme": s, "max_nodes": NODES} for s in ("none", "bias", "aux_loss")]))
    _cost_none, _cost_bias = step_cost(_none["busiest_gpu"]), step_cost(_bias["busiest_gpu"])
    mo.md(
        f"""
    ## Key takeaways

    At the lab's default skew and drift ({DEFAULT_INPUTS['skew']:g} and {DEFAULT_INPUTS['drift']:g} logits):

    - Without balancing the busiest GPU receives {_none['busiest_gpu']:.2f}x the mean and the engine's step grows
      {_cost_none['rise']:.0%}; the bias update brings it to {_bias['busiest_gpu']:.2f}x ({_cost_bias['rise']:+.0%}).
    - At capacity 1.25 no balancing drops {_none['dropped'][1.25]:.1%} of the token copies, Switch's loss at alpha 0.01
      {_aux['dropped'][1.25]:.2%}, the bias update {_bias['dropped'][1.25]:.2%}. DeepSeek-V3 drops none: it balances and sets no cap.
    - The bias moves by gamma a step whatever the imbalance: it cannot follow a drift faster than gamma, and a larger gamma
      jitters. The auxiliary loss pulls in proportion to the imbalance, through a gradient that competes with the model's own.
    - Node-limited routing cuts the copies that cross nodes (the slow link), not the imbalance.

    **Back to:** Lab 11, where the engine prices the all-to-all for a balanced router.
    """
    )
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my router to the ledger")
    return (submit_button,)


@app.cell
def _(
    balance_committed,
    cost_committed,
    drops_committed,
    identity,
    router_inputs,
    submit_button,
    variant,
):
    ui.gate(balance_committed, drops_committed, cost_committed)
    _pred = {"balance": balance_committed.answer, "drops": drops_committed.answer, "cost": cost_committed.answer}
    _view, submitted = ui.submit_to_ledger(
        identity, submit_button, lambda: [ui.ledger_step(LAB, STEP, router_inputs(), _pred, routing_outcomes, "the router", variant)]
    )
    _view
    return (submitted,)


@app.cell
def _(balance_committed, cost_committed, drops_committed, submitted):
    ui.hud(
        {
            "engine": ENGINE_VERSION,
            "balance prediction": balance_committed.describe(),
            "drops prediction": drops_committed.describe(),
            "cost prediction": cost_committed.describe(),
            "ledger": "saved" if submitted else "not submitted",
        }
    )
    return


if __name__ == "__main__":
    app.run()
