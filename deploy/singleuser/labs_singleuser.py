"""What a student's single-user Jupyter server may do: read, nothing else.

The hub starts each student's `jupyterhub-singleuser` with this folder on PYTHONPATH and as
JUPYTER_CONFIG_DIR (deploy/jupyterhub_config.py). Students reach the labs through
jupyter-server-proxy (`marimo run`); Jupyter's own REST API is read-only for them: no kernels,
no terminals, no sessions, no file writes (a written file could be a notebook, a .pth or a config
that runs code as the student, and code running as the student could read LABS_SIGNING_KEY).
"""

from jupyter_server.auth import Authorizer


class ReadOnlyAuthorizer(Authorizer):
    """Allow "read" actions only; the hub's identity provider already checked who is asking."""

    def is_authorized(self, handler, user, action, resource):
        return action == "read" and resource not in ("kernels", "terminals", "sessions", "kernelspecs")


def _refuse_arbitrary_ports() -> None:
    """jupyter-server-proxy's /proxy/<port> and /proxy/<host>:<port> reach any local service as
    the student, and its host allowlist does not cover the local form: both answer 403 here.
    The named servers (/marimo/, /dashboard/) go on working: they are subclasses, let through."""
    from jupyter_server_proxy import handlers
    from tornado import web

    for cls in (handlers.LocalProxyHandler, handlers.RemoteProxyHandler):
        for method in ("proxy", "open"):
            original = getattr(cls, method)

            def refuse(self, *args, _original=original, _cls=cls, **kwargs):
                if type(self) is _cls:
                    raise web.HTTPError(403, "arbitrary ports are not proxied on this hub")
                return _original(self, *args, **kwargs)

            setattr(cls, method, refuse)


_refuse_arbitrary_ports()
