"""Pack chunk windows from many segments into fixed-shape rows ``[window]`` and batches ``[B,
window]``.

Full chunks fill a row alone. Tails (the short last chunk of every segment, or whole short
segments) share rows: first-fit-decreasing over the tails, each keeping its own context, so the
only waste is the unfilled end of a row. Rows are run in batches of exactly ``B``; rows that do
not complete a batch go back to the pool (their items are packed again, first, with the next
segments), so every batch but the very last of a shard has the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.enhance.chunking import ChunkGeometry, Item


@dataclass(eq=False)
class Row:
    window: int
    placed: list[tuple[Item, int]] = field(default_factory=list)  # (item, offset in row)
    used: int = 0

    @property
    def free(self) -> int:
        return self.window - self.used

    def put(self, item: Item) -> None:
        self.placed.append((item, self.used))
        self.used += item.length

    def array(self) -> np.ndarray:
        out = np.zeros(self.window, dtype=np.float32)  # unfilled end = silence
        for item, off in self.placed:
            assert item.audio is not None
            out[off:off + item.length] = item.audio
        return out


def pack_rows(items: list[Item], window: int) -> list[Row]:
    """First-fit-decreasing; items that were deferred before go first so none starves."""
    order = sorted(items, key=lambda it: (-it.deferrals, -it.length))
    rows: list[Row] = []
    min_len = min((it.length for it in items), default=0)
    open_rows: list[Row] = []  # rows with room left (full rows drop out: keeps the scan short)
    for it in order:
        if it.length > window:
            raise ValueError(f"item of {it.length} samples exceeds the row of {window}")
        target = next((r for r in open_rows if r.free >= it.length), None)
        if target is None:
            target = Row(window)
            rows.append(target)
            open_rows.append(target)
        target.put(it)
        if target.free < min_len:
            open_rows.remove(target)
    return rows


def take_batches(rows: list[Row], batch: int, final: bool) -> tuple[list[list[Row]], list[Item]]:
    """Split rows into batches of ``batch``; the emptiest leftover rows return their items
    (unless ``final``, when the last batch is simply smaller)."""
    # Rows holding an item left out before go first, then the fullest: leftovers are the
    # emptiest rows of new items. An item left out twice would hold back every segment behind
    # its own in the output order (they wait for it), so the reorder buffer would grow with the
    # file's length instead of staying within a round or two.
    rows = sorted(rows, key=lambda r: (not any(it.deferrals for it, _ in r.placed), -r.used))
    n_full = len(rows) // batch
    batches = [rows[i * batch:(i + 1) * batch] for i in range(n_full)]
    rest = rows[n_full * batch:]
    if final:
        if rest:
            batches.append(rest)
        return batches, []
    back: list[Item] = []
    for r in rest:
        for it, _ in r.placed:
            it.deferrals += 1
            back.append(it)
    return batches, back


@dataclass
class PackStats:
    rows: int = 0
    row_samples: int = 0  # samples fed to the model (rows x window)
    window_samples: int = 0  # of which item windows (core + context)
    core_samples: int = 0  # of which cores (audio we keep)
    batches: int = 0
    chunks: int = 0

    def add_batch(self, rows: list[Row]) -> None:
        self.batches += 1
        for r in rows:
            self.rows += 1
            self.row_samples += r.window
            for it, _ in r.placed:
                self.chunks += 1
                self.window_samples += it.length
                self.core_samples += it.core_len

    @property
    def padded_fraction(self) -> float:
        """Share of model input that is filler silence (neither audio nor context)."""
        return 0.0 if not self.row_samples else 1 - self.window_samples / self.row_samples

    @property
    def overhead_fraction(self) -> float:
        """Share of model input not kept in the output: filler plus context."""
        return 0.0 if not self.row_samples else 1 - self.core_samples / self.row_samples


def simulate(lengths: list[int], geom: ChunkGeometry, batch: int,
             round_items: int = 0) -> PackStats:
    """Plan-only packing of segment lengths (input samples) as the stage does it, in rounds
    of about ``round_items`` windows' worth (0 = whole list at once)."""
    from services.enhance.chunking import split_segment

    stats = PackStats()
    pool: list[Item] = []
    budget = round_items * geom.window if round_items else None
    pooled = 0
    for i, n in enumerate(lengths):
        new = split_segment(i, n, geom)
        pool.extend(new)
        pooled += sum(it.length for it in new)
        if budget is not None and pooled >= budget:
            batches, pool = take_batches(pack_rows(pool, geom.window), batch, final=False)
            for b in batches:
                stats.add_batch(b)
            pooled = sum(it.length for it in pool)
    batches, _ = take_batches(pack_rows(pool, geom.window), batch, final=True)
    for b in batches:
        stats.add_batch(b)
    return stats


def pad_to_longest_fraction(lengths: list[int], batch: int) -> float:
    """Baseline: whole segments in arrival order, batches of ``batch`` padded to the longest."""
    total = used = 0
    for i in range(0, len(lengths), batch):
        grp = lengths[i:i + batch]
        total += max(grp) * len(grp)
        used += sum(grp)
    return 0.0 if not total else 1 - used / total
