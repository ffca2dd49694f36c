"""What an export keeps, beyond the filter policy: the licence policy, the takedowns and the
test-set scrub, as reasons beside the filter's (``licence:<id>``, ``takedown:<request>``,
``test_set:<name>``), so every removal is counted on the card like any other; and each line's
``origin`` (its input file's source URL or id) and ``licence``.

The hooks into the export (services/ops/export/run.py) are three: :meth:`Screen.policy` wraps
a shard's filter policy, :meth:`Screen.decorate` adds the fields to a line, and
services/ops/provenance/card.py writes the card's section.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from common.settings import Settings
from common.storage import NotFound, Store
from services.dedup.result import DedupResult
from services.ops.export.line import ExportLine
from services.ops.provenance.corpus import Corpus, source_key
from services.ops.provenance.requests import Takedown, load_all
from services.ops.provenance.resolve import Resolution, resolve
from services.ops.provenance.scrub import ScrubIndex
from services.ops.provenance.testsets import TestSetError
from services.provenance.record import UNKNOWN, spdx
from services.records import corpus_id, local_name
from services.rules.policy import FilterPolicy
from services.speakers.result import Label

LICENCE, TAKEDOWN, TEST_SET = "licence:", "takedown:", "test_set:"


class ScreenError(ValueError):
    """The screening cannot be done as asked (one line; the export writes nothing)."""


@dataclass(frozen=True)
class ScreenOptions:
    """``licences``: the only licences kept (SPDX ids, ``unknown`` to keep files without
    metadata); None: every licence. ``test_sets``: folders of test audio to scrub."""

    licences: tuple[str, ...] | None = None
    test_sets: tuple[Path, ...] = ()

    @classmethod
    def parse(cls, licences: str | None, test_sets: tuple[str, ...] = ()) -> ScreenOptions:
        allowed = None
        if licences is not None and licences.strip():
            allowed = tuple(dict.fromkeys(
                UNKNOWN if x.strip().lower() == UNKNOWN else spdx(x)[0]
                for x in licences.split(",") if x.strip()))
        return cls(allowed, tuple(Path(t) for t in test_sets))

    def unknown_licences(self) -> list[str]:
        """The licences asked for that are neither SPDX ids onsei knows nor ``unknown``."""
        return [x for x in self.licences or () if x != UNKNOWN and not spdx(x)[1]]


@dataclass(frozen=True)
class ScreenedPolicy(FilterPolicy):
    """A shard's filter policy with the screen's reasons after the filter's."""

    screen: Any = field(default=None, compare=False)

    def reasons(self, quality: Any, segment: str | None = None) -> list[str]:
        out = super().reasons(quality, segment)
        if self.screen is not None and segment is not None and self.shard is not None:
            out += self.screen.reasons_for(self.shard, segment)
        return out


@dataclass
class Screen:
    options: ScreenOptions
    corpus: Corpus
    requests: list[Takedown]
    resolution: Resolution
    scrub: ScrubIndex | None
    store: Store
    settings: Settings
    workdir: Path
    matches: dict[int, dict[str, tuple[str, str]]] = field(default_factory=dict)
    not_scrubbed: dict[int, str] = field(default_factory=dict)  # shard -> why
    how: Counter[tuple[str, str]] = field(default_factory=Counter)  # (test set, audio/text)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, settings: Settings, store: Store, shards: list[int],
             dedup: DedupResult | None, labels: Mapping[int, Mapping[str, Label] | None],
             options: ScreenOptions, workdir: Path) -> Screen:

        requests, bad = load_all(store)
        if bad:
            key, why = next(iter(bad.items()))
            raise ScreenError(f"takedown request {key} unreadable ({why}): fix or restore it "
                              "before exporting (a request is never skipped)")
        try:
            scrub = ScrubIndex.build(list(options.test_sets)) if options.test_sets else None
        except (TestSetError, OSError) as e:
            raise ScreenError(str(e)) from None
        if scrub is not None and not scrub.utterances:
            raise ScreenError("--exclude-test-sets: no audio file in "
                              + ", ".join(str(p) for p in options.test_sets))
        corpus = Corpus.load(store, settings, shards, dedup, labels)
        if any(t.kind == "voice" and t.embedding for t in requests):
            from services.ops.provenance.voice import rematch
            from services.stages import open_ledger

            requests = rematch(settings, store, open_ledger(settings, store), requests)
        resolution = Resolution()
        if requests:  # DuckDB and Arrow only when there is something to resolve
            import duckdb

            con = duckdb.connect()
            try:
                prov, seg = corpus.tables()
                con.register("prov_in", prov)
                con.register("seg_in", seg)
                resolution = resolve(con, requests, "prov_in", "seg_in")
            finally:
                con.close()
        return cls(options, corpus, requests, resolution, scrub, store, settings, workdir)

    # --- the hooks --------------------------------------------------------------------------
    def policy(self, base: FilterPolicy, shard: int) -> FilterPolicy:
        """``base`` (the shard's filter policy) with the screen's reasons; the test sets are
        matched against the shard's signatures now (in the export's reading thread)."""
        if self.scrub is not None:
            self._scrub(shard)
        values = {f.name: getattr(base, f.name) for f in fields(base) if f.init}
        return ScreenedPolicy(**values, screen=self)

    def decorate(self, shard: int) -> Callable[[ExportLine], ExportLine]:
        def add(line: ExportLine) -> ExportLine:
            p = self.corpus.of(shard, source_key(line.id))
            return line.model_copy(update={"origin": p.source, "licence": p.licence})
        return add

    # --- the decisions ----------------------------------------------------------------------
    def reasons_for(self, shard: int, segment: str) -> list[str]:
        local = local_name(segment)
        out = []
        allowed = self.options.licences
        if allowed is not None:
            licence = self.corpus.of(shard, source_key(local)).licence
            if licence not in allowed:
                out.append(f"{LICENCE}{licence}")
        if not self.resolution.empty:
            key = source_key(local)
            label = (self.corpus.labels.get(shard) or {}).get(local)
            for req in self.resolution.covering(corpus_id(local, shard), shard, key,
                                                label[0] if label else None,
                                                self.corpus.of(shard, key).source):
                out.append(f"{TAKEDOWN}{req}")
        hit = self.matches.get(shard, {}).get(local) if self.matches else None
        if hit is not None:
            out.append(f"{TEST_SET}{hit[0]}")
            with self._lock:
                self.how[hit] += 1
        return out

    def _scrub(self, shard: int) -> None:
        from services.dedup.signature import SignatureError, read_signatures, signature_key

        assert self.scrub is not None
        key = signature_key(self.settings, shard)
        local = self.workdir / f"{shard}.scrub.parquet"
        try:
            self.store.get_file(key, local)
            table = read_signatures(local, ["id", "text", "language", "fp"])
            found = self.scrub.match(table)
        except (NotFound, SignatureError) as e:
            with self._lock:
                self.not_scrubbed[shard] = f"{key}: {type(e).__name__}: {e}"[:200]
            return
        finally:
            local.unlink(missing_ok=True)
        with self._lock:
            self.matches[shard] = found
