import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="Class dashboard: a folder of design ledgers",
)

with app.setup:
    import csv
    import math
    from pathlib import Path

    import marimo as mo
    import pandas as pd
    import plotly.graph_objects as go

    from labs import grade
    from labs.core import lecture
    from labs.core.scenarios import QUESTION_OPTIONS
    from labs.core.scenarios import lab09
    from labs.core.state import Roster, normalise_student
    from labs.core.style import COLORS
    from labs.gradebook import book as points_book, cache as class_cache, due, exports, marks, points, questions

    # The design steps drawn as TP x PP scatters: label -> (lab, step, the scenario input or None)
    DESIGN_STEPS = {
        "Lab 05 Act II: GPT-3 175B on 1,024 H100s": ("05_parallelism", "act2", None),
        **{f"Lab 09: {label}": (lab09.LAB, "worksheet", key) for key, label in lab09.JOB_LABELS.items()},
    }
    ANSWER_COLUMNS = ["student", "file", "lab", "step", "question", "answer", "right", "changed", "misconception", "variant"]
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
    table, problems, documents = class_cache_.refresh(folder_input.value.strip(), roster)
    answers = answer_rows(table)
    scores = grade.scores(table)
    return answers, class_cache_, documents, problems, roster, roster_error, scores, table


@app.cell(hide_code=True)
def _(answers, class_cache_, problems, roster, roster_error, table):
    _students = table["student"].nunique() if not table.empty else 0
    _files = table["file"].nunique() if not table.empty else 0
    mo.vstack([
        mo.md(
            f"**{_files} ledgers** from **{_students} students** graded, **{len(problems)} files not graded**"
            + (f", roster of **{len(roster.codes)}**" if roster is not None else "")
            + f"; {len(answers)} committed answers judged by the engine ({class_cache_.regraded} files graded on this read, the rest unchanged)."
        ),
        mo.callout(mo.md(f"The roster could not be read: {roster_error}"), kind="warn") if roster_error else mo.md(""),
    ])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The prediction questions

    One row per question: how many committed an answer or skipped it, the share the engine judges
    right, and how many changed their answer after committing (the first answer is the one graded;
    trying other answers after the reveal is what the labs ask, so a change is no flag). The
    engine's answer is computed by the engine, not read off the students who got it right.
    A student who handed in several files counts once, by the first file.
    """)
    return


@app.cell
def _(answers):
    questions_table = question_summary(answers)
    mo.ui.table(questions_table, selection=None, page_size=20, show_column_summaries=False)
    return (questions_table,)


@app.cell
def _(questions_table):
    question_dropdown = mo.ui.dropdown(
        options={f"{lab_name(r.lab)} · {r.question}": f"{r.lab}|{r.question}" for r in questions_table.itertuples()},
        value=next(iter(f"{lab_name(r.lab)} · {r.question}" for r in questions_table.itertuples()), None),
        label="Question",
    )
    question_dropdown
    return (question_dropdown,)


@app.cell
def _(answers, question_dropdown):
    mo.stop(question_dropdown.value is None, mo.md("No question has a committed answer yet."))
    question_key = tuple(question_dropdown.value.split("|", 1))
    answer_bars = answer_distribution(answers, question_key)
    return answer_bars, question_key


@app.cell
def _(answer_bars, question_key):
    answer_plot = mo.ui.plotly(answer_figure(answer_bars, question_key), label="Click a bar to list its students")
    answer_plot
    return (answer_plot,)


@app.cell
def _(answer_bars, answer_plot):
    bar_students = answer_bars.iloc[picked_rows(answer_plot, answer_bars, "answer")]
    students_panel(bar_students, "Click a bar above to list the students who committed that answer.")
    return (bar_students,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Live lecture

    Hold a question's reveal while the class commits, watch the answers arrive, then release it:
    every student who has committed sees the reveal at once. The histogram refreshes by itself.
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
    lecture_timer = mo.ui.refresh(options=["1s", "2s", "5s"], default_interval="2s", label="refresh")
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
def _(class_cache_, folder_input, lecture_dir, lecture_timer, live_key, roster):
    lecture_timer
    if lecture_dir is not None:
        live_counts = dict(lecture.histogram(*live_key, path=lecture_dir, check_owner=not ARGS.get("lecture-any-owner")))
        live_source = f"answers dropped in `{lecture_dir}`"
    else:
        _answers = answer_rows(class_cache_.refresh(folder_input.value.strip(), roster)[0])
        live_counts = _answers[(_answers["lab"] == live_key[0]) & (_answers["question"] == live_key[1])]["answer"].value_counts().to_dict()
        live_source = "the ledgers in the folder (no lecture folder: `--lecture DIR` or LABS_LECTURE_DIR)"
    held_now = lecture_dir is not None and lecture.is_held(*live_key, path=lecture_dir)
    mo.vstack([
        mo.md(f"**{'Held' if held_now else 'Not held'}** · {sum(live_counts.values())} committed · from {live_source}"),
        mo.ui.plotly(live_figure(live_counts, live_key)),
    ])
    return held_now, live_counts


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
    mo.vstack([mo.md(f"### {marking_student}")] + [
        mo.vstack([mo.md(f"**{field}** (out of {marking_points[(marking_lab, field)].points:g})"), mo.md(f"> {quoted(_inputs.get(field))}"), widget])
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
    mo.md(f"Saved {marking_student}'s marks to `{marks_input.value}`.")
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
def answer_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per student and committed answer, from the grader's table: the answer, whether the
    engine judges it right (None when skipped), how often it was changed after its commit, and the
    misconception a wrong option stands for. A student id in several files counts once (its first
    file); steps the grader could not judge are left out."""
    if table.empty:
        return pd.DataFrame(columns=ANSWER_COLUMNS)
    graded = table[table["status"].eq("ok") | table["tampered"].fillna(False).astype(bool)]
    first_file = graded.groupby("student")["file"].transform("min")
    graded = graded[graded["file"].eq(first_file)]
    rows = []
    for (lab, step), spec in grade.SPECS.items():
        mine = graded[(graded["lab"] == lab) & (graded["step"] == step)]
        for question, outcome in spec.questions.items():
            column = f"answer.{question}"
            if mine.empty or column not in mine:
                continue
            options = {o.key: o for o in QUESTION_OPTIONS.get((lab, question), ())}
            changed = mine[f"changes.{question}"] if f"changes.{question}" in mine else pd.Series(0, index=mine.index)
            # a variant's letters differ per student (labs.variants): the grader names the option in option.<question>;
            # a variant's numeric question has none
            named = mine[f"option.{question}"] if f"option.{question}" in mine else pd.Series(None, index=mine.index)
            variants = mine["variant"].fillna("") if "variant" in mine else pd.Series("", index=mine.index)
            # ... and the misconception that option stands for in the student's own variant and edition
            tagged = mine[f"misconception.{question}"] if f"misconception.{question}" in mine else pd.Series(None, index=mine.index)
            for student, file, answer, right, change, option_id, drawn, tag in zip(
                    mine["student"], mine["file"], mine[column], mine[outcome], changed, named, variants, tagged):
                answer = "skipped" if answer is None or (isinstance(answer, float) and math.isnan(answer)) else str(answer)
                judged = None if answer == "skipped" or right is None or (isinstance(right, float) and math.isnan(right)) else bool(right)
                if isinstance(option_id, str):
                    answer = option_id
                misconception = ""
                if judged is False and drawn and not isinstance(option_id, str):
                    misconception = f"{lab_name(lab)} · {question}: a number outside the tolerance"
                elif judged is False and isinstance(tag, str) and tag:
                    misconception = tag
                elif judged is False and isinstance(option_id, str):  # an option the student's variant offered, naming no misconception
                    option = options.get(answer)  # the lab's table has an edition's id only where it is the same option
                    misconception = f"{lab_name(lab)} · {question}: {option.label if option is not None else answer}"
                elif judged is False:
                    option = options.get(answer)
                    if options and option is None:
                        misconception = "an answer the lab does not offer"
                    else:  # the option's named misconception, else the question and option themselves
                        misconception = (option.misconception if option is not None else "") or f"{lab_name(lab)} · {question}: {answer}"
                rows.append((student, file, lab, step, question, answer, judged, int(change or 0), misconception, drawn or ""))
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


