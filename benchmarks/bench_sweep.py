"""Engine speed in one run: estimate() and sweep() of the current engine beside the v1 engine
(commit 1a74de3 of this repository) and llm-analysis, on the same plans.

    python benchmarks/bench_sweep.py            # prints the numbers; exits 0
    python benchmarks/bench_sweep.py --check    # exits 1 when a target fails
    pip install -e ".[bench]"                   # llm-analysis 0.2.2 (no torch needed)

Targets (issue 35, item 4):
- sweep() per plan at least as fast as v1's sweep() on the same model, cluster and global batch,
  on every case (ratio v1 / current >= 1 each);
- estimate() per plan within 4x of v1's (ratio v1 / current >= 0.25: v1's step model was a
  fraction of today's) and faster than llm-analysis's LLMAnalysis(...).training(...) on the same
  plans (ratio >= 1);
- the whole MT-NLG 530B space on 2,240 A100s swept in under 1 s.
The sweep's memory per plan is printed beside v1's: the growth of the process's peak RSS over
the first sweep of each case, divided by its plans. The sweep's speed-up over a loop of
estimate() is printed too, but is no target: it rises when estimate() gets slower.

Every process runs with the C library's default allocator settings, as a lab, the dashboard or
the grader does: no MALLOC_* tuning, so a sweep that allocates fresh columns every call pays for
it here as it does there.

How: each engine runs in a subprocess of its own (the current one too, so both are measured the
same way), fed JSON requests on stdin. v1 is the commit's labs/ extracted from this repository's
git history (`git archive 1a74de3 labs`) into a temporary directory put first on that
subprocess's sys.path; without the history (a shallow clone) the v1 lines are skipped. Each round
times every engine in turn, starting with a different one each round, so machine load falls on
all of them; a number is the median over the rounds. A round times the loop of estimate() over
the plans of all cases (per-plan time = loop time / plans) and one sweep() per case.

The plans: an evenly spaced sample of the current engine's plan_space() for each case with cp=1
and recompute in none/selective/full, the fields v1 also has. Each plan sets tp, pp, dp,
micro_batch, global_batch, zero_stage, recompute, sequence_parallel, schedule, virtual_stages and
flash_attention=True; every other field takes each engine's default (dp_algorithm: v1 "ring", the
current engine "auto", NCCL's choice). A plan some engine refuses is dropped for all of them.
Models are given by their shape (layers, hidden, heads, seq_len, vocab, ffn_hidden, kv_heads,
gated_ffn, tied_embeddings); clusters by catalog key and node count, from each engine's own catalog.
The timed call is estimate(model, cluster, plan) with Model, Cluster and Plan built beforehand.

llm-analysis 0.2.2 mapping. Timed: LLMAnalysis(model, gpu, dtype, parallelism).training(...) with
the configs built beforehand (its logger set to ERROR; it still formats its log strings).
- maps: layers, hidden, heads, vocab, seq_len (max_seq_len and training's seq_len), kv_heads
  (num_key_value_heads), ffn_hidden (ffn_embed_dim, expansion_ratio = ffn_hidden / hidden),
  gated_ffn (mlp_gated_linear_units); tp, pp, dp (ParallelismConfig), sequence_parallel (sp_size =
  tp, else 1); micro_batch (batch_size_per_gpu), global_batch (global_batch_size; it derives the
  gradient accumulation steps as we do), recompute none/selective/full (ActivationRecomputation),
  zero_stage 0-3 (DSZeRO), flash_attention (flash_attn); the GPU's HBM (GiB), HBM bandwidth, bf16
  peak (peak_fp16_TFLOPS), NVLink and per-GPU inter-node bandwidth, NVLink hop latency, bf16
  weights/activations/embeddings (w16a16e16).
- does not map: the pipeline schedule and virtual stages (llm-analysis has no bubble: step =
  FLOPs / (tp x pp x achieved FLOP/s) x accumulation steps), context and expert parallelism (cp=1
  plans, dense models), tied embeddings, the DP algorithm, overlap of DP/PP/TP communication,
  bucket sizes, nodes and rails (its comm latency is TP only), optimizer state precision, the
  software stack. FLOP/s and HBM efficiency are llm-analysis's own defaults. Its numbers are not
  compared with ours: only its time per call is.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
V1_COMMIT = "1a74de3"
COMMON_FIELDS = ("tp", "pp", "dp", "micro_batch", "global_batch", "zero_stage", "recompute", "sequence_parallel", "schedule", "virtual_stages")
SHAPE_FIELDS = ("name", "layers", "hidden", "heads", "seq_len", "vocab", "ffn_hidden", "kv_heads", "gated_ffn", "tied_embeddings")
SPACE_CASE = "MT-NLG 530B on 2240 A100"
ROUND_S = 0.3  # least seconds of estimate() calls per engine and round
# (name, a model of the current catalog or a shape, cluster key, nodes, global batch)
CASES = (
    ("GPT-3 175B on 1024 H100", "gpt3-175b", "dgx-h100", 128, 1536),
    (SPACE_CASE, ("MT-NLG 530B", 105, 20480, 128, 2048, 51200), "dgx-a100", 280, 2240),
    ("Llama 2 70B on 512 H100", "llama2-70b", "dgx-h100", 64, 1024),
)
TARGETS = {  # name: (threshold, True when the measure must be at least it, False when below it)
    **{f"sweep() vs v1, {case[0]}": (1.0, True) for case in CASES},
    "estimate() vs v1": (0.25, True),
    "estimate() vs llm-analysis": (1.0, True),
    f"whole space sweep, {SPACE_CASE} (s)": (1.0, False),
}


# ---------------------------------------------------------------- workers (one per engine)

class LabsEngine:
    """The labs.core found first on sys.path: the current tree or v1's extracted one."""

    def __init__(self, cases: list[dict]):
        from labs.core import Cluster, Model, Plan

        self.cases = []
        for case in cases:
            model = Model(**case["shape"])
            cluster = Cluster.get(case["cluster"], nodes=case["nodes"])
            plans = []
            for fields in case["plans"]:
                try:
                    plans.append(Plan(**fields, flash_attention=True))
                except ValueError:
                    plans.append(None)
            self.cases.append((model, cluster, case["global_batch"], plans))

    def accepts(self) -> list[list[bool]]:
        from labs.core import estimate

        out = []
        for model, cluster, _, plans in self.cases:
            ok = []
            for plan in plans:
                try:
                    ok.append(plan is not None and estimate(model, cluster, plan) is not None)
                except ValueError:
                    ok.append(False)
            out.append(ok)
        return out

    def keep(self, masks: list[list[bool]]) -> None:
        self.cases = [(m, c, b, [p for p, k in zip(plans, mask) if k]) for (m, c, b, plans), mask in zip(self.cases, masks)]

    def estimate_s(self, repeat: int) -> list[float]:
        """Seconds of `repeat` loops of estimate() over each case's plans."""
        from labs.core import estimate

        times = []
        for model, cluster, _, plans in self.cases:
            start = time.perf_counter()
            for _ in range(repeat):
                for plan in plans:
                    estimate(model, cluster, plan)
            times.append(time.perf_counter() - start)
        return times

    def sweep_s(self) -> list[list[float]]:
        """[seconds, rows, bytes of pages faulted] of one sweep() per case (minor faults, read
        outside the timed span: what the C library's heap faulted again after trimming it)."""
        import resource

        from labs.core import sweep

        out = []
        for model, cluster, batch, _ in self.cases:
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            rows = len(sweep(model, cluster, global_batch=batch))
            seconds = time.perf_counter() - start
            out.append([seconds, rows, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) * resource.getpagesize()])
        return out

    def sweep_bytes(self) -> list[float]:
        """Peak bytes allocated during one sweep() per case (tracemalloc, which numpy reports its
        arrays to), per plan of the space: a separate, untimed call."""
        import tracemalloc

        from labs.core import sweep

        out = []
        for model, cluster, batch, _ in self.cases:
            tracemalloc.start()
            rows = len(sweep(model, cluster, global_batch=batch))
            out.append(tracemalloc.get_traced_memory()[1] / rows)
            tracemalloc.stop()
        return out

    def loop_s(self, case: int, plans: int) -> list[float]:
        """[seconds per plan of estimate() over up to `plans` plans of the whole space, plans timed]."""
        from labs.core import estimate

        try:
            from labs.core.engine.search import plan_space, row_plan
        except ImportError:  # a tree from before the engine's move (v1)
            from labs.core.search import plan_space, row_plan

        model, cluster, batch, _ = self.cases[case]
        rows = plan_space(model, cluster, batch).to_dict("records")
        sample = []
        for r in rows[:: max(1, len(rows) // plans)]:
            try:
                sample.append(row_plan(r))
            except ValueError:  # a row this engine's Plan refuses (sweep() filters it from its frames)
                continue
        start = time.perf_counter()
        for plan in sample:
            estimate(model, cluster, plan)
        return [(time.perf_counter() - start) / len(sample), len(sample)]


class LlmAnalysisEngine:
    """llm-analysis's training analysis on the same plans (see the module docstring's mapping)."""

    def __init__(self, cases: list[dict]):
        from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
        from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig
        from llm_analysis.logger import logger

        logger.setLevel("ERROR")
        self.analysis = LLMAnalysis
        recompute = {"none": ActivationRecomputation.NONE, "selective": ActivationRecomputation.SELECTIVE, "full": ActivationRecomputation.FULL}
        dtype = DtypeConfig()
        self.cases = []
        for case in cases:
            shape, g = case["shape"], case["llm_gpu"]
            ffn = shape["ffn_hidden"] or 4 * shape["hidden"]
            model = ModelConfig(
                shape["name"], shape["layers"], shape["heads"], shape["hidden"], shape["vocab"], max_seq_len=shape["seq_len"],
                num_key_value_heads=shape["kv_heads"], ffn_embed_dim=ffn, expansion_ratio=ffn / shape["hidden"])
            gpu = GPUConfig(**g)
            calls = []
            for p in case["plans"]:
                parallel = ParallelismConfig(tp_size=p["tp"], pp_size=p["pp"], dp_size=p["dp"], sp_size=p["tp"] if p["sequence_parallel"] else 1)
                kwargs = dict(batch_size_per_gpu=p["micro_batch"], global_batch_size=p["global_batch"], seq_len=shape["seq_len"],
                              activation_recomputation=recompute[p["recompute"]], ds_zero=DSZeRO(p["zero_stage"]), flash_attn=True,
                              mlp_gated_linear_units=shape["gated_ffn"])
                calls.append((model, gpu, dtype, parallel, kwargs))
            self.cases.append(calls)

    def accepts(self) -> list[list[bool]]:
        out = []
        for calls in self.cases:
            ok = []
            for model, gpu, dtype, parallel, kwargs in calls:
                try:
                    ok.append(self.analysis(model, gpu, dtype, parallel).training(**kwargs) is not None)
                except (AssertionError, ValueError, ZeroDivisionError):
                    ok.append(False)
            out.append(ok)
        return out

    def keep(self, masks: list[list[bool]]) -> None:
        self.cases = [[c for c, k in zip(calls, mask) if k] for calls, mask in zip(self.cases, masks)]

    def estimate_s(self, repeat: int) -> list[float]:
        times = []
        for calls in self.cases:
            start = time.perf_counter()
            for _ in range(repeat):
                for model, gpu, dtype, parallel, kwargs in calls:
                    self.analysis(model, gpu, dtype, parallel).training(**kwargs)
            times.append(time.perf_counter() - start)
        return times


def serve(kind: str, root: str | None) -> None:
    """Answer JSON requests, one a line, on the stdout this process was started with; anything
    the libraries print goes to stderr."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if root:
        sys.path.insert(0, root)
    engine = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        if op == "setup":
            if kind == "labs":
                import labs.core

                where = Path(labs.core.__file__).resolve()
                if root and Path(root).resolve() not in where.parents:
                    raise RuntimeError(f"labs.core imported from {where}, not from {root}")
                engine = LabsEngine(request["cases"])
            else:
                engine = LlmAnalysisEngine(request["cases"])
            answer = engine.accepts()
        else:
            answer = getattr(engine, op)(**request)
        reply.write(json.dumps(answer) + "\n")
        reply.flush()


class Worker:
    def __init__(self, label: str, python: str, kind: str, root: Path | None = None):
        self.label = label
        cmd = [python, str(Path(__file__).resolve()), "--serve", kind] + (["--root", str(root)] if root else [])
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}  # the default allocator, as users run
        env.update(TRANSFORMERS_VERBOSITY="error", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())

    def ask(self, op: str, **args):
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.label} worker stopped (exit {self.proc.wait()}); its error is above")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ---------------------------------------------------------------- the parent: plans, rounds, report

def build_cases(plans_per_case: int) -> list[dict]:
    """Each case's model shape, cluster, llm-analysis GPU and plan sample, from the current engine."""
    from labs.core import Cluster, Model
    from labs.core.engine.models import RECOMPUTE_MODES
    from labs.core.engine.search import plan_space

    cases = []
    for name, model_spec, cluster_key, nodes, batch in CASES:
        model = Model.get(model_spec) if isinstance(model_spec, str) else Model(*model_spec)
        cluster = Cluster.get(cluster_key, nodes=nodes)
        rows = plan_space(model, cluster, batch, cp=1, recompute=list(RECOMPUTE_MODES)).to_dict("records")
        step = max(1, len(rows) // plans_per_case)
        plans = [{k: (r[k].item() if hasattr(r[k], "item") else r[k]) for k in COMMON_FIELDS} for r in rows[::step][:plans_per_case]]
        gpu = cluster.gpu
        llm_gpu = dict(
            name=gpu.name, mem_per_GPU_in_GB=gpu.hbm_bytes / 1024**3, hbm_bandwidth_in_GB_per_sec=gpu.hbm_bytes_per_s / 1e9,
            intra_node_bandwidth_in_GB_per_sec=cluster.intra.bandwidth_bytes_per_s / 1e9, intra_node_min_message_latency=cluster.intra.latency_s,
            peak_fp16_TFLOPS=gpu.bf16_flops / 1e12, inter_node_bandwidth_in_GB_per_sec=cluster.inter_bytes_per_s_per_gpu / 1e9)
        shape = {k: getattr(model, k) for k in SHAPE_FIELDS}
        cases.append({"name": name, "shape": shape, "cluster": cluster_key, "nodes": nodes, "global_batch": batch, "plans": plans, "llm_gpu": llm_gpu})
    return cases


def extract_v1(into: Path) -> str | None:
    """labs/ of V1_COMMIT under `into`; None when done, else why not."""
    try:
        subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{V1_COMMIT}^{{commit}}"], check=True, capture_output=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", V1_COMMIT, "labs"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return f"commit {V1_COMMIT} is not in the history of {REPO} (a shallow clone?)"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return None


def has_llm_analysis(python: str) -> bool:
    return subprocess.run([python, "-c", "import llm_analysis.analysis"], capture_output=True, env=dict(os.environ, TRANSFORMERS_VERBOSITY="error")).returncode == 0


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def run(args) -> dict:
    """Every measure, printed as it comes; returns the targets' measured values (None: skipped)."""
    started = time.perf_counter()
    cases = build_cases(args.plans)
    with tempfile.TemporaryDirectory(prefix="bench_v1_") as tmp:
        workers = {"current": Worker("current engine", sys.executable, "labs", REPO)}
        why_not_v1 = extract_v1(Path(tmp))
        if why_not_v1:
            print(f"v1: skipped, {why_not_v1}")
        else:
            workers["v1"] = Worker(f"v1 ({V1_COMMIT})", sys.executable, "labs", Path(tmp))
        llm_python = args.llm_analysis_python or sys.executable
        if has_llm_analysis(llm_python):
            workers["llm-analysis"] = Worker("llm-analysis", llm_python, "llm")
        else:
            print(f"llm-analysis: skipped, not importable by {llm_python} (pip install -e '.[bench]')")
        try:
            masks = [w.ask("setup", cases=cases) for w in workers.values()]
            keep = [[all(m[c][i] for m in masks) for i in range(len(case["plans"]))] for c, case in enumerate(cases)]
            for w in workers.values():
                w.ask("keep", masks=keep)
            counts = [sum(k) for k in keep]
            per_case = ", ".join(f"{n} of {case['name']}" for case, n in zip(cases, counts))
            print(f"estimate() on {sum(counts)} plans ({per_case}); {args.rounds} rounds, engines interleaved, medians")
            sweepers = [name for name in ("current", "v1") if name in workers]
            # a fast engine loops over the plans several times a round, so that a round lasts
            # at least ROUND_S and a scheduler's hiccup is a small part of it
            for w in workers.values():
                w.ask("estimate_s", repeat=1)  # warm-up: imports, caches
            repeat = {name: max(1, math.ceil(ROUND_S / sum(w.ask("estimate_s", repeat=1)))) for name, w in workers.items()}
            est = {name: [] for name in workers}
            swp = {name: [] for name in sweepers}
            for name in sweepers:
                workers[name].ask("sweep_s")  # warm-up
            sweep_bytes = {name: workers[name].ask("sweep_bytes") for name in sweepers}
            order = list(workers)
            for r in range(args.rounds):
                turn = order[r % len(order):] + order[: r % len(order)]
                for name in turn:
                    est[name].append([t / repeat[name] for t in workers[name].ask("estimate_s", repeat=repeat[name])])
                    if name in swp:
                        swp[name].append(workers[name].ask("sweep_s"))
            space_index = [c["name"] for c in cases].index(SPACE_CASE)
            loop_per_plan, looped = workers["current"].ask("loop_s", case=space_index, plans=args.loop_plans)
        finally:
            for w in workers.values():
                w.close()

    def per_plan(name, case=None):  # median over rounds of (seconds / plans)
        idx = range(len(cases)) if case is None else [case]
        return statistics.median(sum(t[i] for i in idx) / sum(counts[i] for i in idx) for t in est[name])

    def sweep_per_plan(name, case=None):
        idx = range(len(cases)) if case is None else [case]
        return statistics.median(sum(t[i][0] for i in idx) / sum(t[i][1] for i in idx) for t in swp[name])

    print("\nestimate() per plan:")
    for c, case in enumerate(cases):
        print(f"  {case['name']:<26} " + "   ".join(f"{name} {fmt_s(per_plan(name, c))}" for name in workers))
    print(f"  {'all plans':<26} " + "   ".join(f"{name} {fmt_s(per_plan(name))}" for name in workers))
    print("sweep() per plan (each engine's whole default space):")
    for c, case in enumerate(cases):
        rows = "   ".join(f"{name} {fmt_s(sweep_per_plan(name, c))} ({swp[name][0][c][1]:,} plans)" for name in sweepers)
        print(f"  {case['name']:<26} {rows}")
    print(f"  {'all cases':<26} " + "   ".join(f"{name} {fmt_s(sweep_per_plan(name))}" for name in sweepers))
    print("sweep() memory per plan (peak bytes allocated during a sweep, tracemalloc, / plans):")
    for c, case in enumerate(cases):
        print(f"  {case['name']:<26} " + "   ".join(f"{name} {sweep_bytes[name][c]:,.0f} B" for name in sweepers))
    print("sweep() pages faulted per plan (minor faults x page size / plans, median over the timed rounds; a trimmed heap faults again):")
    for c, case in enumerate(cases):
        print(f"  {case['name']:<26} " + "   ".join(
            f"{name} {statistics.median(t[c][2] / t[c][1] for t in swp[name]):,.0f} B" for name in sweepers))

    space_s = statistics.median(t[space_index][0] for t in swp["current"])
    space_rows = swp["current"][0][space_index][1]
    print(f"\n{SPACE_CASE}: {space_rows:,} plans swept in {fmt_s(space_s)} ({space_rows / space_s:,.0f} plans/s); "
          f"estimate() loop {1 / loop_per_plan:,.0f} plans/s (timed on {looped}); sweep speed-up over the loop "
          f"{loop_per_plan * space_rows / space_s:,.0f}x (no target: it grows when estimate() slows)")
    print(f"bench run time {time.perf_counter() - started:.0f} s")
    current = per_plan("current")
    sweep_ratios = {f"sweep() vs v1, {case['name']}": sweep_per_plan("v1", c) / sweep_per_plan("current", c) if "v1" in swp else None
                    for c, case in enumerate(cases)}
    return {
        **sweep_ratios,
        "estimate() vs v1": per_plan("v1") / current if "v1" in est else None,
        "estimate() vs llm-analysis": per_plan("llm-analysis") / current if "llm-analysis" in est else None,
        f"whole space sweep, {SPACE_CASE} (s)": space_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds (default 7)")
    parser.add_argument("--plans", type=int, default=100, help="plans per case for estimate() (default 100)")
    parser.add_argument("--loop-plans", type=int, default=1000, help="plans of the 530B space for the loop (default 1000)")
    parser.add_argument("--llm-analysis-python", help="an interpreter that has llm-analysis (default: this one)")
    parser.add_argument("--serve", choices=("labs", "llm"), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.root)
        return 0
    sys.path.insert(0, str(REPO))
    measured = run(args)
    failed = False
    print()
    for name, value in measured.items():
        threshold, at_least = TARGETS[name]
        if value is None:
            print(f"SKIP  {name}: not measured")
            continue
        ok = value >= threshold if at_least else value < threshold
        failed |= not ok
        what = f"{value:.2f}x (target >= {threshold:g}x)" if at_least else f"{value:.3f} s (target < {threshold:g} s)"
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {what}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
