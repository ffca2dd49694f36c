"""Prefetch: a complete download is reused, a partial one is not, one download per shard."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from common.prefetch import MANIFEST, Prefetcher, discard, fetch_into, prefetch_root


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
