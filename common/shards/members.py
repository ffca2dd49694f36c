"""Which member of a shard key is its audio, and what is an error: ONE rule for every stage.

Were each stage to choose for itself, with ``a.wav`` and ``a.flac`` asr could transcribe one
and enhance cut the other: a segment's text from one file, its audio from another. So asr,
enhance and tokenize all read shards through :func:`iter_keys` and get, per key, the same
outcome:

- the audio is the key's one member whose extension's last dotted part is an audio format
  (``a.flac``, ``clip.take2.wav`` -> ext ``take2.wav``);
- no such member: ``error:no_audio``; two or more (``a.wav`` + ``a.flac``):
  ``error:ambiguous_audio:flac,wav`` -- never a guess;
- a bad audio member (too large, the same ``key.ext`` twice) makes the key an error with that
  reason; a bad sidecar (a ``.json`` too large) does not: the audio goes on and the sidecar's
  error is in ``notes``;
- a key that comes back after another key (``a``, ``b``, ``a``): the first occurrence decides,
  each later run of it is one ``duplicate_key`` error;
- a member whose name is unsafe (``..``, absolute, a link) is its own error, never a key.

Member errors come before their key's sample in :func:`common.shards.tar.iter_shard`; here they are
folded into the key's single outcome, so an error seen first cannot hide a good sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from common.shards.audio import AUDIO_EXTENSIONS
from common.shards.slice import MemberSlice
from common.shards.tar import MemberError, Sample, iter_shard, split_member_name

# Audio members this large stay in a plain tar and are decoded from there (common/shards/slice.py):
# about 20 minutes of 48 kb/s opus, 4 minutes of 16 kHz WAV.
LEAVE_IN_TAR_BYTES = 8 << 20


@dataclass
class KeyAudio:
    """One key's outcome. ``key`` is None only for a member whose name is unsafe (``name``)."""

    key: str | None
    name: str  # the audio member's name, or the bad member's
    ext: str | None = None  # the audio member's extension; None when ``error``
    # every good member of the key: bytes, or a large one left in its tar
    files: dict[str, bytes | MemberSlice] = field(default_factory=dict)
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "member_too_large:...:json"

    @property
    def audio(self) -> bytes | MemberSlice:
        assert self.ext is not None, self.error
        return self.files[self.ext]

    def audio_bytes(self) -> bytes:
        """The audio member's bytes (read from the tar if it was left there)."""
        assert self.ext is not None, self.error
        return self.data(self.ext)

    def data(self, ext: str) -> bytes:
        """One member's bytes (read from the tar if it was left there)."""
        got = self.files[ext]
        return got.read() if isinstance(got, MemberSlice) else got


def is_audio_ext(ext: str) -> bool:
    return ext.rsplit(".", 1)[-1] in AUDIO_EXTENSIONS


def choose_audio(files: dict[str, bytes | MemberSlice]) -> tuple[str | None, str | None]:
    """(the audio member's extension, None) or (None, the error reason)."""
    exts = sorted(e for e in files if is_audio_ext(e))
    if not exts:
        return None, "no_audio"
    if len(exts) > 1:
        return None, "ambiguous_audio:" + ",".join(exts)
    return exts[0], None


class _Group:
    """The member errors seen for the key whose members are being read."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.audio_error: str | None = None
        self.notes: list[str] = []

    def add(self, err: MemberError) -> None:
        ext = split_member_name(err.name)[1]
        if is_audio_ext(ext):
            self.audio_error = self.audio_error or err.reason
        else:
            self.notes.append(f"{err.reason}:{ext}")

    def outcome(self, sample: Sample | None) -> KeyAudio:
        files = sample.files if sample is not None else {}
        if self.audio_error is not None:
            return KeyAudio(self.key, self.key, files=files, error=self.audio_error,
                            notes=self.notes)
        if sample is None:  # every member of the key failed, none of them audio
            return KeyAudio(self.key, self.key, error=self.notes[0].rsplit(":", 1)[0],
                            notes=self.notes)
        ext, error = choose_audio(files)
        name = f"{self.key}.{ext}" if ext else self.key
        return KeyAudio(self.key, name, ext, files, error, self.notes)


def iter_keys(path: str | Path, max_member_bytes: int | None = None, *,
              max_sidecar_bytes: int | None = None,
              leave_from: int | None = None) -> Iterator[KeyAudio]:
    """Exactly one outcome per key (plus one per unsafe member and per returning key), in shard
    order. A shard-level :class:`~common.shards.tar.ShardError` is raised as by ``iter_shard``.
    ``leave_from`` (e.g. :data:`LEAVE_IN_TAR_BYTES`): larger members come as a
    :class:`MemberSlice` (a caller that decodes them as a stream holds no member whole)."""
    group: _Group | None = None
    decided: set[str] = set()
    returning: str | None = None  # the key of the duplicate run in progress, reported once
    for item in iter_shard(path, max_member_bytes, max_sidecar_bytes=max_sidecar_bytes,
                           leave_from=leave_from):
        if isinstance(item, MemberError) and item.key is None:
            yield KeyAudio(None, item.name, error=item.reason)
            continue
        key = item.key
        assert key is not None
        if group is not None and group.key != key:
            decided.add(group.key)
            yield group.outcome(None)
            group = None
        if key in decided or (isinstance(item, MemberError) and item.reason == "duplicate_key"):
            if returning != key:
                returning = key
                yield KeyAudio(key, getattr(item, "name", key), error="duplicate_key")
            continue
        returning = None
        if group is None:
            group = _Group(key)
        if isinstance(item, MemberError):
            group.add(item)
            continue
        decided.add(key)
        yield group.outcome(item)
        group = None
    if group is not None:
        yield group.outcome(None)
