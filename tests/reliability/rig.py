"""A disposable pipeline under test: private Redis, a bucket on the moto S3 server (optionally
behind the fault proxy), input shards, real worker processes, and the exactly-once audit.

    rig = Rig.create(tmp_path, s3_endpoint, pipeline="dummy", shards=12)
    rig.start_workers(3); rig.enqueue(); rig.wait_all(120)
    audit = rig.audit(); audit.assert_exactly_once()
"""

from __future__ import annotations

import json
import os
import tarfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import boto3

from common.ledger.records import DoneRecord
from fixtures.speechgen import make_shard
from tests.harness import Worker, enqueue, pipeline_env, start_worker, wait_done, worker_logs
from tests.reliability.servers import RedisServer

APP = "tests.reliability.fault_app"
CHAINS = {"dummy": ("asr", "enhance", "tokenize"), "real": ("asr", "enhance")}
PHRASES = ("hello world this is a test", "the weather is nice today",
           "please call me back tomorrow morning")


def _speech_members() -> list[bytes]:
    from fixtures.speechgen import synth, wav_bytes

    return [wav_bytes(synth(p, voice="en")) for p in PHRASES]


@dataclass
class Audit:
    """What the outputs and the ledger say after a run (counts over the whole range)."""

    lost: list[str] = field(default_factory=list)  # stage:shard without a done record
    duplicated: list[str] = field(default_factory=list)  # a segment/line present twice
    missing_items: list[str] = field(default_factory=list)  # a segment/line that should be there
    redone: list[str] = field(default_factory=list)  # a done record written more than once
    disagree: list[str] = field(default_factory=list)  # ledger counts vs output contents
    dead_lettered: list[str] = field(default_factory=list)
    segments: int = 0

    def assert_exactly_once(self, allow_redone: bool = False) -> None:
        """Every shard done exactly once, every output holds each segment exactly once, the
        ledger agrees with the outputs, nothing dead-lettered."""
        assert self.lost == [], f"lost: {self.lost}"
        assert self.duplicated == [], f"duplicated: {self.duplicated}"
        assert self.missing_items == [], f"missing: {self.missing_items}"
        assert self.disagree == [], f"ledger disagrees: {self.disagree}"
        assert self.dead_lettered == [], f"dead-lettered: {self.dead_lettered}"
        if not allow_redone:
            assert self.redone == [], f"done more than once: {self.redone}"
        assert self.segments > 0


# Where a test loses a worker: longer than 2 shards (one in hand + one prefetched, unacked)
# on a busy machine (8 s once redelivered one still in hand at load 12 on 2 cores), short
# enough that the lost shard returns within the test.
REDELIVER_SECONDS = {"dummy": "20", "real": "150"}


