"""Prefetch: a complete download is reused, a partial one is not, one download per shard."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from common.stages.prefetch import MANIFEST, Prefetcher, discard, fetch_into, prefetch_root


def _fetcher(calls: list[int], delay: float = 0.0):
    def fetch(shard_id: int, workdir: Path) -> dict[str, Path]:
        calls.append(shard_id)
        time.sleep(delay)
        p = workdir / "in" / f"s{shard_id}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"data {shard_id}")
        return {"shard": p}
    return fetch


def test_fetch_once_then_reuse_and_discard(make_settings) -> None:
    s = make_settings()
    calls: list[int] = []
    a = fetch_into(_fetcher(calls), "asr", 3, s)
    b = fetch_into(_fetcher(calls), "asr", 3, s)
    assert calls == [3] and a == b and a["shard"].read_text() == "data 3"
    discard("asr", 3, s)
    assert not a["shard"].exists()


def test_partial_download_is_not_used(make_settings) -> None:
    s = make_settings()
    d = prefetch_root(s, "asr") / s.shard_stem(4)
    (d / "in").mkdir(parents=True)
    (d / "in" / "s4").write_text("half")  # a process died here: no manifest
    calls: list[int] = []
    got = fetch_into(_fetcher(calls), "asr", 4, s)
    assert calls == [4] and got["shard"].read_text() == "data 4"
    assert (d / MANIFEST).is_file()


def test_concurrent_fetchers_download_once(make_settings) -> None:
    s = make_settings()
    calls: list[int] = []
    out: list[dict] = []
    ts = [threading.Thread(target=lambda: out.append(fetch_into(_fetcher(calls, 0.2), "asr", 5, s)))
          for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert calls == [5] and len(out) == 3


def test_prefetcher_runs_ahead_and_skips_done(make_settings) -> None:
    s = make_settings()
    calls: list[int] = []
    pre = Prefetcher("asr", _fetcher(calls, 0.05), lambda i: i == 2, s)
    for i in (1, 2, 3):
        pre.submit(i)
    pre.join()
    assert calls == [1, 3] and pre.fetched == 2
    got = fetch_into(_fetcher(calls), "asr", 3, s)  # the task finds it ready
    assert calls == [1, 3] and got["shard"].read_text() == "data 3"


# --- scratch is keyed by the run's URLs, and reused only while unchanged ---------------------
def _run(make_settings, tmp_path: Path, name: str, shards: dict[int, bytes]):
    from common.stages.engine import Engine
    from services.stages import PIPELINE

    src = tmp_path / name
    src.mkdir(parents=True, exist_ok=True)
    s = make_settings(input_url=str(src), scratch_dir=str(tmp_path / "shared-scratch"))
    for i, data in shards.items():
        (src / s.shard_name(i)).write_bytes(data)
    return s, Engine(s, PIPELINE, "asr")


def test_another_runs_download_is_never_used(make_settings, tmp_path) -> None:
    """Run B (input B) downloaded its shard 2; run A, whose input has no shard 2, on the same
    node and scratch dir, must not process B's copy: it fails, not found."""
    from common.storage import NotFound

    sb, exb = _run(make_settings, tmp_path, "B", {2: b"B's shard 2"})
    sa, exa = _run(make_settings, tmp_path, "A", {0: b"A's shard 0"})
    got = fetch_into(exb.fetch, "asr", 2, sb)
    assert got["shard"].read_bytes() == b"B's shard 2"
    assert prefetch_root(sa, "asr") != prefetch_root(sb, "asr")
    with pytest.raises(NotFound):
        fetch_into(exa.fetch, "asr", 2, sa)


def test_a_changed_source_is_fetched_again(make_settings, tmp_path) -> None:
    s, ex = _run(make_settings, tmp_path, "in", {1: b"version one"})
    assert fetch_into(ex.fetch, "asr", 1, s)["shard"].read_bytes() == b"version one"
    src = Path(s.input_url) / s.shard_name(1)
    src.write_bytes(b"version TWO")  # same size, new mtime: a re-packed shard
    os.utime(src, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert fetch_into(ex.fetch, "asr", 1, s)["shard"].read_bytes() == b"version TWO"
    src.write_bytes(b"version three, longer")
    got = fetch_into(ex.fetch, "asr", 1, s)
    assert got["shard"].read_bytes() == b"version three, longer"
    got["shard"].write_bytes(b"cut")  # the local copy damaged: not that size any more
    assert fetch_into(ex.fetch, "asr", 1, s)["shard"].read_bytes() == \
        b"version three, longer"


def test_unchanged_source_is_reused_without_download(make_settings, tmp_path, monkeypatch) -> None:
    s, ex = _run(make_settings, tmp_path, "in", {1: b"data"})
    fetch_into(ex.fetch, "asr", 1, s)
    monkeypatch.setattr(ex.input, "get_file", lambda *a: pytest.fail("downloaded again"))
    assert fetch_into(ex.fetch, "asr", 1, s)["shard"].read_bytes() == b"data"
