"""A stage's deploy entries, written from its spec (``StageSpec.deploy``: its extra, image and
machine needs): its worker image (``deploy/docker/Dockerfile.<stage>``), its SkyPilot task
(``deploy/skypilot/<stage>.yaml``) and its service in ``docker-compose.yml`` (the stage
services sit between two marker lines, all written from the pipeline's stages in order).

The files in the checkout are these functions' output (tests/deploy/test_render.py), so a
change to the entries is a change to the template here or to a spec, never to one file alone.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from common.stages.spec import Deploy

HERE = Path(__file__).resolve().parent
BEGIN = "  # --- the stages' workers: written by `onsei deploy --write` from their specs ---\n"
END = "  # --- end of the stages' workers ---\n"
BASE_APT = ("python3", "python3-venv")


@dataclass(frozen=True)
class Entry:
    """One stage as its deploy entries name it."""

    stage: str
    package: str  # what ``celery -A`` imports: services.<stage>, or a package of its own
    deploy: Deploy

    @property
    def install(self) -> str:
        return f".[{self.deploy.extra}]" if self.deploy.extra else "."

    @property
    def outside(self) -> str | None:
        """The top package of a stage that is not under services/ (copied beside it)."""
        top = self.package.split(".", 1)[0]
        return None if top in ("services", "common") else top


def _fill(template: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        template = template.replace(f"@{k}@", v)
    return template


def _wrapped(words: list[str], first: int, indent: str, width: int = 100) -> str:
    """``words`` on lines of at most ``width`` (the first line's text starts at column
    ``first``), each continued with `` \\`` and the next indented by ``indent``."""
    lines: list[str] = []
    line: list[str] = []
    col = first
    for w in words:
        if line and col + 1 + len(w) + 2 > width:
            lines.append(" ".join(line))
            line, col = [], len(indent)
        col += len(w) + (1 if line else 0)
        line.append(w)
    lines.append(" ".join(line))
    return f" \\\n{indent}".join(lines)


def dockerfile(e: Entry) -> str:
    d = e.deploy
    only = f'only the "{d.extra}" extra' if d.extra else "the base install"
    apt = [*BASE_APT, *d.apt, "ffmpeg", "ca-certificates"]
    prefix = "    && apt-get install -y --no-install-recommends "
    copy = f"COPY {e.outside} ./{e.outside}\nENV PYTHONPATH=/app\n" if e.outside else ""
    return _fill((HERE / "Dockerfile.template").read_text(), {
        "stage": e.stage, "only": only, "image_why": d.image_why, "image": d.image,
        "apt_why": "".join(f"# {line}\n" for line in d.apt_why),
        "apt": _wrapped(apt, len(prefix), "       "), "install": e.install,
        "copy": copy, "package": e.package})


def skypilot(e: Entry) -> str:
    d = e.deploy
    path = '  export PYTHONPATH="$PWD"  # its package sits in the checkout\n' if e.outside else ""
    return _fill((HERE / "skypilot.yaml.template").read_text(), {
        "stage": e.stage, "gpu_memory": d.gpu_memory,
        "sky_apt": " ".join(["python3-venv", *d.apt, "ffmpeg"]), "install": e.install,
        "package": e.package, "path": path})


def compose_service(e: Entry) -> str:
    s, up = e.stage, e.stage.upper()
    return textwrap.indent(textwrap.dedent(f"""\
        {s}:
          <<: *worker
          build:
            context: .
            dockerfile: deploy/docker/Dockerfile.{s}
          image: ${{ONSEI_IMAGE_PREFIX:-onsei}}-{s}:${{ONSEI_IMAGE_TAG:-latest}}
          command: ["celery", "-A", "{e.package}", "worker", "-Q", "{s}", "--loglevel=INFO",
                    "--concurrency=${{ONSEI_{up}_CONCURRENCY:-2}}", "--hostname={s}@%h"]
          ports:
            - "127.0.0.1:${{ONSEI_{up}_METRICS_HOST_PORT:-{e.deploy.metrics_port}}}:9200"
          deploy:
            resources:
              reservations:
                devices:
                  - driver: nvidia
                    device_ids: ["${{ONSEI_{up}_GPU:-0}}"]
                    capabilities: [gpu]
        """), "  ")


def compose(text: str, entries: list[Entry]) -> str:
    """``docker-compose.yml``'s text with the stage services between the markers replaced."""
    head, found, rest = text.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise ValueError("docker-compose.yml has no stage markers (the lines "
                         f"{BEGIN.strip()!r} and {END.strip()!r})")
    return head + BEGIN + "\n".join(compose_service(e) for e in entries) + END + tail


def fleet_target(e: Entry) -> str:
    """A target for deploy/fleet.yaml (its scaling is the operator's choice: printed, not
    written)."""
    return textwrap.indent(textwrap.dedent(f"""\
        {e.stage}:
          template: deploy/skypilot/{e.stage}.yaml
          providers: [aws, gcp]
          env: *env
          backlog: {{queue: {e.stage}, shards_per_worker: 10, min: 0, max: 50}}
        """), "  ")
