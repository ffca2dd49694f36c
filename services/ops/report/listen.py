"""Hear what the filters dropped: the report's section with, per filter reason, a sample of the
segments it removes and of the kept ones nearest its threshold, each with a player, its text,
its scores and its reasons (docs/quality.md, hearing what was dropped).

The enhanced tars of the first ``max_shards`` enhanced shards are read (sidecar and restored
FLAC of each segment) and judged by the filter policy in force (``ONSEI_FILTER_*``), as
``onsei export --dry-run`` judges them. The audio is embedded in the page as base64 ``data:``
URIs, so the page plays offline, mailed or archived; ``max_bytes`` bounds what it embeds. The
same scan counts every segment by length and speaker (:mod:`fairness`).
"""

from __future__ import annotations

import base64
import heapq
import posixpath
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from common.settings import Settings
from common.shards.members import iter_keys
from common.storage import NotFound, Store
from services.ops.report.fairness import Fairness
from services.ops.report.fairness import html as fairness_html
from services.records import Quality, RecordError, Sidecar, corpus_id
from services.rules.policy import FilterPolicy, reason_kind
from services.stages import PIPELINE

PER_REASON = 4  # dropped segments heard per reason
NEAR = 3  # kept segments nearest the threshold per reason
MAX_BYTES = 24 * 2 ** 20  # audio embedded in the page at most
MIME = {"flac": "audio/flac", "wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg"}


def _ovrl(q: Quality) -> float | None:
    return None if q.dnsmos_after is None else q.dnsmos_after.ovrl


def _delta(q: Quality) -> float | None:
    return None if q.dnsmos_delta is None else q.dnsmos_delta.ovrl


# reason kind prefix -> (the score it reads, +1: dropped above the threshold, -1: below)
SCORES: dict[str, tuple[str, Callable[[Quality], float | None], int]] = {
    "music": ("music", lambda q: q.music, +1),
    "overlap": ("overlap", lambda q: q.overlap, +1),
    "dnsmos_ovrl": ("DNSMOS OVRL", _ovrl, -1),
    "dnsmos_delta": ("OVRL after - before", _delta, -1),
    "speech_fraction": ("speech fraction", lambda q: q.speech_fraction, -1),
    "multi_speaker": ("speaker consistency", lambda q: q.speaker_consistency, -1),
}


def score_of(kind: str) -> tuple[str, Callable[[Quality], float | None], int] | None:
    return next((v for k, v in SCORES.items() if kind.startswith(k)), None)


@dataclass
class Clip:
    segment: str
    text: str
    seconds: float
    reasons: list[str]
    scores: dict[str, float | None]
    audio: bytes
    mime: str


@dataclass
class Listening:
    shards: int = 0
    dropped: dict[str, list[Clip]] = field(default_factory=dict)
    near: dict[str, list[tuple[float, int, Clip]]] = field(default_factory=dict)  # heaps
    fairness: Fairness = field(default_factory=Fairness)
    unreadable: list[str] = field(default_factory=list)
    _n: int = 0

    def keep_near(self, kind: str, distance: float, clip: Clip) -> None:
        """Among the kept, the ``NEAR`` nearest ``kind``'s threshold (a max-heap on distance)."""
        heap = self.near.setdefault(kind, [])
        self._n += 1
        item = (-distance, self._n, clip)
        if len(heap) < NEAR:
            heapq.heappush(heap, item)
        elif -distance > heap[0][0]:
            heapq.heapreplace(heap, item)


def _scores(q: Quality | None) -> dict[str, float | None]:
    if q is None:
        return {}
    return {name: get(q) for name, get, _ in SCORES.values()}


def _threshold(reason: str) -> float | None:
    for sep in ("<", ">"):
        if sep in reason:
            try:
                return float(reason.split(sep, 1)[1])
            except ValueError:
                return None
    return None


def _enabled_kinds(policy: FilterPolicy) -> dict[str, float]:
    """The numeric rules in force: their reason kind (as :meth:`FilterPolicy.reasons` writes
    it) -> threshold; multi_speaker is a flag (its threshold is enhance's)."""
    out: dict[str, float] = {}
    if policy.max_music < 1:
        out[f"music>{policy.max_music:g}"] = policy.max_music
    if policy.max_overlap < 1:
        out[f"overlap>{policy.max_overlap:g}"] = policy.max_overlap
    if policy.min_ovrl > 0:
        out[f"dnsmos_ovrl<{policy.min_ovrl:g}"] = policy.min_ovrl
    if policy.min_speech_fraction > 0:
        out[f"speech_fraction<{policy.min_speech_fraction:g}"] = policy.min_speech_fraction
    return out


