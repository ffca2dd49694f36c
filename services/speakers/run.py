"""``onsei speakers``: link the file speakers of the shards not linked yet to corpus speakers,
and publish each shard's labels (services/speakers/result.py).

Exactly once, under the ledger's rules, like ``onsei dedup`` (docs/speakers.md):

1. a batch of new shards is linked against the local index (services/speakers/link.py); the
   labels of each of its shards are published, ``speakers/<stem>.jsonl``;
2. then the batch's file speakers and their links are published whole as one part,
   ``_ledger/speakers/_parts/<name>.parquet`` (services/speakers/parts.py);
3. then each shard gets its record ``_ledger/speakers/<stem>.json``: only now is it linked.

After a crash: a part none of whose shards has a record is deleted (its shards are linked again,
their labels written again); a part with some records gets the rest. A local index that lacks
parts is brought up to date from them, one that does not match them is built again: any
machine can carry on. A recorded shard whose part is gone is an error: the speakers it founded
are lost, and the labels given after it name them.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.ledger.store import Ledger
from common.storage import NotFound, Store
from services.speakers.embeddings import EmbeddingsError, read_embeddings
from services.speakers.files import FileSpeakers, file_speakers
from services.speakers.index import SpeakerIndex
from services.speakers.link import Links, apply, confidence, link
from services.speakers.parts import (
    PARTS,
    Part,
    PartInfo,
    part_info,
    part_name,
    read_part,
    write_part,
)
from services.speakers.result import (
    SUMMARY_KEY,
    SpeakerLine,
    SpeakersSummary,
    labels_key,
    speaker_name,
)
from services.speakers.settings import SpeakersSettings
from services.speakers.step import STEP as DECLARED

log = logging.getLogger(__name__)

STAGE = DECLARED.name  # its records: _ledger/speakers/<stem>.json
# nearest corpus speakers proposed per file speaker, the best by cosine taken: past a handful
# the extra candidates are never the best (docs/speakers.md)
SEARCH_K = 8
NEW_SPEAKER_BYTES = 1800  # a centroid in the index with its graph, measured (docs/speakers.md)


class NothingToLink(RuntimeError):
    """No shard under the output root has finished the enhance stage."""


class SpeakersStateError(RuntimeError):
    """The published state is inconsistent, or would outgrow the memory allowed."""


@dataclass
class Progress:
    linked: int = 0
    segments: int = 0
    file_speakers: int = 0
    new_speakers: int = 0
    bad: dict[str, str] = field(default_factory=dict)
    rebuilt: int = 0  # parts replayed into the local index


class SpeakerLinker:
    def __init__(self, settings: SpeakersSettings, store: Store, ledger: Ledger,
                 workdir: Path | None = None) -> None:
        self.s = settings
        self.store = store
        self.ledger = ledger
        root = Path(settings.speakers_workdir or Path(settings.scratch_dir) / "onsei-speakers")
        tag = hashlib.sha256(settings.output_url.encode()).hexdigest()[:12]
        self.workdir = workdir or root / tag  # one cache per output root
        self.progress = Progress()

    def _source_key(self, shard: int) -> str:
        from services.pipeline import PIPELINE  # loads enhance's spec only, when first asked

        return PIPELINE.side_output_key(DECLARED.after, DECLARED.reads, self.s, shard)

    # --- the run --------------------------------------------------------------------------
    def run(self, ids: Collection[int] | None = None,
            on_batch: Callable[[Progress, int], None] | None = None) -> SpeakersSummary:
        enhanced = self.ledger.done_ids(DECLARED.after, ids)
        done = self.ledger.done_ids(STAGE)
        if not enhanced and not done:
            where = "" if ids is None else " in the range given"
            raise NothingToLink(f"no enhanced shards under {self.s.output_url}{where}: run the "
                                "enhance stage first")
        parts = self._repair(done)
        index = self._open_index(parts)
        new = sorted(enhanced - done)
        step = self.s.speakers_batch_shards
        for i in range(0, len(new), step):
            key = self._link_batch(index, new[i:i + step], len(parts))
            if key is not None:
                parts.append(key)
                index.save(self.workdir / "index", parts)
            if on_batch:
                on_batch(self.progress, len(new))
        return self._write_summary(index, parts)

    def published_index(self) -> SpeakerIndex:
        """The corpus speakers as published (the parts a recorded shard names), for a reader
        (a takedown by voice): nothing in the store is changed, only the local cache."""
        done = self.ledger.done_ids(STAGE)
        return self._open_index([k for k, p in self._parts().items() if set(p.shards) & done])

    def _parts(self) -> dict[str, PartInfo]:
        return {k: part_info(self.store, k, self.workdir / "parts")
                for k in sorted(self.store.list(PARTS)) if k.endswith(".parquet")}

    def _repair(self, done: set[int]) -> list[str]:
        """A crash's leftovers: a part with no record is dropped, one with some gets the rest.
        Returns the published parts in order."""
        parts = self._parts()
        kept = []
        for key, p in parts.items():
            have = [s for s in p.shards if s in done]
            if not have:
                log.info("speakers: %s was published but none of its shards recorded: dropped",
                         key)
                self.store.delete(key)
                (self.workdir / "parts" / Path(key).name).unlink(missing_ok=True)
                continue
            for s in p.shards:
                if s not in done:
                    self._record(s, key, None)
                    done.add(s)
            kept.append(key)
        lost = done - {s for k in kept for s in parts[k].shards}
        if lost:
            raise SpeakersStateError(
                f"{len(lost)} linked shards ({sorted(lost)[:5]}...) have no part under {PARTS}: "
                "the corpus speakers they founded are lost (restore the parts, or remove "
                "_ledger/speakers/ and speakers/ to link the corpus again)")
        return kept

    def _open_index(self, parts: list[str]) -> SpeakerIndex:
        """The local index brought up to the published parts: parts it lacks at the end are
        replayed; one that holds anything else is built again from all of them."""
        s = self.s
        index, held = SpeakerIndex.load(self.workdir / "index", s.speakers_index_dtype,
                                        s.speakers_threads)
        if held != parts[:len(held)]:
            log.warning("speakers: the local index does not match the published parts: built "
                        "again from them")
            index, held = SpeakerIndex(s.speakers_index_dtype, s.speakers_threads), []
        for key in parts[len(held):]:
            p = read_part(self.store, key, self.workdir / "parts")
            apply(index, p.means, p.segments, Links(p.speaker, int((p.speaker >= len(index))
                                                                   .sum())))
            self.progress.rebuilt += 1
        if len(held) < len(parts):
            index.save(self.workdir / "index", parts)
        return index

    def _read(self, shard: int) -> tuple[Path, FileSpeakers] | None:
        key = self._source_key(shard)
        local = self.workdir / "embeddings" / Path(key).name
        try:
            try:
                self.store.get_file(key, local)
            except NotFound:
                raise EmbeddingsError("missing") from None
            return local, file_speakers(read_embeddings(local))
        except EmbeddingsError as e:
            self.progress.bad[key] = str(e)
            local.unlink(missing_ok=True)
            return None

    def _link_batch(self, index: SpeakerIndex, batch: list[int], seq: int) -> str | None:
        got = {}
        for shard in batch:
            r = self._read(shard)
            if r is not None:
                got[shard] = r
        if not got:
            return None
        shards = sorted(got)
        fs = [got[s][1] for s in shards]
        means = np.concatenate([f.means for f in fs])
        segments = np.concatenate([f.segments for f in fs])
        links = link(means, index, self.s.speakers_link_threshold, SEARCH_K)
        need = index.memory_bytes + links.new * NEW_SPEAKER_BYTES
        if need > self.s.speakers_memory_limit_mb << 20:
            raise SpeakersStateError(
                f"the speaker index would hold {len(index) + links.new} speakers, ~{need >> 20} "
                f"MB, over speakers_memory_limit_mb={self.s.speakers_memory_limit_mb}")
        apply(index, means, segments, links)
        p = self.progress
        start = 0
        for shard, f in zip(shards, fs):
            spk = links.speaker[start:start + len(f.labels)]
            start += len(f.labels)
            self._publish_labels(index, shard, got[shard][0], f, spk)
            p.segments += int(f.segments.sum())
        key = part_name(seq, uuid.uuid4().hex[:12])
        local = self.workdir / "parts" / Path(key).name
        write_part(local, Part(shards, np.repeat(shards, [len(f.labels) for f in fs]),
                               [lb for f in fs for lb in f.labels], segments, links.speaker,
                               means))
        self.store.put_file(local, key)  # published whole, before any record
        for shard, f in zip(shards, fs):
            self._record(shard, key, int(f.segments.sum()))
        p.linked += len(shards)
        p.file_speakers += len(means)
        p.new_speakers += links.new
        return key

    def _publish_labels(self, index: SpeakerIndex, shard: int, local: Path, f: FileSpeakers,
                        spk: np.ndarray) -> None:
        """The shard's segments, each with its corpus speaker and its cosine to that speaker's
        centroid as it stands after this batch."""
        e = read_embeddings(local)  # again: a batch holds file speakers, not segments
        row_spk = spk[f.of_row]
        uniq, inv = np.unique(row_spk, return_inverse=True)
        conf = confidence(e.vectors, index.centroids(uniq)[inv])
        body = "".join(SpeakerLine(id=i, corpus_speaker_id=speaker_name(int(n)),
                                   corpus_speaker_confidence=round(float(c), 4)).to_json() + "\n"
                       for i, n, c in zip(e.ids, row_spk, conf))
        out = local.with_suffix(".jsonl")
        out.write_text(body, encoding="utf-8")
        self.store.put_file(out, labels_key(self.s, shard))
        out.unlink(missing_ok=True)
        local.unlink(missing_ok=True)

    def _record(self, shard: int, part: str, segments: int | None) -> None:
        self.ledger.mark_done(STAGE, shard, {"part": part, "segments": segments,
                                             "speakers_file": self._source_key(shard)})

    def _write_summary(self, index: SpeakerIndex, parts: list[str]) -> SpeakersSummary:
        shards: list[int] = []
        file_speakers = segments = 0
        for key in parts:
            p = part_info(self.store, key, self.workdir / "parts")
            shards += p.shards
            file_speakers += p.file_speakers
            segments += p.segments
        summary = SpeakersSummary(shards=sorted(shards), speakers=len(index),
                                  file_speakers=file_speakers, segments=segments,
                                  bad_files=dict(sorted(self.progress.bad.items())),
                                  finished_at=time.time())
        self.store.write_bytes(SUMMARY_KEY, summary.to_json().encode())
        return summary
