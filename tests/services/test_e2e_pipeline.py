"""The three real stages as three real Celery workers, on Redis and an S3 server.

ASR: the offline Whisper base (CTranslate2, int8 on CPU); enhance: a small Sidon-contract
TorchScript pair; tokenize: a small random NeuCodec built from the real classes. Input: short
espeak-ng speech. `enqueue-shards --range 0-1` -> every output and done record; again -> 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from fixtures.speechgen import make_shard, synth, wav_bytes
from tests.conftest import built_once
from tests.harness import (
    enqueue,
    ledger_for,
    pipeline_env,
    run_cli,
    settings_from,
    start_worker,
    wait_done,
    worker_logs,
)
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)
N = 2  # a shard per language: every stage pays per second of audio (the codec most)
# (language, text, espeak speed): Whisper base keeps this Japanese slowed to 130 wpm with
# confidence (avg logprob -0.78); "きょう は とても いい てんき です ね" at 160 fell below -1.0
# and had no kept segment.
TEXTS = [("en", "the quick brown fox jumps over the lazy dog", 160),
         ("ja", "わたしの なまえは たなか です。", 130)]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from fixtures.factories.neucodec import build_small_neucodec
    from fixtures.factories.sidon import build_small_sidon

    return {"sidon": str(built_once(tmp_path_factory, "sidon", build_small_sidon)),
            "neucodec": str(built_once(tmp_path_factory, "neucodec", build_small_neucodec))}


@pytest.fixture
def env(tmp_path: Path, s3_bucket: str, private_redis_url: str, models) -> dict[str, str]:
    s3 = boto3.client("s3")
    speech = {lang: wav_bytes(synth(text, voice=lang, speed=wpm)) for lang, text, wpm in TEXTS}
    for i in range(N):
        lang = TEXTS[i % 2][0]  # one short file per shard, both languages over the range
        p = make_shard(tmp_path / f"shard-{i:06d}.tar", {f"{i:03d}_{lang}": {"wav": speech[lang]}})
        s3.upload_file(str(p), s3_bucket, f"raw/{p.name}")
    return pipeline_env(
        private_redis_url, f"s3://{s3_bucket}/raw", f"s3://{s3_bucket}/out", tmp_path / "scratch",
        ONSEI_VISIBILITY_TIMEOUT="600", ONSEI_ASR_MODEL="bundled:whisper-base",
        ONSEI_ASR_DEVICE="cpu", ONSEI_ENHANCE_BACKEND="sidon",
        ONSEI_ENHANCE_SIDON_MODEL=models["sidon"],
        ONSEI_ENHANCE_DEVICE="cpu", ONSEI_TOKENIZE_NEUCODEC_MODEL=models["neucodec"],
        ONSEI_TOKENIZE_DEVICE="cpu", ONSEI_TOKENIZE_BATCH_SECONDS="20")


def test_three_fleets_end_to_end(env, request) -> None:
    workers = [start_worker(f"services.{st}", st, env) for st in ("asr", "enhance", "tokenize")]
    for w in workers:
        request.addfinalizer(w.kill9)
    out = enqueue(["--range", f"0-{N - 1}"], env).stdout
    assert f"enqueued {N} (asr={N})" in out
    assert not wait_done(env, "tokenize", range(N), 420, workers), worker_logs(workers)
    led, s = ledger_for(env), settings_from(env)
    for i in range(N):
        asr = [json.loads(x) for x in
               led.store.read_bytes(f"asr/{s.shard_stem(i)}.jsonl").decode().splitlines()]
        assert [r["key"] for r in asr] == [f"{i:03d}_{TEXTS[i % 2][0]}"]
        assert asr[0]["language"] == TEXTS[i % 2][0], asr
        kept = sum(1 for r in asr for seg in r.get("segments", []) if seg.get("kept"))
        assert kept >= 1, asr
        tokens = [json.loads(x) for x in led.store.read_bytes(
            f"tokens/{s.tokenize_codec}/{s.shard_stem(i)}.jsonl").decode().splitlines()]
        assert len(tokens) == kept and len({t["id"] for t in tokens}) == kept  # each once
        assert all(t["codes"]["neu_tokens"] and t["text"] for t in tokens)
        # the text as spoken, from asr through the sidecar (Japanese: its reading too)
        assert all(t["text_spoken"] and t["text_spoken_by"] for t in tokens), tokens
        assert all(("reading" in t) == (TEXTS[i % 2][0] == "ja") for t in tokens), tokens
        assert led.store.exists(f"enhanced/{s.shard_stem(i)}.tar")
        for st in ("asr", "enhance", "tokenize"):
            rec = led.read_done(st, i)
            assert rec and rec.host and rec.wall_seconds > 0, (st, i)
    assert "enqueued 0" in enqueue(["--range", f"0-{N - 1}"], env).stdout
    status = run_cli(["services.ops.cli", "status", "--json"], env)
    data = json.loads(status.stdout)
    assert all(data["stages"][st]["done"] == N for st in ("asr", "enhance", "tokenize"))
    assert data["stages"]["asr"]["audio_hours_in"] > 0
