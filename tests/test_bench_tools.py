"""The benchmarks' pure helpers: how bench_browser reads a slider's room and picks the heaviest
instrument, and that bench_labs empties every cache of the labs' code before it times a call.
No timing here."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bb():
    return load("bench_browser")


@pytest.fixture(scope="module")
def bl():
    return load("bench_labs")


def slider(now, lo, hi, steps=(), step=1, label="x"):
    return {"label": label, "now": now, "min": lo, "max": hi, "steps": list(steps), "step": step, "disabled": False}


def test_room_counts_steps_by_index_or_by_step(bb):
    # a steps slider reports its index: Lab 07's m slider, [1, 2, ..., 256] at 8
    assert bb.room(slider(3, 0, 8, steps=[1, 2, 4, 8, 16, 32, 64, 128, 256])) == {"ArrowRight": 5, "ArrowLeft": 3}
    # a start/stop/step slider reports its value: 0.5 .. 2.0 by 0.1 at 1.0
    assert bb.room(slider(1.0, 0.5, 2.0, step=0.1)) == {"ArrowRight": 10, "ArrowLeft": 5}
    assert bb.room(slider(100, 0, 100, step=5)) == {"ArrowRight": 0, "ArrowLeft": 20}


def test_a_slider_moves_toward_its_end_with_more_room(bb):
    assert bb.direction(slider(3, 0, 8, steps=range(9))) == "ArrowRight"
    assert bb.direction(slider(100, 0, 100, step=5)) == "ArrowLeft"
    assert bb.direction(slider(2, 0, 4, steps=range(5))) == "ArrowRight"  # a tie goes right


def test_sliders_are_found_by_label(bb):
    infos = [slider(0, 0, 6, label="Stages p"), slider(0, 0, 8, label="Micro-batches m")]
    assert bb.slider_index(infos, "Micro-batches") == 1
    with pytest.raises(ValueError, match="Stages p"):
        bb.slider_index(infos, "Chunks")


def test_the_heaviest_is_the_slowest_move_of_the_survey(bb):
    rows = [dict(what="play", lab_s=0.3), dict(what="m", lab_s=0.9), dict(what="v", lab_s=0.5)]
    assert bb.heaviest(rows)["what"] == "m"
    assert bb.ratio_of_medians([0.3, 0.6, 0.9], [0.2, 0.3, 0.4]) == pytest.approx(2.0)


def test_every_cache_of_the_labs_code_is_emptied_before_a_timed_call(bl):
    from labs.core.scenarios import lab05, lab13

    lab13.split_report("mlp-gelu", 2)
    lab05.dp_wall_estimate(gpus=64, global_batch=lab05.DP_WALL_GLOBAL_BATCH, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
    caches = bl.lab_caches()
    assert lab13._split_report in caches and lab05.dp_wall_estimate in caches
    assert bl._cold() == len(caches)
    assert all(c.cache_info().currsize == 0 for c in caches)


def test_a_notebook_by_its_path_is_benched_by_its_first_question_and_the_commits_of_the_rest(bb):
    from labs.variants import variant

    lab = bb.notebook_lab(str(ROOT / "labs" / "problems" / "ps02_memory.py"))
    assert (lab.file, lab.module, lab.question) == ("problems/ps02_memory.py", "ps02_memory", "state_bytes")
    questions = list(variant("ps02_memory", "student").questions)
    assert lab.commits == tuple(questions[1:]) and len(lab.commits) >= 5  # each later problem's commit, in page order
    assert lab.radios == {}  # a click on an answer runs no cell (labs/core/problem_ui.Answer): not an instrument
