import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Class dashboard: a folder of design ledgers",
)

with app.setup:
    import csv
    import html
    import json
    import math
    from pathlib import Path

    import marimo as mo
    import pandas as pd
    import plotly.graph_objects as go

    from labs.grading import grader as grade
    from labs.core import lecture, ledger_fast
    from labs.core.scenarios import QUESTION_OPTIONS
    from labs.core.scenarios import lab09
    from labs.core.state import Roster, normalise_student
    from labs.core.style import COLORS
    from labs.gradebook import book as points_book, cache as class_cache, due, marks, points
    from labs.grading import questions

    # The design steps drawn as TP x PP scatters: label -> (lab, step, the scenario input or None)
    DESIGN_STEPS = {
        "Lab 05 Act II: GPT-3 175B on 1,024 H100s": ("05_parallelism", "act2", None),
        **{f"Lab 09: {label}": (lab09.LAB, "worksheet", key) for key, label in lab09.JOB_LABELS.items()},
    }
    # One committed answer: the letter pressed (`answer`), the option it names in the student's own variant
    # (`option`: its text; `option_id`: which option across variants, never shown), the right option's text for
    # them, right at their own key; a typed number with the student's key and the relative error
    ANSWER_COLUMNS = ["student", "file", "lab", "step", "question", "answer", "option", "option_id", "key_option", "right", "changed",
                      "misconception", "stands_for", "value", "key_value", "error", "numeric", "variant"]
    # A typed number's error against the student's own key, (typed - key) / key, in bands: the labs'
    # misconceptions are off by factors (half, double, four times)
    ERROR_BINS = [(-math.inf, -0.8, "under ÷5"), (-0.8, -0.6, "about ÷4 to ÷3"), (-0.6, -0.3, "about ÷2"), (-0.3, -0.05, "5-30% low"),
                  (-0.05, 0.05, "within 5%"), (0.05, 0.3, "5-30% high"), (0.3, 1.5, "about ×2"), (1.5, 3.5, "about ×3 to ×4"), (3.5, math.inf, "over ×4")]
    LECTURE_REFRESH_OPTIONS = ["5s", "10s", "30s"]
    LECTURE_REFRESH_DEFAULT = None  # off until the instructor picks an interval (a live page never idles: see the panel's note)
    try:
        ARGS = dict(mo.cli_args())  # --ledgers, --roster, --points, --due, --marks, --lecture, --salt
    except Exception:  # imported outside a marimo runtime (a test): no command line
        ARGS = {}


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Class dashboard

    The instructor's view of a folder of ledgers (it is not one of the labs: `marimo run labs/`
    does not list it). Every ledger is read through `labs.grade`: each step's outcome is
    recomputed by the engine from the inputs the student recorded, and each question is judged
    by the answer the student committed first, submitted or not. Nothing stored in a ledger is
    trusted, and nothing in one is run. Files are graded once and kept by their digest: a reread
    grades only the files that changed.

    `marimo run instructor/class_dashboard.py -- --ledgers DIR [--roster roster.csv] [--points
    points.toml] [--due due.toml] [--marks marks.json] [--lecture DIR]`, or type the folder below.
    """)
    return


@app.cell
def _():
    folder_input = mo.ui.text(value=str(ARGS.get("ledgers") or ""), label="Folder of ledgers", full_width=True)
    folder_input
    return (folder_input,)


@app.cell
def _():
    roster_input = mo.ui.text(value=str(ARGS.get("roster") or ""), label="Roster CSV (optional)", full_width=True)
    roster_input
    return (roster_input,)


@app.cell
def _():
    reread_button = mo.ui.run_button(label="Read the folder again")
    reread_timer = mo.ui.refresh(options=["10s", "30s", "1m"], label="or every")
    mo.hstack([reread_button, reread_timer], justify="start")
    return reread_button, reread_timer


@app.cell
def _(folder_input, reread_button, reread_timer, roster_input):
    reread_button, reread_timer
    mo.stop(not folder_input.value.strip(), mo.md("Type the folder that holds the class's ledgers (`.json` files) above."))
    mo.stop(not Path(folder_input.value.strip()).is_dir(), mo.callout(mo.md(f"`{folder_input.value.strip()}` is not a folder."), kind="warn"))
    try:
        roster = load_roster(roster_input.value.strip()) if roster_input.value.strip() else None
        roster_error = None
    except (OSError, ValueError) as _err:
        roster, roster_error = None, str(_err)
    class_cache_ = class_cache.shared(ARGS.get("salt"))
    # A served page draws its first chart from each ledger's answers alone (ledger_fast.skim, 0.1-0.5
    # ms a ledger); every ledger is then read and validated in full below the chart (check_read), which
    # draws again from the validated ledgers where they differ. Run as a script (app.run: no second
    # run), the ledgers are validated first.
    first_documents = (ledger_fast.skim(grade.collect([folder_input.value.strip()]), grade.MAX_BYTES) if mo.running_in_notebook()
                       else class_cache_.read(folder_input.value.strip())[0])
    get_validated, set_validated = mo.state(None)
    return class_cache_, first_documents, get_validated, roster, roster_error, set_validated


@app.cell
def _(class_cache_, first_documents, get_validated):
    # the ledgers the answers are read from: the first read's, or the validated ones where those differ
    charted_documents = first_documents if get_validated() is None else get_validated()
    answers_by_lab = {}  # lab -> its committed answers, judged when a chart or the whole class first asks

    def answers_of(lab):
        if lab not in answers_by_lab:
            answers_by_lab[lab] = commit_answers(charted_documents, class_cache_.salt, labs=(lab,))
        return answers_by_lab[lab]
    return answers_of, charted_documents


@app.cell(hide_code=True)
def _(answers, read_documents, read_problems, roster, roster_error):
    mo.vstack([
        mo.md(
            f"**{len(read_documents)} ledgers** from **{answers['student'].nunique()} students** with answers, **{len(read_problems)} files not read**"
            + (f", roster of **{len(roster.codes)}**" if roster is not None else "")
            + f"; {len(answers)} committed answers, each judged at the student's own variant. The grading of every step follows below the charts."
        ),
        mo.callout(mo.md(f"The roster could not be read: {plain(roster_error)}"), kind="warn") if roster_error else mo.md(""),
    ])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The prediction questions

    A chart of one question's committed answers (pick the question), then a table with one row per
    question: how many committed an answer or skipped it, the share right, and how
    many changed their answer after committing (the first answer is the one graded; trying other
    answers after the reveal is what the labs ask, so a change is no flag). Each student has their
    own variant of a lab (their numbers, their option order, their key): every answer is read as
    the option it names in the student's own variant and judged at the student's own key, which
    the engine computes; the charts count options by what they say, never by letter. A typed
    number is shown as its error against the student's own key. A student who handed in several
    files counts once, by the first file.
    """)
    return


