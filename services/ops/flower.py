"""``onsei flower``: the live dashboard of workers, tasks and the three queues.

Bound to ``settings.flower_host`` (127.0.0.1 unless configured) behind basic auth from
``settings.flower_basic_auth``; the broker is ``settings.broker_url``. The password travels in
Flower's environment (``FLOWER_BASIC_AUTH``), never on a command line that ``ps`` shows.
"""

from __future__ import annotations

import os
import socket
import sys

import click

from services.stages import STAGES, boot_settings, make_app

# ``celery -A services.ops.flower:app flower``: an app that knows all three queues (Flower's
# broker page lists the app's queues when no worker has reported its own yet).
app = make_app("onsei", boot_settings())
DEFAULT_PASSWORDS = {"", "change-me"}


def list_every_stage_queue() -> None:
    """Flower's Broker page lists only the queues of the workers online (when any is), so a
    stage without a worker, the very queue where the backlog piles up, went missing. Runs in
    the Flower process (``-A services.ops.flower:app`` imports this module)."""
    try:
        from flower.views import BaseHandler
    except ImportError:  # not the ops extra: nothing to patch
        return
    original = BaseHandler.get_active_queue_names
    if getattr(original, "onsei_all_stages", False):
        return

    def names(self: BaseHandler) -> list[str]:
        return sorted(set(original(self)) | set(STAGES))

    names.onsei_all_stages = True  # type: ignore[attr-defined]  # marks the patch as done
    BaseHandler.get_active_queue_names = names


list_every_stage_queue()


def flower_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "services.ops.flower:app", "flower",
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
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="port [settings.flower_port]")
def flower(host: str | None, port: int | None) -> None:
    """Start Flower on the broker, behind basic auth, bound to loopback unless configured."""
    from services.stages import PipelineSettings

    s = PipelineSettings()  # this command's own (the app above is the exec'd Flower's)
    auth = s.flower_basic_auth.get_secret_value()
    user, _, password = auth.partition(":")
    if not user or password in DEFAULT_PASSWORDS:
        raise click.ClickException(
            "set ONSEI_FLOWER_BASIC_AUTH=user:password first, with a password of your own "
            "(e.g. export ONSEI_FLOWER_BASIC_AUTH=ops:$(openssl rand -hex 12)); Flower does "
            "not start without one")
    host, port = host or s.flower_host, port or s.flower_port
    port_free_or_fail(host, port)
    click.echo(f"Flower on http://{host}:{port}/ (basic auth user {user!r})", err=True)
    cmd = flower_command(host, port)
    os.execvpe(cmd[0], cmd, flower_env(auth))


def port_free_or_fail(host: str, port: int) -> None:
    """One clear line now, rather than Flower's traceback after it has started."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Tornado binds
        try:
            sock.bind((host, port))
        except OSError as e:
            raise click.ClickException(
                f"cannot listen on {host}:{port}: {e.strerror or e} (another Flower? choose "
                "--port or ONSEI_FLOWER_PORT)") from None
