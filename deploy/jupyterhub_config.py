"""The class JupyterHub: system accounts, one OS user per student, `marimo run` only.

    pip install -e ".[hub]"; npm install -g configurable-http-proxy
    python deploy/add_students.py students.csv         # as root: one system user per student (and passwords)
    export HUB_INSTRUCTOR=<your user name>              # must exist and be in group labs-instructors
    export LABS_SIGNING_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')
    export LABS_CLASS_SALT=$(python -c 'import secrets; print(secrets.token_urlsafe(24))')
    jupyterhub -f deploy/jupyterhub_config.py           # as root, behind an HTTPS reverse proxy

What it guarantees (deploy/check_hub.py proves each in CI):
  - sign-in through PAM against the machine's accounts, only for members of the groups
    labs-students and labs-instructors; no shared password, no sign-up page;
  - each student's server runs as that student's own uid (LocalProcessSpawner), never root; homes
    are 0750 and ledgers are in HUB_LEDGERS/<user>/ (2750), both with group labs-instructors, so
    no student reads another's home or ledger, and the instructor reads every ledger;
  - students reach only `marimo run` of the labs (/user/<name>/marimo/): no terminal, no
    kernel, no file writes through Jupyter, no `marimo edit`, no /proxy/<port>; the notebooks
    it runs are a root-owned, read-only copy (HUB_NOTEBOOKS), never a folder a student's uid
    can write, since the kernel imports from the notebooks' folder first;
  - every student's labs draw their variants with the class salt (LABS_CLASS_SALT, passed into
    each server's environment), so no student can print a classmate's variant or key without it;
  - the instructor (HUB_INSTRUCTOR, a hub admin) also gets the class dashboard at
    /user/<instructor>/dashboard/, reading HUB_LEDGERS through the group;
  - committed predictions and saved steps are signed with LABS_SIGNING_KEY (labs.core.signing);
  - the hub refuses to start without HUB_INSTRUCTOR, with a missing, short or example signing
    key or class salt, or when not run as root (it must start servers as other users).
What it does not: TLS (put a reverse proxy in front; it listens on 127.0.0.1), quotas, backups,
or containers (a student's server shares the machine's CPU, memory and /tmp with the others).

Putting the hub behind an LMS (UNTESTED here: no LMS to test against): pip install
jupyterhub-ltiauthenticator, then replace the PAM lines with
    c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.authenticator.LTI13Authenticator"
    c.LTI13Authenticator.issuer = "https://canvas.instructure.com"
    c.LTI13Authenticator.authorize_url = "https://<lms>/api/lti/authorize_redirect"
    c.LTI13Authenticator.jwks_endpoint = "https://<lms>/api/lti/security/jwks"
    c.LTI13Authenticator.client_id = ["<the LMS developer key's client id>"]
    c.LTI13Authenticator.username_key = "email"   # or a claim your LMS sends
    c.LocalAuthenticator.create_system_users = True  # each LTI user gets a system user at first login
and add each new user to labs-students (create_system_users runs useradd; see add_students.py).

Keep LABS_SIGNING_KEY and LABS_CLASS_SALT the same for the whole course and out of the
repository: the grader, the grade book and the dashboard need both (LABS_CLASS_SALT or --salt).

Environment: HUB_INSTRUCTOR, LABS_SIGNING_KEY, LABS_CLASS_SALT (required); HUB_PORT (8000), HUB_HOMES
(/srv/labs-homes), HUB_LEDGERS (/srv/labs-ledgers: one folder per student), HUB_STATE (/srv/labs-hub: database, cookie secret, proxy pid), HUB_NOTEBOOKS
(/srv/labs-notebooks: the root-owned copy of labs/NN_*.py every student's marimo serves, made
afresh at each start), LABS_LECTURE_DIR
(/srv/labs-lecture: the live lecture's held questions and answers, labs.core.lecture).
"""

import grp
import os
import pwd
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from publish_notebooks import publish_notebooks  # deploy/publish_notebooks.py, beside this file

LABS = HERE.parent / "labs"
STUDENTS, INSTRUCTORS = "labs-students", "labs-instructors"
EXAMPLE_KEYS = {"change-me", "changeme", "secret", "password", "<your key>"}
EXAMPLE_SALTS = EXAMPLE_KEYS | {"<your salt>", "fall-2026", "spring-2027", "salt", "class-salt"}
SALT = "LABS_CLASS_SALT"  # the variable labs.variants.class_salt reads: the labs, grader, grade book and dashboard