@app.cell
def _(charted_documents):
    # the questions with an answer, read without a variant: the first chart waits for its own lab's variants only
    answered = answered_questions(charted_documents)
    question_dropdown = mo.ui.dropdown(
        options={f"{lab_name(lab)} · {question}": f"{lab}|{question}" for lab, question in answered},
        value=next(iter(f"{lab_name(lab)} · {question}" for lab, question in answered), None),
        label="Question",
    )
    question_dropdown
    return answered, question_dropdown


@app.cell
def _(answers_of, question_dropdown):
    mo.stop(question_dropdown.value is None, mo.md("No question has a committed answer yet."))
    question_key = tuple(question_dropdown.value.split("|", 1))
    answer_bars = answer_distribution(answers_of(question_key[0]), question_key)
    return answer_bars, question_key


@app.cell
def _(answer_bars, question_key):
    answer_plot = mo.ui.plotly(answer_figure(answer_bars, question_key), label="Click a bar to list its students")
    answer_plot
    return (answer_plot,)


@app.cell
def _(answer_bars, answer_plot, answers_of, question_key):
    bar_students = answer_bars.iloc[picked_rows(answer_plot, answer_bars, "answer")]
    students_panel(bar_students, "Click a bar above to list the students who committed that answer.", answers_of(question_key[0]), question_key)
    return (bar_students,)


@app.cell
def _(charted_documents, class_cache_, folder_input, set_validated):
    # every ledger read and validated, after the first chart (check_read: the chart's answers were read
    # from the same ledgers, or it is drawn again from these)
    read_documents, read_problems = check_read(class_cache_, folder_input.value.strip(), charted_documents, set_validated)
    return read_documents, read_problems


@app.cell
def _(answered, answers_of):
    # every lab's answers, judged after the first chart is drawn (its own lab's are judged once)
    answers = answers_of_labs({lab: answers_of(lab) for lab in {lab for lab, _ in answered}})
    return (answers,)


@app.cell
def _(answers):
    questions_table = question_summary(answers)
    mo.ui.table(questions_table, selection=None, page_size=20, show_column_summaries=False)
    return (questions_table,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Grading

    Every step of every ledger, recomputed by the engine from the inputs the student recorded
    (`labs.grade`): the flags, the designs, the marking and the grade book below read it. Files
    are graded once and kept by their digest: a reread grades only the files that changed.
    """)
    return


@app.cell
def _(class_cache_, problems, table):
    _files = table["file"].nunique() if not table.empty else 0
    mo.md(f"**{_files} ledgers** graded from **{table['student'].nunique() if not table.empty else 0} students**, **{len(problems)} files not graded** "
          f"({class_cache_.regraded} files graded on this read, the rest unchanged).")
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Live lecture

    Hold a question's reveal while the class commits, watch the answers arrive, then release it:
    every student who has committed sees the reveal at once. The histogram counts options by what
    they say (each student's letter read in their own variant), green where right at their own
    key. It refreshes when you pick an interval (off by default: a page that redraws every few
    seconds is never idle, and a projected chart that jumps while you speak distracts more than
    it informs; 10 s is enough in a lecture), or press the refresh button.
    The shared state is the folder `LABS_LECTURE_DIR` names (the hub config sets it; `--lecture DIR`
    here); without it the histogram counts the ledgers in the folder above.
    """)
    return


@app.cell
def _():
    lecture_question = mo.ui.dropdown(
        options={f"{lab_name(lab)} · {q}": f"{lab}|{q}" for lab, q in questions.questions()},
        value=next(f"{lab_name(lab)} · {q}" for lab, q in questions.questions()), label="Question",
    )
    hold_button = mo.ui.run_button(label="Hold the reveal", kind="warn")
    release_button = mo.ui.run_button(label="Release the reveal", kind="success")
    lecture_timer = mo.ui.refresh(options=LECTURE_REFRESH_OPTIONS, default_interval=LECTURE_REFRESH_DEFAULT, label="refresh")
    mo.hstack([lecture_question, hold_button, release_button, lecture_timer], justify="start", wrap=True)
    return hold_button, lecture_question, lecture_timer, release_button


@app.cell
def _(hold_button, lecture_question, release_button):
    lecture_dir = lecture.directory(ARGS.get("lecture"))
    live_key = tuple(lecture_question.value.split("|", 1))
    if lecture_dir is not None and hold_button.value:
        lecture.hold(*live_key, path=lecture_dir)
    if lecture_dir is not None and release_button.value:
        lecture.release(*live_key, path=lecture_dir)
    return lecture_dir, live_key


