"""Live lecture: the instructor holds a question's reveal until they release it.

The shared state is a folder named by LABS_LECTURE_DIR (the hub config sets it for every server):

    <dir>/                        owned by the instructor, mode 0755: students read it, cannot write
    <dir>/<lab>--<question>.held  one empty file per held question (hold() creates, release() removes)
    <dir>/answers/                mode 1733 (sticky, write-only for students): each student drops a
                                  file per committed question; the instructor lists and reads them

The instructor's dashboard calls hold(), release(), is_held() and committed_answers() (or
read_answers(), whose .notes say when the drop box was capped or filled with junk); a lab reads
held() through ui.live_lecture, and ui.gate keeps everything that bears on a held question (the
instruments, cards, charts, reveal, reflection, takeaways) as hidden as before the commit;
ui.commit_prediction calls record_answer() when a student commits. Without LABS_LECTURE_DIR
nothing is ever held and nothing is recorded: a lab run alone behaves as before.

On a hub every single-user server runs as its student's own uid, so a file in answers/ is
credited to a student only when that student's uid owns it (a student cannot write another's
answer); `check_owner=False` turns that off for a single-user demo where every file has one owner.

    from labs.core import lecture
    lecture.prepare("/srv/lecture")                       # once, as the instructor (or root + chown)
    lecture.hold("05_parallelism", "cause")
    lecture.is_held("05_parallelism", "cause")            # True: the lab shows "waiting for the instructor"
    lecture.committed_answers("05_parallelism", "cause")  # {"alice": "B", "bob": "A"}
    lecture.release("05_parallelism", "cause")
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import stat
import tempfile
import warnings
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

ENV = "LABS_LECTURE_DIR"
ANSWERS = "answers"
MAX_ANSWER_FILES = 20_000  # answer files read for one question (a class is a few hundred students); only answer-file names count
MAX_ANSWER_BYTES = 4_096
_KEY = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_ANY_ANSWER = re.compile(r"[A-Za-z0-9_.-]{1,100}--[A-Za-z0-9_.-]{1,100}--[0-9a-f]{32}\.json")  # any question's answer file


def directory(path: str | os.PathLike | None = None) -> Path | None:
    """The lecture folder: `path`, else LABS_LECTURE_DIR, else None (no live lecture)."""
    chosen = path if path is not None else os.environ.get(ENV, "").strip()
    return Path(chosen) if chosen else None


def _required(path) -> Path:
    found = directory(path)
    if found is None:
        raise ValueError(f"{ENV} is not set: name the lecture folder (the hub config sets it)")
    return found


def _check(name: str, value) -> str:
    if not isinstance(value, str) or not _KEY.fullmatch(value) or value.startswith("."):
        raise ValueError(f"{name} must be 1-100 letters, digits, '_', '-' or '.', not starting with '.'; got {value!r}"[:200])
    return value


def _held_path(lab: str, question: str, path=None) -> Path:
    return _required(path) / f"{_check('lab', lab)}--{_check('question', question)}.held"


def prepare(path: str | os.PathLike | None = None) -> Path:
    """Create the lecture folder (0755) and its answers/ drop box (1733: anyone may add a file,
    only the owner lists them, nobody deletes another's). Run it as the instructor, or as root
    and then chown both to the instructor (deploy/jupyterhub_config.py does)."""
    root = _required(path)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    answers = root / ANSWERS
    answers.mkdir(exist_ok=True)
    os.chmod(answers, 0o1733)
    return root


def hold(lab: str, question: str, path: str | os.PathLike | None = None) -> None:
    """Hide this question's reveal from every student until release()."""
    target = _held_path(lab, question, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(exist_ok=True)


def release(lab: str, question: str, path: str | os.PathLike | None = None) -> None:
    """Show this question's reveal to every student who has committed (a no-op when not held)."""
    with contextlib.suppress(FileNotFoundError):
        _held_path(lab, question, path).unlink()


def is_held(lab: str, question: str, path: str | os.PathLike | None = None) -> bool:
    """True while the instructor holds this question's reveal. False without a lecture folder."""
    if directory(path) is None:
        return False
    return _held_path(lab, question, path).exists()


def held(path: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """Every (lab, question) held now, sorted."""
    root = directory(path)
    if root is None or not root.is_dir():
        return []
    pairs = (p.name.removesuffix(".held").split("--", 1) for p in root.glob("*--*.held"))
    return sorted((lab, question) for lab, question in pairs)


def _answer_name(lab: str, question: str, student: str) -> str:
    """The file name of a student's answer. Keyed with LABS_SIGNING_KEY when set, so no student
    can compute (and squat, in the sticky folder) another student's file name."""
    key = os.environ.get("LABS_SIGNING_KEY", "").encode("utf-8")
    digest = hmac.new(key, student.encode("utf-8"), hashlib.sha256).hexdigest()[:32]
    return f"{_check('lab', lab)}--{_check('question', question)}--{digest}.json"


def record_answer(lab: str, question: str, student: str, record: dict, path: str | os.PathLike | None = None) -> bool:
    """Drop a student's committed prediction (the ledger's record: answer, committed, changes)
    into answers/ for the instructor's histogram. Returns False (and records nothing) without a
    lecture folder or when the drop box cannot be written: the ledger is the record that counts."""
    root = directory(path)
    if root is None:
        return False
    answers = root / ANSWERS
    data = json.dumps({"student": student, "lab": lab, "question": question, "answer": record.get("answer"), "committed": record.get("committed"), "changes": len(record.get("changes", [])), "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}).encode("utf-8")
    if len(data) > MAX_ANSWER_BYTES:
        return False
    target = answers / _answer_name(lab, question, student)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=answers)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)  # in a sticky folder this fails on another student's file
        tmp = None
        return True
    except OSError:
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _owner_name(uid: int) -> str | None:
    try:
        import pwd
    except ImportError:  # Windows: no uids to check
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


class AnswersCapped(UserWarning):
    """The drop box held more answer files for one question than MAX_ANSWER_FILES: the histogram
    counts the first ones read and says so (the dashboard shows the message)."""


class Answers(dict):
    """{student: first committed answer (None: skipped)}, with `notes`: what the reader could not
    count (a cap reached, junk ignored), each a sentence the dashboard can show."""

    def __init__(self, found=(), notes=()):
        super().__init__(found)
        self.notes = list(notes)


_DIGEST_FILE = re.compile(r"[0-9a-f]{32}\.json")


def _is_answer_file(name: str, prefix: str) -> bool:
    """True when `name` is an answer file of the question `prefix` names (<lab>--<question>--
    32 hex digits .json, as _answer_name writes it): only such names count toward a cap."""
    return name.startswith(prefix) and _DIGEST_FILE.fullmatch(name, len(prefix)) is not None


def read_answers(lab: str, question: str, path: str | os.PathLike | None = None, *, check_owner: bool = True) -> Answers:
    """committed_answers with its notes (Answers.notes), for a dashboard that shows them.

    Only names of this question's answer files (_is_answer_file) are looked at, and with
    check_owner only a file named for its owner (a hub student can drop one per question, not
    thousands): junk in the drop box (other names, temporary files, another uid's squatting)
    costs one directory entry each and counts toward no cap. At most MAX_ANSWER_FILES of this
    question's files are read; when there are more, the notes say how many were left unread."""
    root = directory(path)
    if root is None:
        return Answers()
    prefix = f"{_check('lab', lab)}--{_check('question', question)}--"
    found: dict[str, str | None] = {}
    counted = junk = left = 0
    owners: dict[int, str | None] = {}
    try:
        entries = os.scandir(root / ANSWERS)
    except OSError:
        return Answers()
    with entries:
        for entry in entries:
            if not _is_answer_file(entry.name, prefix):
                junk += _ANY_ANSWER.fullmatch(entry.name) is None  # another question's answers are not junk
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ANSWER_BYTES:
                continue
            if check_owner:
                if info.st_uid not in owners:
                    owners[info.st_uid] = _owner_name(info.st_uid)
                owner = owners[info.st_uid]
                if owner is None or entry.name != _answer_name(lab, question, owner):
                    continue  # not its owner's file for this question: never counted, never read
            if counted >= MAX_ANSWER_FILES:
                left += 1
                continue
            counted += 1
            try:
                with open(entry.path, "rb") as handle:
                    item = json.loads(handle.read(MAX_ANSWER_BYTES))
                student, answer = item["student"], item["answer"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not isinstance(student, str) or not (answer is None or isinstance(answer, str)):
                continue
            if entry.name != _answer_name(lab, question, student):
                continue  # a file named for another student
            if check_owner and owners.get(info.st_uid) != student:
                continue
            found[student] = answer
    notes = []
    if left:
        notes.append(f"{lab} · {question}: the drop box holds {counted + left:,} answer files for this question; "
                     f"the first {MAX_ANSWER_FILES:,} read are counted, {left:,} are not (the histogram may be incomplete).")
    if junk > MAX_ANSWER_FILES:
        notes.append(f"The drop box {root / ANSWERS} holds {junk:,} entries that are not answer files (ignored, but someone is filling it).")
    return Answers(found, notes)


def committed_answers(lab: str, question: str, path: str | os.PathLike | None = None, *, check_owner: bool = True) -> dict[str, str | None]:
    """{student: first committed answer (None: skipped)} for one question, from answers/.
    With check_owner (the default) a file counts only when its owner's user name is the student
    it names, as on a hub where each student is an OS user. Unreadable or malformed files are
    skipped. Only this question's answer files count toward the cap (MAX_ANSWER_FILES read);
    when it is reached, or junk piles up, an AnswersCapped warning says so (read_answers returns
    the same sentences as Answers.notes)."""
    answers = read_answers(lab, question, path, check_owner=check_owner)
    for note in answers.notes:
        warnings.warn(note, AnswersCapped, stacklevel=2)
    return answers


def histogram(lab: str, question: str, path: str | os.PathLike | None = None, *, check_owner: bool = True) -> Counter:
    """Counter of committed answers ("skipped" for None) for the instructor's chart."""
    answers = committed_answers(lab, question, path, check_owner=check_owner)
    return Counter("skipped" if a is None else a for a in answers.values())