@app.function
def question_summary(answers: pd.DataFrame) -> pd.DataFrame:
    """Per question: answers committed and skipped, the share right among the committed ones, how
    many changed after the commit, and the distribution of answers (with the engine's answer)."""
    out = []
    for (lab, question), group in answers.groupby(["lab", "question"], sort=True):
        judged = group["right"].dropna()
        counts = group["answer"].value_counts()
        varies = bool(group["variant"].ne("").any())  # per-student variants: each judged at their own
        engine = None if varies else questions.answer_or_none(lab, question)
        out.append({
            "lab": lab, "question": question, "committed": int(len(judged)), "skipped": int((group["answer"] == "skipped").sum()),
            "right": int(judged.astype(bool).sum()), "share right": f"{judged.astype(bool).mean():.0%}" if len(judged) else "",
            "changed after commit": int(group["changed"].gt(0).sum()),
            "engine's answer": "each student's variant's" if varies else (engine if engine is not None else "none of the options"),
            "answers": "  ".join(f"{k} {int(counts.get(k, 0))}" for k in sorted(counts.index)),
        })
    return pd.DataFrame(out, columns=["lab", "question", "committed", "skipped", "right", "share right", "changed after commit", "engine's answer", "answers"])


@app.function
def answer_distribution(answers: pd.DataFrame, key: tuple) -> pd.DataFrame:
    """One row per option of a question (then skipped, then anything else handed in): the count,
    whether the engine judges it right, how many of them changed, and the students."""
    lab, question = key
    mine = answers[(answers["lab"] == lab) & (answers["question"] == question)]
    options = [o.key for o in QUESTION_OPTIONS.get(key, ())]
    labels = {o.key: o.label for o in QUESTION_OPTIONS.get(key, ())}
    order = options + ["skipped"] + sorted(set(mine["answer"]) - set(options) - {"skipped"})
    engine = None if mine["variant"].ne("").any() else questions.answer_or_none(lab, question)
    rows = []
    for answer in order:
        group = mine[mine["answer"] == answer]
        if answer in ("skipped",) and group.empty:
            continue
        rows.append({
            "answer": answer, "label": labels.get(answer, ""), "students": len(group), "right": answer == engine if engine is not None else bool(group["right"].eq(True).any()),
            "changed": int(group["changed"].gt(0).sum()), "names": sorted(group["student"]),
        })
    return pd.DataFrame(rows, columns=["answer", "label", "students", "right", "changed", "names"])