@app.cell
def _(answers, class_cache_, lecture_dir, lecture_timer, live_key):
    lecture_timer
    if lecture_dir is not None:
        _dropped = lecture.read_answers(*live_key, path=lecture_dir, check_owner=not ARGS.get("lecture-any-owner"))
        live_answers = live_rows(dict(_dropped), live_key, class_cache_.salt)
        live_notes = list(_dropped.notes)
        live_source = f"answers dropped in `{lecture_dir}`"
    else:
        live_answers = answers[(answers["lab"] == live_key[0]) & (answers["question"] == live_key[1])]
        live_notes = []
        live_source = "the ledgers in the folder (no lecture folder: `--lecture DIR` or LABS_LECTURE_DIR)"
    live_bars = answer_distribution(live_answers, live_key)
    live_counts = dict(zip(live_bars["answer"], live_bars["students"]))
    held_now = lecture_dir is not None and lecture.is_held(*live_key, path=lecture_dir)
    mo.vstack([
        mo.md(f"**{'Held' if held_now else 'Not held'}** · {len(live_answers)} committed · from {live_source}"),
        *[mo.callout(mo.plain_text(n), kind="warn") for n in live_notes],
        mo.ui.plotly(answer_figure(live_bars, live_key, big=True)),
    ])
    return held_now, live_answers, live_bars, live_counts


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Misconceptions

    Each wrong option a lab offers stands for a misconception (named beside the option in the
    lab's scenario module). A cell counts the committed answers of one student that stand for one
    misconception; click it to see them.
    """)
    return


@app.cell
def _(answers):
    misconceptions = misconception_matrix(answers)
    return (misconceptions,)


@app.cell
def _(misconceptions):
    mo.stop(misconceptions.empty, mo.md("No wrong committed answers yet."))
    heat_plot = mo.ui.plotly(heatmap_figure(misconceptions), label="Students against misconceptions")
    heat_plot
    return (heat_plot,)


@app.cell
def _(answers, heat_plot, misconceptions):
    _cells = [(p.get("x"), p.get("y")) for p in (heat_plot.value or []) if isinstance(p, dict)]
    _wrong = answers[answers["misconception"].ne("")]
    heat_students = _wrong[[(s, m) in set(_cells) for s, m in zip(_wrong["student"], _wrong["misconception"])]] if _cells else _wrong.iloc[0:0]
    _held = misconceptions.gt(0).sum(axis=1).sort_values(ascending=False).rename("students holding it").reset_index()
    mo.vstack([
        students_panel(heat_students, "Click a cell to list that student's answers behind it."),
        mo.ui.table(_held, selection=None, page_size=8, show_column_summaries=False, label="How many students hold each misconception"),
    ])
    return (heat_students,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Designs

    Every submitted design of the 3D lab (05, Act II) and the 64-GPU worksheet (09), placed by its
    tensor- and pipeline-parallel degrees and coloured by the MFU the engine computes for it; ✕ marks
    designs that do not fit in memory. A marker's size grows with the students behind it; click
    one (or drag a box) to list them.
    """)
    return


@app.cell
def _():
    design_dropdown = mo.ui.dropdown(options=list(DESIGN_STEPS), value=next(iter(DESIGN_STEPS)), label="Design step")
    design_dropdown
    return (design_dropdown,)


@app.cell
def _(design_dropdown, table):
    designs = design_points(table, DESIGN_STEPS[design_dropdown.value])
    return (designs,)


@app.cell
def _(design_dropdown, designs):
    mo.stop(designs.empty, mo.md("No submitted design for this step yet."))
    design_plot = mo.ui.plotly(design_figure(designs, design_dropdown.value), label="TP x PP, coloured by MFU")
    design_plot
    return (design_plot,)


@app.cell
def _(design_plot, designs):
    design_students = designs.iloc[picked_rows(design_plot, designs, "design")]
    _rows = design_students if design_students.empty else design_students.explode("students")[["tp", "pp", "fits", "mfu", "students"]].rename(columns={"students": "student"})
    students_panel(_rows, "Click a design above to list its students.")
    return (design_students,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Who has not submitted, and what needs a look
    """)
    return


@app.cell
def _(roster, table):
    missing = not_submitted(table, roster)
    mo.vstack([
        mo.md(f"**{len(missing)} students** have not submitted every lab" + (" on the roster." if roster is not None else " (against the ids seen in the folder; give a roster to include students with no ledger at all).")),
        mo.ui.table(missing, selection=None, page_size=10, show_column_summaries=False) if len(missing) else mo.md(""),
    ])
    return (missing,)


@app.cell
def _(problems, scores):
    flags = flag_rows(scores)
    unread = pd.DataFrame(problems, columns=["file", "why it was not graded"])
    mo.vstack([
        mo.md(f"**{len(flags)} ledgers flagged** (a stored outcome the engine disagrees with, or an identity problem); **{len(unread)} files not graded**."),
        mo.ui.table(flags, selection=None, page_size=10, show_column_summaries=False) if len(flags) else mo.md(""),
        mo.ui.table(unread, selection=None, page_size=10, show_column_summaries=False) if len(unread) else mo.md(""),
    ])
    return flags, unread


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Marking free text

    Lab 09's one-line reasons and its paragraph, one student at a time: pick a level of each
    field's rubric (its points come from the points table) and save. Marks go to the marks file,
    which `python -m labs.grade ... --marks marks.json` reads into the totals.
    """)
    return


@app.cell
def _():
    marks_input = mo.ui.text(value=str(ARGS.get("marks") or "marks.json"), label="Marks file", full_width=True)
    marks_input
    return (marks_input,)


@app.cell
def _(documents, table):
    to_mark = marking_queue(table, documents)
    get_marking, set_marking = mo.state(0)
    return get_marking, set_marking, to_mark


@app.cell
def _(get_marking, set_marking, to_mark):
    previous_button = mo.ui.button(label="← Previous student", on_click=lambda _: set_marking(lambda i: max(0, i - 1)))
    next_button = mo.ui.button(label="Next student →", on_click=lambda _: set_marking(lambda i: min(max(len(to_mark) - 1, 0), i + 1)))
    marking_index = min(get_marking(), max(len(to_mark) - 1, 0))
    mo.hstack([previous_button, mo.md(f"student **{marking_index + 1 if to_mark else 0}** of {len(to_mark)}"), next_button], justify="start")
    return marking_index, next_button, previous_button


@app.cell
def _(documents, marking_index, marks_input, to_mark):
    mo.stop(not to_mark, mo.md("_No free text handed in yet._"))
    marking_student, _file, marking_lab, _step = to_mark[marking_index]
    marking_points = points.load(ARGS.get("points"))
    _saved = safe_marks(marks_input.value).get(marking_student, {}).get(marking_lab, {})
    _inputs = documents[_file]["labs"][marking_lab][_step]["inputs"]
    marking_fields = {
        field: rubric_widget(marking_lab, field, marking_points[(marking_lab, field)].points, _saved.get(field))
        for field in questions.FREE_TEXT[(marking_lab, _step)]
    }
    save_marks_button = mo.ui.run_button(label="Save these marks")
    mo.vstack([mo.Html(f"<h3>{html.escape(marking_student)}</h3>")] + [
        mo.vstack([mo.md(f"**{field}** (out of {marking_points[(marking_lab, field)].points:g})"), quoted(_inputs.get(field)), widget])
        for field, widget in marking_fields.items()
    ] + [save_marks_button])
    return marking_fields, marking_lab, marking_points, marking_student, save_marks_button