@dataclass
class Rig:
    root: Path
    pipeline: str
    ids: range
    bucket: str
    s3_direct: str  # the moto server itself
    redis: RedisServer
    env: dict[str, str]  # what workers get (S3 through the proxy when there is one)
    keys: dict[int, list[str]]
    workers: list[Worker] = field(default_factory=list)
    retired: list[Worker] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path, s3_endpoint: str, pipeline: str = "dummy", shards: int = 12,
               keys_per_shard: int = 3, member_bytes: int = 256, s3_for_workers: str | None = None,
               scratch: Path | None = None, persist_redis: bool = False,
               **env_extra: str) -> Rig:
        root.mkdir(parents=True, exist_ok=True)
        redis = RedisServer(root / "redis", persist=persist_redis).start()
        bucket = f"faults-{uuid.uuid4().hex[:10]}"
        s3 = boto3.client("s3", endpoint_url=s3_endpoint)
        s3.create_bucket(Bucket=bucket)
        # Versioning: a done record PUT twice leaves two versions, so "done exactly once" is
        # observable after the fact.
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        speech = _speech_members() if pipeline == "real" else []
        keys: dict[int, list[str]] = {}
        ids = range(shards)
        for i in ids:
            names = [f"s{i:03d}k{j}" for j in range(keys_per_shard)]
            if pipeline == "real":
                members = {k: {"wav": speech[(i + j) % len(speech)]} for j, k in enumerate(names)}
            else:
                members = {k: {"wav": os.urandom(member_bytes)} for k in names}
            p = make_shard(root / "in" / f"shard-{i:06d}.tar", members)
            s3.upload_file(str(p), bucket, f"raw/{p.name}")
            keys[i] = names
        endpoint = s3_for_workers or s3_endpoint
        extra = {
            "AWS_ENDPOINT_URL": endpoint, "ONSEI_S3_ENDPOINT_URL": endpoint,
            "ONSEI_FAULT_PIPELINE": pipeline, "ONSEI_FAULT_DIR": str(root),
            "ONSEI_ASR_MODEL": "bundled:whisper-base", "ONSEI_ASR_DEVICE": "cpu",
            "ONSEI_ENHANCE_BACKEND": "none", "ONSEI_UNTIL": CHAINS[pipeline][-1],
            # Redelivery of unacked messages is only needed where a worker is lost (kill -9,
            # Redis down: those tests ask for REDELIVER_SECONDS); elsewhere a short timeout
            # only hands a reserved (prefetched, or retried with a countdown) message to a
            # second worker under load ("asr:0 x2"), so by default it never fires.
            "ONSEI_VISIBILITY_TIMEOUT": "600",
            "ONSEI_S3_MAX_ATTEMPTS": "10",
        }
        extra.update(env_extra)
        env = pipeline_env(redis.url, f"s3://{bucket}/raw", f"s3://{bucket}/out",
                           scratch or root / "scratch", **extra)
        return cls(root, pipeline, ids, bucket, s3_endpoint, redis, env, keys)

    # --- running --------------------------------------------------------------------------------
    @property
    def chain(self) -> tuple[str, ...]:
        return CHAINS[self.pipeline]

    @property
    def direct_env(self) -> dict[str, str]:
        """The operator's view: S3 without the fault proxy."""
        return {**self.env, "AWS_ENDPOINT_URL": self.s3_direct,
                "ONSEI_S3_ENDPOINT_URL": self.s3_direct}

    def start_workers(self, n: int = 1, queues: str | None = None, **extra: str) -> list[Worker]:
        started = [start_worker(APP, queues or ",".join(self.chain), {**self.env, **extra},
                                log_dir=self.root / "logs") for _ in range(n)]
        self.workers.extend(started)
        return started

    def kill9(self, w: Worker) -> None:
        w.kill9()
        self.workers.remove(w)
        self.retired.append(w)

    def enqueue(self) -> str:
        # --range A-B includes B
        return enqueue(["--range", f"{self.ids.start}-{self.ids.stop - 1}", "--until",
                        self.chain[-1]], self.direct_env).stdout

    def wait_all(self, timeout: float) -> set[int]:
        return wait_done(self.direct_env, self.chain[-1], self.ids, timeout, self.workers)

    def logs(self, tail: int = 3000) -> str:
        return worker_logs(self.workers + self.retired, tail=tail)

    def not_done(self, missing: set[int]) -> str:
        """The failure message of a run that left shards undone: them, Redis, the logs."""
        return f"not done: {sorted(missing)}\n{self.broker_state()}\n{self.logs()[-6000:]}"

    def broker_state(self) -> str:
        """What Redis holds for a shard that never finished: queue lengths, kombu's unacked
        messages (task, shard, age) and its restore lock."""
        import time

        try:
            r = self.redis.client()
            now = time.time()
            lines = [f"queues: { {q: r.llen(q) for q in self.chain} }",
                     f"unacked_mutex ttl: {r.ttl('unacked_mutex')}"]
            ages = {k.decode(): now - v for k, v in r.zrange("unacked_index", 0, -1,
                                                              withscores=True)}
            for tag, raw in r.hgetall("unacked").items():
                msg = json.loads(raw)[0]
                head = msg["headers"]
                lines.append(f"unacked {head.get('task')} {head.get('argsrepr')}"
                             f" age {ages.pop(tag.decode(), float('nan')):.1f}s")
            lines += [f"index only: {t} age {a:.1f}s" for t, a in ages.items()]
            return "\n".join(lines)
        except Exception as e:  # noqa: BLE001 - a diagnostic, never the test's failure
            return f"broker state unreadable: {e!r}"

    def close(self) -> None:
        for w in self.workers:
            w.kill9()  # the run is over: no need to wait for a graceful shutdown
        self.redis.stop(hard=True)

    # --- the audit --------------------------------------------------------------------------------
    def _ledger(self):
        from tests.harness import ledger_for

        return ledger_for(self.direct_env)

    def audit(self) -> Audit:
        a = Audit()
        ledger = self._ledger()
        store = ledger.store
        s = ledger.settings
        s3 = boto3.client("s3", endpoint_url=self.s3_direct)
        for stage in self.chain:
            a.dead_lettered += [f"{stage}:{r.shard_id}" for r in ledger.failures(stage)
                                if r.dead_lettered]
            stray = ledger.done_ids(stage) - set(self.ids)
            a.duplicated += [f"{stage}:{i} (outside the range)" for i in sorted(stray)]
        for i in self.ids:
            prev: set[str] | None = None
            for stage in self.chain:
                rec = ledger.read_done(stage, i)
                if rec is None:
                    a.lost.append(f"{stage}:{i}")
                    prev = None
                    continue
                key = f"out/{ledger.done_key(stage, i)}"
                versions = [v for v in s3.list_object_versions(
                    Bucket=self.bucket, Prefix=key).get("Versions", []) if v["Key"] == key]
                # the same bytes twice are one write resent (its answer lost to a timeout or
                # a reset, the SDK retried); a second run writes another record (finished_at)
                if len({v["ETag"] for v in versions}) != 1:
                    a.redone.append(f"{stage}:{i} x{len(versions)}")
                items = _items(stage, store.read_bytes(_out_key(s, stage, i)))
                a.segments += len(items) if stage == self.chain[-1] else 0
                seen: set[str] = set()
                for it in items:
                    if it in seen:
                        a.duplicated.append(f"{stage}:{i}:{it}")
                    seen.add(it)
                expected = _expected(stage, prev, self.keys[i])
                for it in sorted(expected - seen):
                    a.missing_items.append(f"{stage}:{i}:{it}")
                for it in sorted(seen - expected):
                    a.duplicated.append(f"{stage}:{i}:{it} (unexpected)")
                n = _count(stage, rec)
                if n is not None and n != len(items):
                    a.disagree.append(f"{stage}:{i}: record says {n}, output holds {len(items)}")
                prev = _kept(stage, store.read_bytes(_out_key(s, stage, i)))
        return a


def _out_key(s, stage: str, i: int) -> str:
    from services.stages import output_key

    return output_key(stage, s, i)


def _items(stage: str, data: bytes) -> list[str]:
    """The units an output holds: asr lines by key, enhanced segments, token ids."""
    if stage == "enhance":  # one segment = {key}.json (+ its audio); count the .json members
        import io

        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            return [m.name[: -len(".json")] for m in tf.getmembers()
                    if m.isfile() and m.name.endswith(".json")]
    lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    return [str(x["key"] if stage == "asr" else x["id"]) for x in lines]


def _kept(stage: str, data: bytes) -> set[str]:
    """What the next stage must hold, derived from this stage's output."""
    if stage == "asr":
        out = set()
        for x in (json.loads(x) for x in data.decode().splitlines() if x.strip()):
            if x.get("status") == "ok":
                out |= {f"{x['key']}_{seg['idx']:04d}" for seg in x["segments"] if seg.get("kept")}
        return out
    return set(_items(stage, data))


def _expected(stage: str, prev: set[str] | None, keys: list[str]) -> set[str]:
    return set(keys) if stage == "asr" or prev is None else prev


def _count(stage: str, rec: DoneRecord) -> int | None:
    return rec.counts.get("files" if stage == "asr" else "segments")
