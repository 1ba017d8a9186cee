"""Create the class's system accounts for deploy/jupyterhub_config.py (run as root):

    python deploy/add_students.py students.csv [--instructor NAME] [--homes /srv/labs-homes]

students.csv has a column `student` (a login name: lowercase letters, digits, '-', '_', at most
32 characters). Each gets a system user in group labs-students with a home under --homes and a
new random password; the instructor joins labs-instructors. The new passwords are written to
passwords-<time>.csv (mode 0600) beside the roster for you to hand out; existing users are left
as they are. Prints what it did. The homes folder is made 0711: each student reaches their own
home, none lists the others (audit N17; /etc/passwd and `getent group labs-students` still name
every account to a shell on the machine, and the hub gives students none).
"""

from __future__ import annotations

import argparse
import csv
import grp
import os
import pwd
import re
import secrets
import subprocess
import sys
from datetime import datetime
from pathlib import Path

STUDENTS, INSTRUCTORS = "labs-students", "labs-instructors"
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


def ensure_group(name: str) -> None:
    try:
        grp.getgrnam(name)
    except KeyError:
        subprocess.run(["groupadd", name], check=True)


def ensure_user(name: str, group: str, homes: Path) -> str | None:
    """Create `name` in `group` (home under `homes`); return its new password, None if it existed."""
    if not NAME.fullmatch(name):
        raise ValueError(f"student {name!r}: a login name is lowercase letters, digits, '-' or '_' (at most 32)")
    try:
        pwd.getpwnam(name)
        subprocess.run(["usermod", "-a", "-G", group, name], check=True)
        return None
    except KeyError:
        pass
    subprocess.run(["useradd", "--create-home", "--base-dir", str(homes), "--shell", "/usr/sbin/nologin", "--user-group", "-G", group, name], check=True)
    password = secrets.token_urlsafe(12)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
    return password


def make_homes(homes: Path) -> None:
    """The folder of the class's homes: root's, 0711 (passable, not listable)."""
    homes.mkdir(parents=True, exist_ok=True)
    os.chown(homes, 0, 0)
    os.chmod(homes, 0o711)


def add(names: list[str], instructor: str | None, homes: Path) -> dict[str, str]:
    """Each name's account (and the instructor's), made if missing: {name: new password} for
    those made; names already there keep their passwords and are not in it."""
    ensure_group(STUDENTS)
    ensure_group(INSTRUCTORS)
    make_homes(homes)
    made = {}
    for name in names:
        password = ensure_user(name, STUDENTS, homes)
        if password is not None:
            made[name] = password
    if instructor:
        password = ensure_user(instructor, INSTRUCTORS, homes)
        if password is not None:
            made[instructor] = password
    return made


def summary(accounts: set[str], made: dict[str, str], out: Path) -> str:
    """What main() prints: the accounts made and those already there, each counted once (the
    instructor among them; a name listed twice is one account)."""
    return f"{len(made)} new account(s), {len(accounts) - len(made)} existing; passwords in {out} (0600)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roster", type=Path)
    parser.add_argument("--instructor")
    parser.add_argument("--homes", type=Path, default=Path(os.environ.get("HUB_HOMES", "/srv/labs-homes")))
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("run as root: it creates system users", file=sys.stderr)
        return 2
    with args.roster.open(newline="", encoding="utf-8-sig") as handle:
        names = [row["student"].strip() for row in csv.DictReader(handle)]
    made = add(names, args.instructor, args.homes)
    accounts = set(names) | ({args.instructor} if args.instructor else set())
    stamp = f"passwords-{datetime.now():%Y%m%dT%H%M%S}"
    for n in range(1, 100):  # a second run within the same second gets its own file
        out = args.roster.with_name(f"{stamp}.csv" if n == 1 else f"{stamp}-{n}.csv")
        try:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{args.roster.parent}/{stamp}*.csv: 99 files already")
    with os.fdopen(fd, "w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow(["student", "password"])
        writer.writerows(made.items())
    print(summary(accounts, made, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