@app.cell
def _(marking_fields, marking_lab, marking_points, marking_student, marks_input, save_marks_button):
    mo.stop(not save_marks_button.value)
    for _field, _widget in marking_fields.items():
        _level, _comment = _widget.value["level"], _widget.value["comment"]
        if _level is not None:
            marks.save(marks_input.value, marking_student, marking_lab, _field, float(_level), _comment, most=marking_points[(marking_lab, _field)].points)
    mo.Html(f"<p>Saved {html.escape(marking_student)}'s marks to <code>{html.escape(marks_input.value)}</code>.</p>")
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The grade book

    Points per student and lab (the points table, `--points`), late penalties (`--due`) and the
    marks saved above, with where each lab's hand-in time comes from (a signed server entry, or
    the student's own clock). The same numbers `python -m labs.grade --gradebook` writes.
    """)
    return


@app.cell
def _(documents, marks_input, roster, table):
    book = points_book.build(table, documents, points.load(ARGS.get("points")), due.load(ARGS.get("due")), safe_marks(marks_input.value),
                           sorted(roster.codes) if roster is not None else ())
    gradebook_view = book.totals
    mo.ui.table(gradebook_view, selection=None, page_size=15, show_column_summaries=False)
    return book, gradebook_view


@app.cell
def _(book, gradebook_view, scores, table):
    gradebook = gradebook_table(scores, None)
    mo.hstack([  # each CSV is written when its button is pressed
        mo.download(data=lambda: grade.csv_bytes(gradebook_view), filename="gradebook.csv", mimetype="text/csv", label="Download the grade book (CSV)"),
        mo.download(data=lambda: grade.csv_bytes(table) if not table.empty else b"", filename="steps.csv", mimetype="text/csv", label="Download every graded step (CSV)"),
    ], justify="start")
    return (gradebook,)


@app.function
def lab_name(lab: str) -> str:
    """`09_64gpu_design` -> `09 64gpu design`."""
    return lab.replace("_", " ")


@app.function
def load_roster(path: str) -> Roster:
    """A roster CSV: `student,code` (a shared server's roster) or a `student` column alone."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f for f in (reader.fieldnames or []) if f]
        names = {f.strip().lower(): f for f in fields}
        if "student" not in names:
            raise ValueError(f"{path}: a roster needs a `student` column; found {fields}")
        if "code" in names:
            return Roster.load(path)
        students = [normalise_student(row[names["student"]] or "") for row in reader]
    return Roster({s: "" for s in students}, path)


@app.function
def asked_question(lab: str, question: str, student: str, salt, recorded=None, cache: dict | None = None, current: bool = False, token=None):
    """(the labs.variants Question the student answered, or None, and the edition): their
    variant's, regenerated from their id and the class salt at the edition their ledger records
    (`recorded`), or at the lab's current edition with `current` (a live lecture's drop, written
    by the lab as it is now); a ledger without a variant gets the lab's default question (Labs 12
    and 13) or None (the others: their options are the lab's table, QUESTION_OPTIONS)."""
    if token is None:  # `token`: a caller's own name for (lab, student, record) in `cache`, spared writing the record out per question
        token = (lab, student, json.dumps(recorded, sort_keys=True, default=str) if recorded is not None else None, current)
    if cache is not None and token in cache:
        drawn = cache[token]
    else:
        try:
            drawn = questions.student_variant(lab, student, salt, recorded) if recorded is not None or current else None
        except Exception:  # noqa: BLE001 - an id the variants refuse: the lab's default question
            drawn = None
        if cache is not None:
            cache[token] = drawn
    if drawn is not None and question in drawn.questions:
        return drawn.questions[question], drawn.version
    try:
        return questions._question(lab, question, None), None
    except Exception:  # noqa: BLE001
        return None, None


@app.function
def judge_answer(lab: str, question: str, answer, asked) -> dict:
    """One committed answer as the student saw it: the option's text (`option`), the right option's
    text for them (`key_option`), whether it is right at their own key, the misconception a wrong
    option stands for; for a number, the number, their key and the relative error. `option_id`
    names the option across variants (its id in the scenario module, with the edition when not
    the first) and is never shown."""
    out = {"option": "", "option_id": "", "key_option": "", "right": None, "misconception": "", "stands_for": "", "value": None, "key_value": None, "error": None,
           "numeric": False}
    if answer is None:
        out["option"] = "skipped"
        return out
    if asked is not None and asked.numeric:
        from labs.core.variants import parse_number

        value, key = parse_number(answer), asked.spec.answer
        out.update(numeric=True, value=value, key_value=key, right=asked.judge(answer), option=str(answer))
        out["error"] = (value - key) / abs(key) if value is not None and key else None
        if not out["right"]:
            out["misconception"] = f"{lab_name(lab)} · {question}: a number outside the tolerance"
        return out
    if asked is not None:
        labels = {o.key: o for o in asked.options}  # by letter, in the student's order
        oid = asked.option_id(answer)
        option = labels.get(answer)
        key_letter = asked.key
        out["key_option"] = option_text(labels[key_letter]) if key_letter in labels else "none of the options"
        out["right"] = asked.judge(answer)
        if option is None:
            out.update(option="an answer the lab does not offer", option_id="?", misconception="an answer the lab does not offer" if not out["right"] else "")
            return out
        out.update(option=option.label, option_id=oid, stands_for=option.misconception)
        if not out["right"]:
            out["misconception"] = option.misconception or f"{lab_name(lab)} · {question}: {option.label}"
        return out
    table = {o.key: o for o in QUESTION_OPTIONS.get((lab, question), ())}
    engine = questions.answer_or_none(lab, question)
    out["right"] = engine is not None and answer == engine
    out["key_option"] = option_text(table[engine]) if engine in table else (engine if engine is not None and not table else "none of the options")
    option = table.get(answer)
    if table and option is None:
        out.update(option="an answer the lab does not offer", option_id="?", misconception="" if out["right"] else "an answer the lab does not offer")
        return out
    out.update(option=option.label if option is not None else str(answer), option_id=f"legacy:{answer}", stands_for=option.misconception if option is not None else "")
    if not out["right"]:
        out["misconception"] = (option.misconception if option is not None else "") or f"{lab_name(lab)} · {question}: {out['option']}"
    return out


@app.function
def option_text(option) -> str:
    """An option as the student read it; one that is only a number, with the reasoning behind it."""
    import re

    return option.label if re.search(r"[A-Za-z]{3}", option.label) or not option.misconception else f"{option.label} ({option.misconception})"


@app.function
def committed(documents: dict, labs=None):
    """Each committed answer of the ledgers, without reading a variant: (student, file, lab, step,
    question, answer, its commit record or None, the ledger's recorded variants). A question
    without a commit record counts the answer saved with its step, as the grader does; an answer
    that is neither text nor a skip is left out. One file per student (the first, by name, as
    everywhere on this page); only `labs`' questions when given."""
    first = {}
    for file in sorted(documents):
        doc = documents[file]
        if isinstance(doc, dict) and isinstance(doc.get("student"), str):
            first.setdefault(doc["student"], file)
    for student, file in sorted(first.items()):
        doc = documents[file]
        commits, saved, recorded = doc.get("predictions") or {}, doc.get("labs") or {}, doc.get("variants") or {}
        for (lab, step), spec in grade.SPECS.items():
            if labs is not None and lab not in labs:
                continue
            mine = commits.get(lab) or {}
            entry = (saved.get(lab) or {}).get(step) or {}
            stored = entry.get("predictions") if isinstance(entry.get("predictions"), dict) else {}
            for question in spec.questions:
                record = mine.get(question)
                if record is None and question not in stored:
                    continue
                answer = record["answer"] if record is not None else stored.get(question)
                if answer is not None and not isinstance(answer, str):
                    continue
                yield student, file, lab, step, question, answer, record, recorded


@app.function
def answered_questions(documents: dict) -> list[tuple[str, str]]:
    """The (lab, question) pairs with a committed answer or skip, in order: the question picker's
    list, read before any variant is drawn (the first chart waits for one lab's variants only)."""
    return sorted({(lab, question) for _, _, lab, _, question, *_ in committed(documents)})


@app.function
def commit_answers(documents: dict, salt=None, labs=None) -> pd.DataFrame:
    """One row per student and question from the ledgers' committed predictions alone (no grading:
    the first chart waits for nothing else): the letter the student pressed, the option it names
    in their own variant (labs.variants, regenerated from the id and the class salt at the edition
    the ledger records) and whether it is right at their own key, as the grader judges a commit;
    a number with its error against their own key (`labs`: only those labs' questions)."""
    cache, rows = {}, []
    for student, file, lab, step, question, answer, record, recorded in committed(documents, labs):
        asked, edition = asked_question(lab, question, student, salt, recorded.get(lab), cache, token=(lab, file))  # one file, one record a lab
        judged = judge_answer(lab, question, answer, asked)
        if judged["option_id"] and edition not in (None, 1) and not judged["option_id"].startswith(("legacy:", "?")):
            judged["option_id"] = f"{judged['option_id']}@{edition}"
        rows.append({"student": student, "file": file, "lab": lab, "step": step, "question": question,
                     "answer": "skipped" if answer is None else answer, "changed": len(record["changes"]) if record is not None else 0,
                     "variant": "yes" if lab in recorded else "", **judged})
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


@app.function
def content_label(texts: list[str], misconception: str = "") -> str:
    """One name for an option across variants: its text when every student saw the same one;
    else the text with its numbers left out ("… GB/s") when the words agree; else (an option
    that is only a number) its numbers and the reasoning behind it."""
    import re

    seen = sorted(set(texts), key=texts.index)
    if len(seen) == 1 and (re.search(r"[A-Za-z]{3}", seen[0]) or not misconception):
        return seen[0]
    masks = {re.sub(r"\d[\d,.]*", "…", t) for t in seen}
    if len(masks) == 1 and re.search(r"[A-Za-z]{3}", next(iter(masks))):
        return next(iter(masks)) + " (numbers per variant)"
    shown = ", ".join(seen[:3]) + (", …" if len(seen) > 3 else "")
    return f"{shown}: {misconception}" if misconception else f"{shown} (per variant)"


@app.function
def answer_distribution(answers: pd.DataFrame, key: tuple) -> pd.DataFrame:
    """One bar per option by what it says (each student's letter mapped to the option it names in
    their own variant; options that read alike across variants are one bar), then skipped: how
    many chose it, for how many of them it was right at their own key, how many changed after the
    commit, and who. A numeric question: one bar per band of error against each student's own
    key (the band "within 5%" and the tolerance are not the same: right is judged per student)."""
    lab, question = key
    mine = answers[(answers["lab"] == lab) & (answers["question"] == question)]
    columns = ["answer", "students", "right", "wrong", "changed", "names"]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    numeric = bool(mine["numeric"].any())
    groups: dict[str, list[int]] = {}
    if numeric:
        def band(row) -> str:
            if row.option == "skipped":
                return "skipped"
            if row.error is None or (isinstance(row.error, float) and math.isnan(row.error)):
                return "not a number"
            return next(name for lo, hi, name in ERROR_BINS if lo <= row.error < hi)

        for i, row in enumerate(mine.itertuples()):
            groups.setdefault(band(row), []).append(i)
        order = [name for _, _, name in ERROR_BINS if name in groups] + [g for g in ("not a number", "skipped") if g in groups]
        labels = {g: g for g in order}
    else:
        by_id: dict[str, list[int]] = {}
        for i, oid in enumerate(mine["option_id"]):
            by_id.setdefault(oid or "skipped", []).append(i)
        labels, merged = {}, {}
        for oid, rows in by_id.items():
            texts = [mine["option"].iloc[i] for i in rows]
            reasons = [m for m in (mine["stands_for"].iloc[i] for i in rows) if m]
            label = "skipped" if oid == "skipped" else content_label(texts, reasons[0] if reasons else "")
            merged.setdefault(label, []).extend(rows)
        groups = merged
        order = sorted((g for g in groups if g != "skipped"), key=lambda g: (-len(groups[g]), g)) + (["skipped"] if "skipped" in groups else [])
        labels = {g: g for g in order}
    rows = []
    for g in order:
        part = mine.iloc[groups[g]]
        right = int(part["right"].eq(True).sum())
        rows.append({"answer": labels[g], "students": len(part), "right": right, "wrong": int(part["right"].eq(False).sum()),
                     "changed": int(part["changed"].gt(0).sum()), "names": sorted(part["student"])})
    return pd.DataFrame(rows, columns=columns)


@app.function
def wrapped(text: str, width: int = 26) -> str:
    """An axis label on lines of about `width` characters (Plotly's <br>)."""
    import textwrap

    return "<br>".join(textwrap.wrap(text, width)[:4]) or text


@app.function
def answer_figure(bars: pd.DataFrame, key: tuple, big: bool = False) -> go.Figure:
    """Bars by option content, each split into the students for whom it was right at their own
    key (green) and those for whom it was wrong (red); skipped in grey."""
    x = [wrapped(a) for a in bars["answer"]]
    skipped = [a == "skipped" for a in bars["answer"]]
    font = dict(size=22) if big else None
    fig = go.Figure([
        go.Bar(name="right for them", x=x, y=bars["right"], marker_color=COLORS["green"], customdata=bars["answer"],
               hovertemplate="%{customdata}<br>right for %{y} of the students who chose it<extra></extra>"),
        go.Bar(name="wrong for them", x=x, y=[0 if s else w for s, w in zip(skipped, bars["wrong"])], marker_color=COLORS["red"], customdata=bars["answer"],
               hovertemplate="%{customdata}<br>wrong for %{y}<extra></extra>"),
        go.Bar(name="skipped", x=x, y=[n if s else 0 for s, n in zip(skipped, bars["students"])], marker_color=COLORS["muted"], customdata=bars["answer"],
               text=[f"{n} ({c} changed)" if c else str(n) for n, c in zip(bars["students"], bars["changed"])], textposition="outside",
               hovertemplate="%{customdata}: %{y}<extra></extra>"),
    ])
    fig.update_layout(barmode="stack", title=dict(text=f"{lab_name(key[0])} · {key[1]}: committed answers by what the option says (green: right at the student's own key)", font=font),
                      height=560 if big else 420, yaxis_title="students", legend=dict(orientation="h", y=1.08), margin=dict(t=90, b=40),
                      clickmode="event+select", xaxis=dict(tickfont=font))
    return fig


@app.function
def check_read(cache, folder: str, charted: dict, set_validated) -> tuple[dict, list]:
    """(file -> validated ledger, files not read with why): cache.read, every ledger validated.
    Where the answers charted so far were not read from exactly these ledgers' parts (a file the
    validation refuses, or one changed since), the validated ledgers are handed to the page's
    state, and every chart is drawn again from them. Below the first chart's functions, so it
    runs after the chart (see answers_of_labs)."""
    documents, problems = cache.read(folder)
    if not ledger_fast.same_part(charted, documents):
        set_validated(documents)
    return documents, problems


# Below the first chart's functions: a served page runs a cell after the function cells it calls,
# ties broken by this file's order, so the whole class's answers (the cell calling this) wait for
# the chart (tests/test_dashboard.py reads marimo's run order)
@app.function
def answers_of_labs(by_lab: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """commit_answers of the whole class from its labs' (commit_answers(..., labs=(lab,))): the
    same rows in the same order (by student, then the grader's order of labs and questions)."""
    frames = [by_lab[lab] for lab in dict.fromkeys(lab for lab, _ in grade.SPECS) if lab in by_lab and not by_lab[lab].empty]
    if not frames:
        return pd.DataFrame(columns=ANSWER_COLUMNS)
    # a lab without a typed number has its value columns empty (object): read again as the whole class's are (numbers)
    return pd.concat(frames, ignore_index=True).sort_values("student", kind="stable").reset_index(drop=True).infer_objects()


@app.function
def question_summary(answers: pd.DataFrame) -> pd.DataFrame:
    """Per question: answers committed and skipped, the share right at each student's own key, how
    many changed after the commit, the right answer (the same for everyone, or how it varies), and
    the options chosen most, by what they say."""
    from collections import Counter

    out = []
    for (lab, question), group in answers.groupby(["lab", "question"], sort=True):
        judged = group["right"].dropna()
        committed = group[group["option"].ne("skipped")]
        if bool(group["numeric"].any()):
            keys = pd.to_numeric(committed["key_value"], errors="coerce").dropna()
            engine = f"each student's own number (median {keys.median():g})" if keys.nunique() > 1 else (f"{keys.iloc[0]:g}" if len(keys) else "")
        else:
            import re

            raw = Counter(committed["key_option"])
            shares = Counter(re.sub(r"\d[\d,.]*", "…", k) for k in committed["key_option"])  # the same option, its numbers per variant
            if len(raw) == 1:
                engine = next(iter(raw))
            elif len(shares) == 1:
                engine = f"{next(iter(shares))} (numbers per variant)"
            else:
                engine = "; ".join(f"{k} ({n} of {len(committed)})" for k, n in shares.most_common(2)) + (" ..." if len(shares) > 2 else "")
            engine = engine or "none of the options"
        bars = answer_distribution(group, (lab, question))
        out.append({
            "lab": lab, "question": question, "committed": int(len(judged)), "skipped": int((group["option"] == "skipped").sum()),
            "right": int(judged.astype(bool).sum()), "share right": f"{judged.astype(bool).mean():.0%}" if len(judged) else "",
            "changed after commit": int(group["changed"].gt(0).sum()),
            "right answer": engine,
            "answers": " · ".join(f"{a if len(a) <= 40 else a[:39] + '…'}: {n}" for a, n in zip(bars["answer"], bars["students"])),
        })
    return pd.DataFrame(out, columns=["lab", "question", "committed", "skipped", "right", "share right", "changed after commit", "right answer", "answers"])


@app.function
def misconception_matrix(answers: pd.DataFrame) -> pd.DataFrame:
    """misconception x student: how many of the student's committed answers stand for it."""
    wrong = answers[answers["misconception"].ne("")]
    if wrong.empty:
        return pd.DataFrame()
    grid = wrong.groupby(["misconception", "student"]).size().unstack("student", fill_value=0)
    grid = grid.loc[grid.sum(axis=1).sort_values(ascending=False).index]
    return grid[grid.sum(axis=0).sort_values(ascending=False).index]


@app.function
def heatmap_figure(grid: pd.DataFrame) -> go.Figure:
    fig = go.Figure(go.Heatmap(
        z=grid.to_numpy(), x=list(grid.columns), y=list(grid.index), colorscale=[[0, COLORS["surface"]], [1, COLORS["red"]]],
        hovertemplate="%{x}<br>%{y}: %{z}<extra></extra>", colorbar=dict(title="answers"), xgap=1, ygap=1,
    ))
    fig.update_layout(height=max(320, 90 + 24 * len(grid)), xaxis=dict(showticklabels=len(grid.columns) <= 40, title=f"{len(grid.columns)} students, most misconceptions first"),
                      yaxis=dict(autorange="reversed"), margin=dict(l=20, t=30, b=50), clickmode="event+select")
    return fig


@app.function
def design_points(table: pd.DataFrame, which: tuple) -> pd.DataFrame:
    """The submitted designs of one design step, grouped by (TP, PP, fits): the students behind
    each, their number and the MFU the engine computed (the median when several designs share
    a place). One per student id (its first file); steps the grader refused are left out."""
    lab, step, scenario = which
    columns = ["tp", "pp", "fits", "mfu", "count", "students"]
    if table.empty or "input.tp" not in table:
        return pd.DataFrame(columns=columns)
    mine = table[(table["lab"] == lab) & (table["step"] == step) & (table["status"].eq("ok") | table["tampered"].fillna(False).astype(bool))]
    if scenario is not None and "input.scenario" in mine:
        mine = mine[mine["input.scenario"] == scenario]
    mine = mine[mine["file"].eq(mine.groupby("student")["file"].transform("min")) & mine["input.tp"].notna()]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame({
        "tp": mine["input.tp"].astype(int), "pp": mine["input.pp"].fillna(1).astype(int), "fits": mine["fits"].astype(bool),
        "mfu": pd.to_numeric(mine["mfu"], errors="coerce"), "student": mine["student"],
    })
    out = frame.groupby(["tp", "pp", "fits"], sort=True).agg(mfu=("mfu", "median"), count=("student", "size"), students=("student", lambda s: sorted(s))).reset_index()
    shift = out["fits"].map({True: 0.0, False: 0.18})  # an out-of-memory design beside a fitting one at the same place
    out["x"], out["y"] = out["tp"].map(math.log2) + shift, out["pp"].map(math.log2) + shift
    return out[columns + ["x", "y"]]


@app.function
def design_figure(points: pd.DataFrame, title: str) -> go.Figure:
    """One trace (so a click's point index is a row of `points`); drawn as lines+markers with an
    invisible line, the trace kind whose clicks marimo's Plotly view reports."""
    fig = go.Figure(go.Scatter(
        x=points["x"], y=points["y"], mode="lines+markers", line=dict(width=0),
        marker=dict(size=[12 + 4 * math.sqrt(c) for c in points["count"]], color=points["mfu"], colorscale="Viridis", cmin=0,
                    colorbar=dict(title="MFU", tickformat=".0%"), symbol=["circle" if f else "x" for f in points["fits"]],
                    line=dict(width=1, color=COLORS["ink"])),
        customdata=list(zip(points["tp"], points["pp"], points["count"], ["fits" if f else "out of memory" for f in points["fits"]])),
        hovertemplate="TP %{customdata[0]} x PP %{customdata[1]}: %{customdata[2]} students, %{customdata[3]}<br>MFU %{marker.color:.1%}<extra></extra>",
    ))
    ticks = sorted(set(points["tp"]) | set(points["pp"]) | {1, 2, 4, 8})
    fig.update_layout(
        title=dict(text=title, x=0), height=460, showlegend=False, dragmode="select", clickmode="event+select", margin=dict(t=70),
        xaxis=dict(title="TP (tensor parallel)", tickvals=[math.log2(t) for t in ticks], ticktext=[str(t) for t in ticks]),
        yaxis=dict(title="PP (pipeline stages)", tickvals=[math.log2(t) for t in ticks], ticktext=[str(t) for t in ticks]),
    )
    return fig


@app.function
def picked_rows(plot, frame: pd.DataFrame, kind: str) -> list[int]:
    """Rows of `frame` behind a plot's selection: its point indices (one trace per figure),
    else the points' x values (a bar's answer)."""
    try:
        indices = [int(i) for i in (plot.indices or [])]
    except (AttributeError, TypeError, ValueError):
        indices = []
    points = [p for p in (plot.value or []) if isinstance(p, dict)]
    if not indices and kind == "answer":
        xs = {p.get("x") for p in points}
        indices = [i for i, a in enumerate(frame["answer"]) if a in xs or wrapped(a) in xs]
    elif not indices and kind == "design":
        xy = {(round(float(p["x"]), 3), round(float(p["y"]), 3)) for p in points if isinstance(p.get("x"), (int, float)) and isinstance(p.get("y"), (int, float))}
        indices = [i for i, (x, y) in enumerate(zip(frame["x"], frame["y"])) if (round(x, 3), round(y, 3)) in xy]
    return sorted({i for i in indices if 0 <= i < len(frame)})


@app.function
def students_panel(rows: pd.DataFrame, empty_note: str, answers: pd.DataFrame | None = None, key: tuple | None = None):
    """A table of the students behind a selection; behind a bar of answers, each with the letter
    they pressed, what that option said in their variant, and the right option for them."""
    if rows is None or len(rows) == 0:
        return mo.md(f"_{empty_note}_")
    if "names" in rows:
        rows = rows.explode("names").rename(columns={"names": "student", "answer": "bar"})[["bar", "student"]]
        if answers is not None and key is not None:
            mine = answers[(answers["lab"] == key[0]) & (answers["question"] == key[1])][["student", "answer", "option", "key_option", "right"]]
            rows = rows.merge(mine.rename(columns={"answer": "pressed", "option": "their option", "key_option": "right for them"}), on="student", how="left")
    return mo.ui.table(rows.reset_index(drop=True), selection=None, page_size=15, show_column_summaries=False, label=f"{len(rows)} rows")


@app.function
def not_submitted(table: pd.DataFrame, roster) -> pd.DataFrame:
    """Students (the roster's, else every id seen) without a graded step in a lab someone submitted."""
    labs = sorted(set(table["lab"])) if not table.empty else []
    seen = {} if table.empty else table[~table["status"].fillna("").str.startswith(("invalid", "grader error"))].groupby("student")["lab"].agg(set).to_dict()
    everyone = sorted(roster.codes) if roster is not None else sorted(set(table["student"]) if not table.empty else [])
    rows = []
    for student in everyone:
        done = seen.get(student, set())
        lacking = [lab_name(lab) for lab in labs if lab not in done]
        if lacking:
            rows.append({"student": student, "no ledger": student not in seen, "labs not submitted": ", ".join(lacking), "how many": len(lacking)})
    return pd.DataFrame(rows, columns=["student", "no ledger", "labs not submitted", "how many"])


@app.function
def flag_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per student and file with a flag (from grade.scores): tampered or identity; how
    often answers changed after their commit is shown beside, never a flag by itself."""
    if scores.empty:
        return pd.DataFrame(columns=["student", "file", "tampered", "changed", "identity"])
    flagged = scores[scores["tampered"].ne("") | scores["identity"].ne("")]  # a changed answer alone is what the labs invite, not a flag
    flagged = flagged.sort_values(["student", "file"], kind="stable")
    return flagged[["student", "file", "tampered", "changed", "identity"]].reset_index(drop=True)


@app.function
def gradebook_table(scores: pd.DataFrame, roster) -> pd.DataFrame:
    """The grader's per-student scores (grade.scores: each lab's right answers out of those
    judged, and the flags), with a row for every roster student who handed nothing in."""
    book = scores
    if roster is not None:
        absent = sorted(set(roster.codes) - (set(book["student"]) if not book.empty else set()))
        if absent:
            book = pd.concat([book, pd.DataFrame({"student": absent, "file": "", "identity": "no ledger"})], ignore_index=True)
    return book.astype(object).fillna("") if not book.empty else pd.DataFrame(columns=["student", "file", "tampered", "changed", "identity"])


@app.function
def live_rows(dropped: dict, key: tuple, salt) -> pd.DataFrame:
    """The live lecture's drops ({student: letter}) as answer rows: each letter read in the
    student's variant of the lab as it is now (a drop is written by the running lab)."""
    lab, question = key
    cache, rows = {}, []
    for student, answer in sorted(dropped.items()):
        asked, _ = asked_question(lab, question, student, salt, None, cache, current=True)
        rows.append({"student": student, "file": "", "lab": lab, "step": "", "question": question, "answer": "skipped" if answer is None else answer,
                     "changed": 0, "variant": "yes", **judge_answer(lab, question, answer, asked)})
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


@app.function
def marking_queue(table: pd.DataFrame, documents: dict) -> list[tuple]:
    """(student, file, lab, step) of every submitted step with free text to mark, by student; one
    file per student (the first, as everywhere on this page)."""
    if table.empty:
        return []
    first = table[table["file"].eq(table.groupby("student")["file"].transform("min"))]
    out = []
    for (lab, step), fields in questions.FREE_TEXT.items():
        mine = first[(first["lab"] == lab) & (first["step"] == step) & first["saved"].notna()]
        for student, file in zip(mine["student"], mine["file"]):
            inputs = documents.get(file, {}).get("labs", {}).get(lab, {}).get(step, {}).get("inputs", {})
            if any(isinstance(inputs.get(f), str) and inputs.get(f).strip() for f in fields):
                out.append((student, file, lab, step))
    return sorted(out)


@app.function
def safe_marks(path: str) -> dict:
    """The marks file's marks ({} when it is missing or unreadable: the page still shows)."""
    try:
        return marks.load(path.strip() or None)
    except (OSError, ValueError):
        return {}


@app.function
def rubric_widget(lab: str, field: str, most: float, saved: dict | None):
    """A rubric's levels as a radio (value: the points) and a comment, prefilled from a saved mark."""
    levels = {f"{fraction * most:g} · {text}": str(fraction * most) for fraction, text in marks.RUBRICS.get((lab, field), [(1.0, "full marks"), (0.0, "none")])}
    chosen = next((label for label, v in levels.items() if saved and float(v) == float(saved.get("points", -1))), None)
    return mo.ui.dictionary({
        "level": mo.ui.radio(options=levels, value=chosen),
        "comment": mo.ui.text(value=(saved or {}).get("comment", ""), placeholder="a comment for the student (optional)", full_width=True),
    })


@app.function
def quoted(text) -> mo.Html:
    """A student's free text shown as typed: HTML-escaped inside a <pre>, never read as markdown (a
    markdown image in it would be fetched by the instructor's browser, with the hub's cookies)."""
    if not (isinstance(text, str) and text.strip()):
        return mo.Html("<i>blank</i>")
    return mo.Html(f'<blockquote><pre style="white-space: pre-wrap; font-family: inherit; margin: 0">{html.escape(text)}</pre></blockquote>')


@app.function
def plain(text) -> str:
    """Text for inside mo.md, escaped for HTML and for markdown (a student's id, a file name): shown
    as typed, no image fetched, no link made."""
    import re

    return re.sub(r"([\\`*_{}\[\]()<>#+!|~-])", r"\\\1", html.escape(str(text), quote=False))


@app.cell
def _(class_cache_, folder_input, read_documents, roster):
    # The grading of every step, the last cell of the file: marimo runs the cells that are ready in
    # the file's order, so every chart that needs only the commits (the answers, the live lecture,
    # the misconceptions) is drawn before this starts; its summary shows under "Grading" above.
    read_documents  # after the read: the files it parsed are not parsed again
    table, problems, documents = class_cache_.refresh(folder_input.value.strip(), roster)
    scores = grade.scores(table)
    return documents, problems, scores, table


if __name__ == "__main__":
    app.run()
