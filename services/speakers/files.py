"""A shard's speakers file -> its file speakers: one per (source file, label) the enhance stage
gave, in first-appearance order, with the mean of its segments' unit embeddings (unit length,
then rounded to float16: the values the link uses are the ones a part stores)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.speakers.embeddings import ShardEmbeddings


@dataclass(frozen=True)
class FileSpeakers:
    labels: list[str]
    segments: np.ndarray  # int, per file speaker
    means: np.ndarray  # float32, per file speaker
    of_row: np.ndarray  # the file speaker of each embeddings row


def file_speakers(e: ShardEmbeddings) -> FileSpeakers:
    order: dict[str, int] = {}
    of_row = np.array([order.setdefault(lb, len(order)) for lb in e.labels], np.int64)
    n = len(order)
    sums = np.zeros((n, e.vectors.shape[1]), np.float64)
    np.add.at(sums, of_row, e.vectors)
    means = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return FileSpeakers(list(order), np.bincount(of_row, minlength=n),
                        means.astype(np.float16).astype(np.float32), of_row)
