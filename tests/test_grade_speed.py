"""What keeps grading a class within its budget (benchmarks/bench_grade.py prints the budget; these
check the mechanisms, not the time)."""

from labs.core.scenarios import lab13


def test_lab13_split_runs_on_one_blas_thread_once_per_setting(monkeypatch):
    """OpenBLAS's threads waiting for each other on a busy machine made each of Lab 13's 24
    settings cost 0.1-0.3 s of CPU on 32 x 128 arrays; on one thread all 24 cost 0.3 s."""
    from threadpoolctl import threadpool_info

    from labs.core.engine import tensor_parallel as tpm

    seen = []
    real = tpm.run_block

    def counting(*args, **kwargs):
        seen.append(max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1))
        return real(*args, **kwargs)

    monkeypatch.setattr(tpm, "run_block", counting)
    lab13._split_report.cache_clear()
    lab13._unsplit.cache_clear()  # the unsplit block is run once per block and kept (every setting of it compares against it)
    first = lab13.split_report("attention", 4, True)
    again = lab13.split_report("attention", 4, True)
    assert seen == [1, 1]  # the unsplit block and the split one, each on one BLAS thread, and not again
    assert first == again and first["output_diff"] < 1e-9 and first["calls"]
    lab13.split_report("attention", 2, True)
    assert seen == [1, 1, 1]  # another setting of the same block runs its split only
    lab13._split_report.cache_clear()
