"""The enhance output must hold exactly the segments asr kept, each as long as asr said.

A shard must never pair one member's text with another member's audio, nor drop keys asr
kept, and still be marked done. Whatever the cause (a reader disagreeing with asr, an
undecodable member, an asr line that cannot be parsed), a shard whose output differs
from asr's kept segments -- by count, by key, or by a ``duration_seconds`` more than 20 ms away
from ``end - start`` -- fails here, before anything is published or marked done. A segment
cut at speaker changes (``turns.py``) counts as its pieces together, plus what the writer says
it trimmed off their edges where two voices overlap (``edges.py``): all of it, if no piece was
left. A segment a filter rule dropped before restoration (``early.py``) is not expected.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from services.enhance.errors import SegmentError
from services.enhance.segments import Plan, SegmentSpec
from services.records import segment_id

TOLERANCE_SECONDS = 0.02
_SHOW = 5  # names listed per problem in the message; the counts are complete


class SegmentMismatch(RuntimeError):
    """The written segments are not the kept ones: the shard must not be marked done."""


def segment_name(spec: SegmentSpec) -> str:
    return segment_id(spec.key, spec.idx)


def _some(names: list[str]) -> str:
    more = f" (+{len(names) - _SHOW} more)" if len(names) > _SHOW else ""
    return ", ".join(names[:_SHOW]) + more


def check_written(plan: Plan, written: list[tuple[SegmentSpec, float]],
                  errors: list[SegmentError], trimmed: Mapping[str, float] | None = None,
                  dropped: Collection[str] = ()) -> None:
    """Raise :class:`SegmentMismatch` unless ``written`` ((spec, duration_seconds) in output
    order) is exactly the plan's kept segments less those a filter rule ``dropped`` before
    restoration (by segment name: ``early.py``), each within 20 ms of its asr length with the
    seconds ``trimmed`` off it (by segment name)."""
    expected = {segment_name(s): s for specs in plan.by_key.values() for s in specs
                if segment_name(s) not in dropped}
    got: dict[str, float] = {}  # a segment cut at speaker changes: its pieces' total
    doubled: list[str] = []
    pieces: set[str] = set()
    for spec, seconds in written:
        name = segment_name(spec)
        piece = segment_id(spec.key, spec.idx, spec.part)
        if piece in pieces:
            doubled.append(piece)
        pieces.add(piece)
        got[name] = got.get(name, 0.0) + seconds
    for name, seconds in (trimmed or {}).items():
        got[name] = got.get(name, 0.0) + seconds
    problems = []
    missing = sorted(expected.keys() - got.keys())
    if missing:
        why = {e["key"]: e["reason"] for e in errors if e.get("key")}
        problems.append("missing " + _some(
            [f"{n} ({why.get(expected[n].key, 'not written')})" for n in missing]))
    unexpected = sorted(got.keys() - expected.keys())
    if unexpected:
        problems.append("not kept by asr " + _some(unexpected))
    if doubled:
        problems.append("written twice " + _some(sorted(doubled)))
    off = sorted(n for n in expected.keys() & got.keys()
                 if abs(got[n] - (expected[n].end - expected[n].start)) > TOLERANCE_SECONDS)
    if off:
        problems.append("duration off by > 20 ms " + _some(
            [f"{n} ({got[n]:.3f}s, asr {expected[n].end - expected[n].start:.3f}s)"
             for n in off]))
    unparsed = [e["reason"] for e in plan.errors]
    if unparsed:
        problems.append("asr output unreadable: " + _some(unparsed))
    if problems:
        raise SegmentMismatch(f"enhance wrote {len(written)} segments, asr kept "
                              f"{len(expected)}: " + "; ".join(problems))
