"""A minimal JupyterHub for a class: real logins, one server process per student, and each
student's ledgers in their own home folder (private by construction).

    pip install jupyterhub jupyter-server-proxy jupyter-marimo-proxy parallelism-labs
    npm install -g configurable-http-proxy
    jupyterhub -f deploy/jupyterhub_config.py

Students open https://<hub>/user/<name>/marimo/ (marimo edit through jupyter-marimo-proxy)
and run the labs from their own copy in ~/parallelism-labs/ (made at their first login);
ledgers go to ~/.parallelism_labs of each student's home.

What to change for a real class (see README "For instructors"):
  - the authenticator: DummyAuthenticator accepts any name with the shared password below; use
    your institution's (jupyterhub-ltiauthenticator, oauthenticator, or PAMAuthenticator with
    system users and LocalProcessSpawner, or DockerSpawner / KubeSpawner for isolation);
  - bind_url: 127.0.0.1 here; put TLS (a reverse proxy) in front before opening it wider.
Environment overrides, used by deploy/check_hub.py: HUB_PORT, HUB_HOMES, HUB_PASSWORD.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

homes = Path(os.environ.get("HUB_HOMES", "/srv/labs-homes"))
c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ.get('HUB_PORT', '8000')}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ.get("HUB_PASSWORD", "change-me")
c.Authenticator.allow_all = True

# One process per student, each in its own home folder. SimpleLocalProcessSpawner runs them as
# the hub's user (fine for a test or a trusted pilot); for a class, spawn as system users
# (LocalProcessSpawner) or in containers so students cannot read each other's folders.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(homes / "{username}")
c.Spawner.default_url = "/marimo/"
c.Spawner.http_timeout = 90
if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container or CI machine running as root
    c.Spawner.args = ["--allow-root"]
c.JupyterHub.db_url = f"sqlite:///{homes / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(homes / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(homes / "jupyterhub-proxy.pid")

LABS = Path(__file__).resolve().parents[1] / "labs"


def copy_labs(spawner):
    """Give a student their own copy of the lab notebooks (once; their edits are kept)."""
    import shutil

    target = Path(spawner.home_dir_template.format(username=spawner.user.name)) / "parallelism-labs"
    if not target.exists():
        target.mkdir(parents=True)
        for lab in sorted(LABS.glob("[0-9][0-9]_*.py")):
            shutil.copy2(lab, target / lab.name)


c.Spawner.pre_spawn_hook = copy_labs
