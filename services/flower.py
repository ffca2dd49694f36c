"""``onsei flower``: the live dashboard of workers, tasks and the three queues.

Bound to ``settings.flower_host`` (127.0.0.1 unless configured) behind basic auth from
``settings.flower_basic_auth``; the broker is ``settings.broker_url``. The password travels in
Flower's environment (``FLOWER_BASIC_AUTH``), never on a command line that ``ps`` shows.
"""

from __future__ import annotations

import os
import sys

import click

from services.pipeline import make_app

# ``celery -A services.flower:app flower``: an app that knows all three queues (Flower's
# broker page lists the app's queues when no worker has reported its own yet).
app = make_app("onsei")


def flower_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "services.flower:app", "flower",
            f"--address={host}", f"--port={port}"]


def flower_env(auth: str, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["FLOWER_BASIC_AUTH"] = auth
    env.setdefault("FLOWER_PURGE_OFFLINE_WORKERS", "300")  # forget workers gone 5 min
    # Flower keeps every task it has seen (default 100,000, ~4 KB each): 3 x 50,000 shard tasks
    # would hold ~400 MB. 10,000 keeps ~40 MB (python -m bench.scale).
    env.setdefault("FLOWER_MAX_TASKS", "10000")
    return env


@click.command()
@click.option("--host", default=None, help="bind address [settings.flower_host]")
@click.option("--port", type=int, default=None, help="port [settings.flower_port]")
def flower(host: str | None, port: int | None) -> None:
    """Start Flower on the broker, behind basic auth, bound to loopback unless configured."""
    from common.settings import get_settings

    s = get_settings()
    auth = s.flower_basic_auth.get_secret_value()
    if ":" not in auth or not auth.split(":", 1)[1]:
        raise click.ClickException("ONSEI_FLOWER_BASIC_AUTH must be user:password")
    if auth.endswith(":change-me"):
        click.echo("warning: Flower uses the default password; set ONSEI_FLOWER_BASIC_AUTH",
                   err=True)
    host, port = host or s.flower_host, port or s.flower_port
    click.echo(f"Flower on http://{host}:{port}/ (basic auth user {auth.split(':', 1)[0]!r})",
               err=True)
    cmd = flower_command(host, port)
    os.execvpe(cmd[0], cmd, flower_env(auth))
