"""Prefetch: a complete download is reused, a partial one is not, one download per shard."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from common.prefetch import MANIFEST, Prefetcher, discard, fetch_into, prefetch_root
from common.stage import InputRef, Stage, StageResult


class _S(Stage):
    name = "asr"

    def load(self) -> None: ...

    def model_info(self) -> dict:
        return {}

    def inputs(self, shard_id: int) -> dict[str, InputRef]:
        return {"shard": InputRef("input", f"s{shard_id}")}

    def process(self, shard_id: int, inputs: dict, workdir: Path) -> StageResult:
        raise NotImplementedError


def _fetcher(calls: list[int], delay: float = 0.0):
    def fetch(stage: Stage, shard_id: int, workdir: Path) -> dict[str, Path]:
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
    a = fetch_into(_fetcher(calls), _S(s), 3, s)
    b = fetch_into(_fetcher(calls), _S(s), 3, s)
    assert calls == [3] and a == b and a["shard"].read_text() == "data 3"
    discard("asr", 3, s)
    assert not a["shard"].exists()


def test_partial_download_is_not_used(make_settings) -> None:
    s = make_settings()
    d = prefetch_root(s, "asr") / s.shard_stem(4)
    (d / "in").mkdir(parents=True)
    (d / "in" / "s4").write_text("half")  # a process died here: no manifest
    calls: list[int] = []
    got = fetch_into(_fetcher(calls), _S(s), 4, s)
    assert calls == [4] and got["shard"].read_text() == "data 4"
    assert (d / MANIFEST).is_file()


def test_concurrent_fetchers_download_once(make_settings) -> None:
    s = make_settings()
    calls: list[int] = []
    out: list[dict] = []
    ts = [threading.Thread(target=lambda: out.append(fetch_into(_fetcher(calls, 0.2), _S(s), 5, s)))
          for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert calls == [5] and len(out) == 3


def test_prefetcher_runs_ahead_and_skips_done(make_settings) -> None:
    s = make_settings()
    calls: list[int] = []
    pre = Prefetcher(_S(s), _fetcher(calls, 0.05), lambda i: i == 2, s)
    for i in (1, 2, 3):
        pre.submit(i)
    pre.join()
    assert calls == [1, 3] and pre.fetched == 2
    got = fetch_into(_fetcher(calls), _S(s), 3, s)  # the task finds it ready
    assert calls == [1, 3] and got["shard"].read_text() == "data 3"


def test_interrupted_shard_download_resumes_on_the_next_attempt(s3_bucket: str, s3_proxy,
                                                                make_settings) -> None:
    """A worker whose download broke off (or died) leaves parts behind; the retry of the same
    shard fetches only the missing parts, through the executor's real fetch path."""
    import os

    import boto3
    import pytest

    from common.executor import Executor
    from common.storage import StorageError

    data = os.urandom(6 * 1024 * 1024)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="raw/s5", Body=data)
    s = make_settings(input_url=f"s3://{s3_bucket}/raw", s3_part_size_mb=1, s3_concurrency=1,
                      s3_max_attempts=1, s3_endpoint_url=s3_proxy.url)
    ex = Executor(s)
    s3_proxy.set_fault("drop", methods={"GET"}, skip=3)  # 3 parts arrive, then the link breaks
    with pytest.raises(StorageError):
        fetch_into(ex.fetch_inputs, _S(s), 5, s)
    s3_proxy.clear()
    s3_proxy.reset_counts()
    got = fetch_into(ex.fetch_inputs, _S(s), 5, Executor(s).settings)
    assert got["shard"].read_bytes() == data
    assert s3_proxy.counts["GET"] == 3  # parts 3..5 only: nothing fetched twice