def refuse(message: str):
    print(f"deploy/jupyterhub_config.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        refuse(f"{name} is not set; see the docstring of this file")
    return value


if not hasattr(os, "geteuid") or os.geteuid() != 0:
    refuse("run the hub as root: it starts each student's server as that student's own user")
instructor = required("HUB_INSTRUCTOR")
key = required("LABS_SIGNING_KEY")
if key.lower() in EXAMPLE_KEYS or len(key) < 16:
    refuse("LABS_SIGNING_KEY must be a secret of at least 16 characters (python -c 'import secrets; print(secrets.token_urlsafe(32))')")
salt = required(SALT)
if salt.lower() in EXAMPLE_SALTS or len(salt) < 16:
    refuse(f"{SALT} must be a secret of at least 16 characters, kept for the whole course (python -c 'import secrets; print(secrets.token_urlsafe(24))'): without it any student prints a classmate's variant and keys with python -m labs.variants")
try:
    instructors_gid = grp.getgrnam(INSTRUCTORS).gr_gid
    instructor_pw = pwd.getpwnam(instructor)
except KeyError as err:
    refuse(f"{err.args[0]}; run deploy/add_students.py first (it creates the groups and users)")
if instructor not in grp.getgrnam(INSTRUCTORS).gr_mem and instructor_pw.pw_gid != instructors_gid:
    refuse(f"HUB_INSTRUCTOR {instructor!r} is not in the group {INSTRUCTORS}")

homes = Path(os.environ.get("HUB_HOMES", "/srv/labs-homes"))
ledger_root = Path(os.environ.get("HUB_LEDGERS", "/srv/labs-ledgers"))
state = Path(os.environ.get("HUB_STATE", "/srv/labs-hub"))
lecture = Path(os.environ.get("LABS_LECTURE_DIR", "/srv/labs-lecture"))
notebooks = Path(os.environ.get("HUB_NOTEBOOKS", "/srv/labs-notebooks"))
if homes.resolve() in (notebooks.resolve(), *notebooks.resolve().parents):
    refuse(f"HUB_NOTEBOOKS ({notebooks}) must not be inside HUB_HOMES ({homes}): students must not write the code their labs import")
state.mkdir(parents=True, exist_ok=True)
os.chmod(state, 0o700)  # the database and cookie secret: root's alone, outside every home
for folder, mode in ((lecture, 0o755), (lecture / "answers", 0o1733)):
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, instructor_pw.pw_uid, instructors_gid)
    os.chmod(folder, mode)
ledger_root.mkdir(parents=True, exist_ok=True)
os.chown(ledger_root, 0, instructors_gid)
os.chmod(ledger_root, 0o751)  # students pass through to their own folder; only instructors list it


try:
    publish_notebooks(notebooks, LABS)
except ValueError as err:
    refuse(str(err))

c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ.get('HUB_PORT', '8000')}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

# Sign-in: the machine's accounts (PAM). Chosen over jupyterhub-nativeauthenticator because each
# student needs a system user anyway (the spawner runs them as it): one account, one password.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {STUDENTS, INSTRUCTORS}
c.PAMAuthenticator.admin_users = {instructor}
c.PAMAuthenticator.open_sessions = False

# One process per student, as that student's uid; no --allow-root anywhere.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = ["jupyterhub-singleuser"]
c.Spawner.default_url = "/marimo/"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.Spawner.environment = {
    "JUPYTER_CONFIG_DIR": str(HERE / "singleuser"),  # deploy/singleuser/jupyter_server_config.py, not ~/.jupyter
    "PYTHONPATH": str(HERE / "singleuser"),
    "PYTHONNOUSERSITE": "1",
    "LABS_SIGNING_KEY": key,
    SALT: salt,  # JupyterHub passes only env_keep and this: without it the labs would draw unsalted variants
    "LABS_NOTEBOOKS": str(notebooks),  # what deploy/singleuser serves with `marimo run`
    "LABS_LECTURE_DIR": str(lecture),
    "LABS_LEDGER_DIR": lambda spawner: str(ledger_root / spawner.user.name),
    "LABS_LEDGER_MODE": "0640",  # ledgers readable by the group of their folder (labs-instructors)
    "LABS_INSTRUCTOR": instructor,
    "LABS_DASHBOARD": str(HERE.parent / "instructor" / "class_dashboard.py"),  # the instructor's, apart from the labs
    "HUB_LEDGERS": str(ledger_root),
}


def prepare_home(spawner):
    """Before each start (as root): the home 0750 with group labs-instructors, and the student's
    ledger folder HUB_LEDGERS/<user> 2750 so every ledger it holds belongs to group
    labs-instructors (the dashboard reads them; no other student can). The labs are served from
    HUB_NOTEBOOKS, not from the home."""
    user = pwd.getpwnam(spawner.user.name)
    home = Path(user.pw_dir)
    if user.pw_uid == 0 or not home.is_dir() or home.is_symlink():
        raise RuntimeError(f"{spawner.user.name}: no usable home folder (or a root account)")
    os.chown(home, user.pw_uid, instructors_gid)
    os.chmod(home, 0o750)
    ledgers = ledger_root / spawner.user.name
    if not ledgers.is_symlink():
        ledgers.mkdir(exist_ok=True)
        os.chown(ledgers, user.pw_uid, instructors_gid)
        os.chmod(ledgers, 0o2750)


c.Spawner.pre_spawn_hook = prepare_home
