"""The instructor's grade book on top of `labs.grade`: a points table (points.py), due dates and
late policies (due.py), marks for free-text answers (marks.py), the per-student totals (book.py),
files an LMS imports (exports.py: Canvas, Moodle, Gradescope) and one feedback page per student
(feedback.py). The engine's answer to every prediction question is in questions.py."""
