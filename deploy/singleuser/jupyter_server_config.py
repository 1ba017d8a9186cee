"""Configuration of every single-user server the class hub starts (JUPYTER_CONFIG_DIR points here,
so nothing in a student's ~/.jupyter is read). Students get `marimo run` of the labs at
/user/<name>/marimo/ and nothing else; the instructor also gets the class dashboard at
/user/<instructor>/dashboard/.

marimo runs in LABS_NOTEBOOKS (the hub's root-owned copy of the labs), not in the student's
home: the kernel puts the notebooks' folder first on sys.path, and marimo takes the first
.marimo.toml from its working folder upwards (whose runtime.pythonpath it also puts on sys.path),
so a folder the student's uid can write would let a planted file run in their kernel, beside
LABS_SIGNING_KEY (audit N12). The hub writes a root-owned .marimo.toml there, so a student's
~/.marimo.toml or ~/.config/marimo/marimo.toml is never read."""

import atexit
import base64
import contextlib
import os
import secrets
import tempfile

c = get_config()  # noqa: F821 - provided by Jupyter when it loads this file

c.ServerApp.terminals_enabled = False
c.ServerApp.authorizer_class = "labs_singleuser.ReadOnlyAuthorizer"
c.ServerProxy.host_allowlist = []  # no /proxy/<host>:<port>; labs_singleuser refuses /proxy/<port> too
prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
token = secrets.token_urlsafe(24)  # between this server and its marimo processes only
# In a 0600 file, not on the command line: any user on the machine can read another's arguments.
_fd, token_file = tempfile.mkstemp(prefix="labs-marimo-token-")
os.write(_fd, token.encode())
os.close(_fd)


@atexit.register
def _remove_token_file() -> None:
    with contextlib.suppress(OSError):
        os.unlink(token_file)


NOTEBOOKS = os.environ.get("LABS_NOTEBOOKS", "/srv/labs-notebooks")  # set by deploy/jupyterhub_config.py


def own_port(index: int) -> int:
    """A local port of this user's own, from the uid (10000-31999, below Linux's ephemeral
    range). jupyter-server-proxy's default draws a free port and closes it before marimo binds:
    two students' servers started in the same second drew the same port, and the second marimo
    failed to bind it until the hub gave up (deploy/check_hub.py, three servers at once)."""
    return 10_000 + (os.getuid() % 11_000) * 2 + index


def marimo_run(name: str, target: str, *args: str, index: int = 0) -> dict:
    """`marimo run` (never `marimo edit`) behind this server, reachable at <prefix><name>/,
    started in the root-owned NOTEBOOKS folder (env -C), never in the home."""
    return {
        "command": ["env", "-C", NOTEBOOKS, "marimo", "run", target, "--port", "{port}", "--base-url", prefix + name, "--headless", "--token", "--token-password-file", token_file, *args],
        "port": own_port(index),
        "timeout": 120,
        "absolute_url": True,
        "request_headers_override": {"Authorization": "Basic " + base64.b64encode(f" :{token}".encode()).decode()},
        "launcher_entry": {"enabled": False},
    }


# Named "marimo": the configured server is matched before jupyter-marimo-proxy's entry point
# (which would run `marimo edit`) if that package is installed.
servers = {"marimo": marimo_run("marimo", NOTEBOOKS)}
if os.environ.get("JUPYTERHUB_USER") == os.environ.get("LABS_INSTRUCTOR") and os.environ.get("LABS_DASHBOARD"):
    servers["dashboard"] = marimo_run("dashboard", os.environ["LABS_DASHBOARD"], "--", "--ledgers", os.environ.get("HUB_LEDGERS", "/srv/labs-ledgers"), index=1)
c.ServerProxy.servers = servers