def _shard(path: Path, shard: int, policy: FilterPolicy, got: Listening,
           max_member_bytes: int | None) -> None:
    kinds = _enabled_kinds(policy)
    for item in iter_keys(path, max_member_bytes):
        if item.key is None or item.error is not None or "json" not in item.files:
            got.unreadable.append(f"shard {shard}: {item.name}")
            continue
        try:
            meta = Sidecar.from_json(item.data("json"))
        except RecordError:
            got.unreadable.append(f"shard {shard}: {item.name}")
            continue
        q = meta.quality.filterable() if meta.quality is not None else None
        reasons = policy.reasons(q)
        seconds = float(meta.duration_seconds or 0.0)
        speaker = corpus_id(meta.speaker_id, shard) if meta.speaker_id else None
        got.fairness.add(seconds, speaker, reasons)
        ext = next((e for e in MIME if e in item.files), None)
        if ext is None:
            continue
        clip = Clip(corpus_id(item.key, shard), meta.text, seconds, reasons, _scores(q),
                    item.data(ext), MIME[ext])
        for r in reasons:
            taken = got.dropped.setdefault(reason_kind(r), [])
            if len(taken) < PER_REASON:
                taken.append(clip)
        if reasons or q is None:
            continue
        for kind, thr in kinds.items():
            spec = score_of(kind)
            v = spec[1](q) if spec else None
            if v is not None:
                got.keep_near(kind, abs(v - thr), clip)


def listen(store: Store, settings: Settings, shards: list[int], policy: FilterPolicy,
           max_shards: int = 8) -> Listening:
    """Samples from the first ``max_shards`` of ``shards`` (enhanced ones)."""
    got = Listening()
    Path(settings.scratch_dir).mkdir(parents=True, exist_ok=True)
    for shard in sorted(shards)[:max_shards]:
        key = PIPELINE.output_key("enhance", settings, shard)
        with tempfile.TemporaryDirectory(prefix="onsei-listen-", dir=settings.scratch_dir) as d:
            local = Path(d) / "enhanced.tar"
            try:
                store.get_file(key, local)
            except NotFound:
                got.unreadable.append(f"{posixpath.basename(key)}: missing")
                continue
            try:
                _shard(local, shard, policy, got, settings.max_member_bytes)
            except Exception as e:  # noqa: BLE001 - a damaged tar is named; the rest is heard
                got.unreadable.append(f"{posixpath.basename(key)}: {type(e).__name__}")
        got.shards += 1
    return got


def _clip_html(c: Clip, budget: list[int]) -> str:
    scores = ", ".join(f"{k} {v:.3g}" for k, v in c.scores.items() if v is not None)
    if len(c.audio) <= budget[0]:
        budget[0] -= len(c.audio)
        b64 = base64.b64encode(c.audio).decode("ascii")
        player = f'<audio controls preload="none" src="data:{c.mime};base64,{b64}"></audio>'
    else:
        player = '<span class="bad">(audio left out: the page holds enough)</span>'
    return (f'<div class="clip"><div>{player}</div><div><b>{escape(c.segment)}</b> '
            f"({c.seconds:.1f} s) &middot; {escape(', '.join(c.reasons) or 'kept')}</div>"
            f"<div>{escape(c.text)}</div><div class=scores>{escape(scores)}</div></div>")


CSS = (".clip{border:1px solid #eee;padding:6px;margin:6px 0;font-size:14px}"
       ".clip .scores{color:#555;font-size:12px}.listen h3{margin-bottom:.2em}")


def html(got: Listening, total_shards: int, max_bytes: int = MAX_BYTES) -> str:
    """The section: fairness tables, then per reason the dropped and the near-kept clips."""
    budget = [max_bytes]
    parts = [f"<style>{CSS}</style>",
             (f"<p>From {got.shards} of {total_shards} enhanced shards, judged by the "
              "filter settings in force.</p>"), fairness_html(got.fairness)]
    for kind in sorted(set(got.dropped) | set(got.near)):
        dropped = got.dropped.get(kind, [])
        near = [c for _, _, c in sorted(got.near.get(kind, []), key=lambda t: -t[0])]
        parts.append(f'<div class="listen" data-reason="{escape(kind)}">'
                     f"<h3>{escape(kind)}</h3>")
        if dropped:
            parts.append(f"<p>removed (first {len(dropped)}):</p>")
            parts += [_clip_html(c, budget) for c in dropped]
        if near:
            parts.append("<p>kept, nearest the threshold:</p>")
            parts += [_clip_html(c, budget) for c in near]
        parts.append("</div>")
    if not got.dropped and not got.near:
        parts.append("<p>no segment removed or near a threshold</p>")
    if got.unreadable:
        parts.append("<p class=bad>unreadable: " + escape("; ".join(got.unreadable[:20]))
                     + "</p>")
    return "".join(parts)


def section(output_url: str, settings: Settings, max_shards: int) -> str:
    """The report's section for the run at ``output_url`` ("" with ``max_shards`` 0)."""
    if max_shards <= 0:
        return ""
    from common.storage import open_store
    from common.storage.location import absolute_url
    from services.stages import open_ledger

    store = open_store(absolute_url(output_url), settings)
    shards = sorted(open_ledger(settings, store).done_ids("enhance"))
    got = listen(store, settings, shards, FilterPolicy.from_settings(settings), max_shards)
    return html(got, len(shards))
