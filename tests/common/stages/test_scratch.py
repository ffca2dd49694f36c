"""A killed worker's scratch directory (its partial download among it) is swept when the next
worker starts on the node; a live worker's never is, nor anything else in the scratch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.stages.engine import Engine
from common.stages.scratch import claim, sweep
from fixtures.speechgen import make_shard
from services.stages import PIPELINE
from tests.conftest import REPO
from tests.dummy.stages import DummyAsr

_WORKER = ("from services.stages import PIPELINE, PipelineSettings; "
           "from common.stages.engine import Engine; from tests.dummy.stages import DummyAsr; "
           "Engine(PipelineSettings(), PIPELINE, DummyAsr).attempt({shard})")


def _start_worker(s, shard: int) -> subprocess.Popen:
    """A worker process working on ``shard`` (its stage sleeps a minute in ``process``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONSEI_")}
    env.update(ONSEI_INPUT_URL=s.input_url, ONSEI_OUTPUT_URL=s.output_url,
               ONSEI_SCRATCH_DIR=s.scratch_dir, ONSEI_DUMMY_SECONDS="60")
    return subprocess.Popen([sys.executable, "-c", _WORKER.format(shard=shard)], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _holding(scratch: Path, known: set[Path]) -> Path:
    """The new scratch directory of a worker once its shard is in it."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for d in scratch.glob("onsei-work-asr-*"):
            if d.is_dir() and d not in known and any((d / "in").glob("*.tar")):
                return d
        time.sleep(0.1)
    raise AssertionError("the worker never took its shard")


def test_a_killed_workers_scratch_is_swept_at_the_next_start(make_settings) -> None:
    s = make_settings()
    for i in range(3):
        make_shard(Path(s.input_url) / s.shard_name(i), {"a": {"wav": b"x" * 1000}})
    scratch = Path(s.scratch_dir)
    killed, live = _start_worker(s, 0), _start_worker(s, 1)
    try:
        dead_dir = _holding(scratch, set())
        live_dir = _holding(scratch, {dead_dir})
        # which process holds which directory does not matter: kill the first one's owner
        (dead_dir / "in" / "next.tar.part").write_bytes(b"\0" * 4096)  # a download cut short
        owner = killed if _owns(killed, dead_dir) else live
        other = live if owner is killed else killed
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        assert dead_dir.is_dir()  # nobody removed it: SIGKILL runs no clean-up
        e = Engine(s, PIPELINE, DummyAsr)  # the next worker on the node
        assert e.attempt(2).status == "done"
        assert not dead_dir.exists() and not Path(f"{dead_dir}.lock").exists()
        assert live_dir.is_dir() and (live_dir / "in").is_dir()  # its owner is alive
        assert other.poll() is None
    finally:
        for p in (killed, live):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(30)


def _owns(proc: subprocess.Popen, d: Path) -> bool:
    """Whether ``proc`` holds ``d``'s lock (its open files name it)."""
    lock = f"{d}.lock"
    fds = Path(f"/proc/{proc.pid}/fd")
    return any(os.readlink(f) == lock for f in fds.iterdir() if f.is_symlink())


def test_only_onsei_scratch_of_no_live_worker_is_swept(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    mine, fd = claim(scratch, "enhance")  # this process: alive
    old = time.time() - 10 * 3600
    legacy_old = scratch / "onsei-asr-ab12cd34"  # from before the lock, untouched for hours
    legacy_new = scratch / "onsei-asr-ef56gh78"  # from before the lock, busy
    for d in (legacy_old, legacy_new):
        (d / "in").mkdir(parents=True)
        (d / "in" / "shard.tar.part").write_bytes(b"x")
    for p in (legacy_old / "in" / "shard.tar.part", legacy_old / "in", legacy_old):
        os.utime(p, (old, old))
    kept = [scratch / "onsei-models", scratch / "prefetch", scratch / "onsei-work-notes.txt"]
    for d in kept[:2]:
        d.mkdir()
        os.utime(d, (old, old))
    kept[2].write_text("someone's file")
    fresh = scratch / "onsei-work-asr-zz99yy88"  # made a moment ago, not locked yet
    fresh.mkdir()
    assert sweep(scratch, stale_after=3600) == [legacy_old]
    assert mine.is_dir() and legacy_new.is_dir() and fresh.is_dir()
    assert all(p.exists() for p in kept)
    os.close(fd)  # this "worker" dies: its lock is free
    assert sweep(scratch, stale_after=3600) == [mine]
    assert not Path(f"{mine}.lock").exists()