@app.function
def answer_figure(bars: pd.DataFrame, key: tuple) -> go.Figure:
    colors = [COLORS["green"] if r else (COLORS["muted"] if a == "skipped" else COLORS["red"]) for a, r in zip(bars["answer"], bars["right"])]
    fig = go.Figure(go.Bar(
        x=bars["answer"], y=bars["students"], marker_color=colors, text=[f"{n} ({c} changed)" if c else str(n) for n, c in zip(bars["students"], bars["changed"])],
        textposition="outside", customdata=bars["label"], hovertemplate="%{x}: %{y} students<br>%{customdata}<extra></extra>",
    ))
    fig.update_layout(title=f"{lab_name(key[0])} · {key[1]}: committed answers (green: the engine's answer)", height=360,
                      xaxis_title="answer", yaxis_title="students", showlegend=False, margin=dict(t=60, b=40), clickmode="event+select")
    return fig


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
        indices = [i for i, a in enumerate(frame["answer"]) if a in xs]
    elif not indices and kind == "design":
        xy = {(round(float(p["x"]), 3), round(float(p["y"]), 3)) for p in points if isinstance(p.get("x"), (int, float)) and isinstance(p.get("y"), (int, float))}
        indices = [i for i, (x, y) in enumerate(zip(frame["x"], frame["y"])) if (round(x, 3), round(y, 3)) in xy]
    return sorted({i for i in indices if 0 <= i < len(frame)})


@app.function
def students_panel(rows: pd.DataFrame, empty_note: str):
    if rows is None or len(rows) == 0:
        return mo.md(f"_{empty_note}_")
    if "names" in rows:
        rows = rows.explode("names").rename(columns={"names": "student"})[["answer", "label", "student"]]
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
def live_figure(counts: dict, key: tuple) -> go.Figure:
    """The class's committed answers to one question, large enough to project; the engine's in green."""
    options = [o.key for o in QUESTION_OPTIONS.get(key, ())]
    order = options + sorted(set(counts) - set(options))
    engine = questions.answer_or_none(*key)
    colors = [COLORS["green"] if a == engine else (COLORS["muted"] if a == "skipped" else COLORS["blue"]) for a in order]
    fig = go.Figure(go.Bar(x=order, y=[counts.get(a, 0) for a in order], marker_color=colors, text=[str(counts.get(a, 0)) for a in order],
                           textposition="outside", textfont=dict(size=28)))
    fig.update_layout(title=dict(text=f"{lab_name(key[0])} · {key[1]}", font=dict(size=28)), height=560, showlegend=False,
                      xaxis=dict(tickfont=dict(size=28)), yaxis=dict(title="students", tickfont=dict(size=18)), margin=dict(t=80, b=60))
    return fig


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
def quoted(text) -> str:
    """A student's free text for a markdown quote: escaped, so it shows as typed and runs nothing."""
    import html

    return html.escape(str(text)).replace("\n", "<br>") if isinstance(text, str) and text.strip() else "<i>blank</i>"


if __name__ == "__main__":
    app.run()
