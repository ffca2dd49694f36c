"""``onsei dedup``: index the shards not indexed yet, match them against the whole corpus, and
write the result (services/dedup/result.py).

Exactly once, under the ledger's rules (docs/dedup.md):

1. a batch of new shards is added to the local index, its candidate pairs are confirmed, and
   the confirmed pairs are published whole as one part, ``_ledger/dedup/_parts/<name>.parquet``,
   listing the shards it indexed;
2. then each of those shards gets its record ``_ledger/dedup/<stem>.json``: only now does it
   count as indexed;
3. then the part's pairs join the local index.

After a crash: a part none of whose shards has a record is deleted and its shards indexed
again; a part with some records gets the rest (it was published whole); a local index that
lacks what the records say is rebuilt from the signature files and the parts, so any machine
can carry on. The local files are a cache of the store: an index file DuckDB cannot read is
built again, a local copy of a part or a signature file that does not read is fetched again,
and shards recorded under a part gone from the store are indexed again. The result is written
from every published pair, the list first, the summary (naming the list's SHA-256) last.

Of each recording's copies the one kept is, among those the filter policy in force passes
(``policy``: the one tokenize builds from the same settings), the best ranked; the result names
segments by corpus id (``services.records.corpus_id``), so a key two shards share is two
segments, never one listed as a copy of itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.ledger.store import Ledger
from common.storage import NotFound, Store
from common.storage.cached import fetch_copy
from services.dedup.index import Index, IndexDamaged, IndexInputError, discard
from services.dedup.parts import PARTS, DedupPartError, PartWriter, part_shards
from services.dedup.result import (
    DUPLICATES_KEY,
    SUMMARY_KEY,
    Cluster,
    DedupSummary,
    copy_line,
    read_quality,
)
from services.dedup.settings import DedupSettings
from services.dedup.signature import (
    FingerprintColumn,
    SignatureError,
    check_signatures,
    fingerprints,
    read_signatures,
    signature_key,
)
from services.dedup.step import STEP as DECLARED
from services.dedup.verify import Rule, confirm, confirm_pool
from services.records import corpus_id

if TYPE_CHECKING:
    from services.rules.policy import FilterPolicy

log = logging.getLogger(__name__)

STAGE = DECLARED.name  # its records: _ledger/dedup/<stem>.json
KIND = "same_recording"
LARGEST_CLUSTERS = 20  # listed in the summary: enough to spot a stock phrase or a loop
CHUNK_PAIRS = 20_000  # candidate pairs confirmed together (their fingerprints: ~90 MB at 9 s)


class NothingToDedup(RuntimeError):
    """No shard under the output root has finished the enhance stage."""


@dataclass
class Progress:
    indexed: int = 0
    segments: int = 0
    candidates: int = 0
    confirmed: int = 0
    unchecked: int = 0
    bad: dict[str, str] = field(default_factory=dict)
    rebuilt: str | None = None  # why the local index was built again from the store
    # CPU seconds of this process by phase (DuckDB's threads included)
    cpu: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        t0 = time.process_time()
        try:
            yield
        finally:
            self.cpu[phase] = self.cpu.get(phase, 0.0) + time.process_time() - t0


class Deduper:
    def __init__(self, settings: DedupSettings, store: Store, ledger: Ledger,
                 workdir: Path | None = None, policy: FilterPolicy | None = None) -> None:
        self.s = settings
        self.policy = policy  # None: the copy kept is chosen by quality scores alone
        self.store = store
        self.ledger = ledger
        root = Path(settings.dedup_workdir or Path(settings.scratch_dir) / "onsei-dedup")
        # one cache per output root: two roots never share an index
        tag = hashlib.sha256(settings.output_url.encode()).hexdigest()[:12]
        self.workdir = workdir or root / tag
        self.sigdir = self.workdir / "signatures"
        self.rule = Rule(settings.dedup_max_ber, settings.dedup_min_overlap,
                         settings.dedup_max_shift_seconds)
        self.progress = Progress()
        self.workers = settings.dedup_confirm_workers or os.cpu_count() or 1
        self.pool: Executor | None = None  # made by run(), shut down at its end

    # --- signature files ------------------------------------------------------------------
    def _sig_key(self, shard: int) -> str:
        return signature_key(self.s, shard)

    def _local(self, shard: int, fresh: bool) -> Path:
        """The shard's signature file: downloaded again when ``fresh`` (a shard being indexed
        may have been enhanced again since), else the copy a past batch downloaded."""
        dest = self.sigdir / Path(self._sig_key(shard)).name
        if fresh or not dest.exists():
            try:
                self.store.get_file(self._sig_key(shard), dest)
            except NotFound:
                raise SignatureError("missing") from None
        return dest

    def _table(self, shard: int, columns: list[str], fresh: bool = True) -> Any:
        try:
            try:
                return read_signatures(self._local(shard, fresh), columns)
            except SignatureError:
                if fresh:
                    raise
                return read_signatures(self._local(shard, True), columns)  # a bad local copy
        except SignatureError as e:
            self.progress.bad[self._sig_key(shard)] = str(e)
            (self.sigdir / Path(self._sig_key(shard)).name).unlink(missing_ok=True)
            return None

    def _fingerprints(self, shard: int) -> FingerprintColumn | None:
        t = self._table(shard, ["fp"], fresh=False)
        return None if t is None else fingerprints(t)

    # --- the run --------------------------------------------------------------------------
    def run(self, ids: Collection[int] | None = None,
            on_batch: Callable[[Progress, int], None] | None = None) -> DedupSummary:
        enhanced = self.ledger.done_ids(DECLARED.after, ids)
        done = self.ledger.done_ids(STAGE)
        if not enhanced and not done:
            where = "" if ids is None else " in the range given"
            raise NothingToDedup(f"no enhanced shards under {self.s.output_url}{where}: run the "
                                 "enhance stage first (`onsei status` shows how far it is)")
        index = self._open_index()
        self.pool = confirm_pool(self.workers)
        try:
            done, again = self._repair(done)
            self._sync(index, done)
            new = sorted((enhanced - done) | again)
            step = self.s.dedup_batch_shards
            for i in range(0, len(new), step):
                self._index_batch(index, new[i:i + step])
                if on_batch:
                    on_batch(self.progress, len(new))
            with self.progress.timed("result"):
                return self._write_result(index)
        finally:
            index.close()
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)
                self.pool = None

    def _open_index(self) -> Index:
        """The local index; one DuckDB cannot read is removed and started empty (``_sync``
        fills it from the store)."""
        path = self.workdir / "index.duckdb"

        def one() -> Index:
            return Index(path, self.s.dedup_memory_limit_mb, self.s.dedup_threads,
                         acoustic=self.s.dedup_acoustic_keys, short=self.s.dedup_short_keys)

        try:
            return one()
        except IndexDamaged as e:
            log.warning("dedup: the local index cannot be read (%s): built again from the "
                        "store", e)
            self.progress.rebuilt = str(e)
            discard(path)
            return one()

    def _parts(self) -> dict[str, list[int]]:
        """Published parts -> the shards each indexed (read from the part's metadata)."""
        out = {}
        for key in self.store.list(PARTS):
            if key.endswith(".parquet"):
                out[key] = part_shards(self.store, key, self.workdir / "parts")
        return out

    def _repair(self, done: set[int]) -> tuple[set[int], set[int]]:
        """A crash's leftovers: finish a part's records, or drop a part that has none. Also
        the recorded shards whose part is gone from the store (its pairs lost): returned apart,
        left out of ``done``, to be indexed again (whether or not in the range asked for)."""
        parts = self._parts()
        covered = {s for shards in parts.values() for s in shards}
        lost = done - covered
        again: set[int] = set()
        if lost:
            again = lost & self.ledger.done_ids(DECLARED.after)
            log.warning("dedup: %d recorded shards have no part in the store (%s...): indexed "
                        "again", len(lost), sorted(lost)[:5])
            done = done - lost
        for key, shards in parts.items():
            have = [s for s in shards if s in done]
            if not have:
                log.info("dedup: %s was published but none of its shards recorded: dropped", key)
                self.store.delete(key)
                (self.workdir / "parts" / Path(key).name).unlink(missing_ok=True)
            elif len(have) < len(shards):
                for s in shards:
                    if s not in done:
                        self._record(s, key, None)
                        done.add(s)
        return done, again

    def _sync(self, index: Index, done: set[int]) -> None:
        """Make the local index hold exactly the recorded shards and every published pair."""
        index.remove_shards(index.shards() - done)  # added locally, never recorded
        for shard in sorted(done - index.shards()):
            self._add(index, shard)
        published = set(self._parts())
        index.forget_parts(index.parts() - published)  # gone: their shards are indexed again
        for key in sorted(published - index.parts()):
            local = self.workdir / "parts" / Path(key).name
            try:
                index.add_part_file(key, local)
            except IndexInputError:  # the local copy is damaged past its footer
                try:
                    index.add_part_file(key, fetch_copy(self.store, key, local.parent))
                except IndexInputError as e:
                    raise DedupPartError(f"the dedup part {key} cannot be read: {e}") from None

    def _add(self, index: Index, shard: int) -> int | None:
        """The shard's signatures into the index; None (and named as bad) when unusable."""
        p = self.progress
        try:
            with p.timed("read"):
                path = self._local(shard, fresh=True)
                check_signatures(path)
            with p.timed("index"):
                return index.add_shard(shard, path)
        except (SignatureError, IndexInputError) as e:
            p.bad[self._sig_key(shard)] = str(e)
            (self.sigdir / Path(self._sig_key(shard)).name).unlink(missing_ok=True)
            return None

    def _index_batch(self, index: Index, batch: list[int]) -> None:
        """Each shard goes into the local index on its own; the candidates are streamed in
        chunks and the confirmed pairs written to the part file as they come: memory is
        bounded by DuckDB's limit and a chunk, not by the batch. Shards added here but not
        recorded (a crash) are removed by the next run's :meth:`_sync`."""
        p = self.progress
        rows: dict[int, int] = {}
        for shard in batch:
            n = self._add(index, shard)
            if n is not None:
                rows[shard] = n
        if not rows:
            return
        name = f"part-{min(rows):09d}-{uuid.uuid4().hex[:12]}.parquet"
        local = self.workdir / "parts" / name
        found = unchecked = candidates = 0
        with PartWriter(local, sorted(rows)) as part:
            chunks = index.candidates(rows, self.s.dedup_duration_slack_seconds,
                                      self.s.dedup_duration_slack_fraction,
                                      self.s.dedup_max_bucket, chunk=CHUNK_PAIRS)
            while True:
                with p.timed("candidates"):
                    chunk = next(chunks, None)
                if chunk is None:
                    break
                with p.timed("confirm"):
                    edges, missed = confirm(chunk, self._fingerprints, self.rule, self.pool,
                                            self.workers)
                part.write(edges)
                candidates += len(chunk)
                found += len(edges)
                unchecked += missed
        key = PARTS + name
        self.store.put_file(local, key)  # published whole, before any record
        for shard in sorted(rows):
            self._record(shard, key, rows[shard])
        index.add_part_file(key, local)
        p.indexed += len(rows)
        p.segments += sum(rows.values())
        p.candidates += candidates
        p.confirmed += found
        p.unchecked += unchecked

    def _record(self, shard: int, part: str, segments: int | None) -> None:
        self.ledger.mark_done(STAGE, shard, {"part": part, "segments": segments,
                                             "signatures": self._sig_key(shard)})

    # --- the result ---------------------------------------------------------------------------
    def _write_result(self, index: Index) -> DedupSummary:
        """The list streamed to a local file (its SHA-256 on the way), published, then the
        summary: memory stays within the index's limit whatever the number of copies."""
        policy = self.policy
        index.cluster(None if policy is None else
                      lambda q: policy.passes(read_quality(q)))
        local = self.workdir / "duplicates.jsonl"
        digest = hashlib.sha256()
        with open(local, "wb") as fh:
            for chunk in index.duplicates():
                body = "".join(copy_line(KIND, c).to_json() + "\n" for c in chunk).encode()
                digest.update(body)
                fh.write(body)
        clusters, dups, secs = index.cluster_totals()
        summary = DedupSummary(
            shards=sorted(index.shards()),
            segments=index.segment_count(),
            clusters=clusters,
            duplicate_segments=dups,
            duplicate_seconds=round(secs, 3),
            largest=[Cluster(keep=corpus_id(k, ks), size=n, seconds=round(sec, 3), text=t)
                     for k, ks, n, sec, t in index.largest(LARGEST_CLUSTERS)],
            bad_signatures=dict(sorted(self.progress.bad.items())),
            duplicates_sha256=digest.hexdigest(),
            finished_at=time.time(),
        )
        self.store.put_file(local, DUPLICATES_KEY)
        self.store.write_bytes(SUMMARY_KEY, summary.to_json().encode())
        return summary
