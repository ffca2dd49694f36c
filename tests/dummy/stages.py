"""Trivial stages with the real contract, for orchestration tests: no model, fast, exact.

asr: raw shard -> ``asr/<stem>.jsonl`` (one line per key, two "segments" each);
enhance: that jsonl -> ``enhanced/<stem>.tar`` (one ``{key}_{idx:04d}.json`` per segment);
tokenize: the tar -> ``tokens/<tokenizer>/<stem>.jsonl`` (one line per segment).
``ONSEI_DUMMY_SECONDS`` (float) sleeps inside each ``process`` (a shard in hand to kill).
``ONSEI_DUMMY_FAIL`` (comma ids) makes those shards raise every time.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from common.shards.tar import MemberError, ShardWriter, iter_shard
from common.stages.contract import Stage, StageResult
from services.stages import output_key


def _pause(shard_id: int) -> None:
    fail = {int(x) for x in os.environ.get("ONSEI_DUMMY_FAIL", "").split(",") if x.strip()}
    if shard_id in fail:
        raise RuntimeError(f"dummy failure for shard {shard_id}")
    time.sleep(float(os.environ.get("ONSEI_DUMMY_SECONDS", "0")))


class _Base(Stage):
    def load(self) -> None:
        pass

    def model_info(self) -> dict[str, Any]:
        return {"model": f"dummy-{self.name}", "version": "0"}

    def _out(self, shard_id: int, workdir: Path) -> tuple[str, Path]:
        key = output_key(self.name, self.settings, shard_id)
        return key, workdir / "out" / Path(key).name

    def _lines(self, shard_id: int, workdir: Path, tar: Path, line) -> StageResult:
        """One JSON line per sample of ``tar`` (``line(sample)`` -> list of dicts)."""
        _pause(shard_id)
        key, path = self._out(shard_id, workdir)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [x for item in iter_shard(tar) if not isinstance(item, MemberError)
                 for x in line(item)]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        n = sum(len(x.get("segments", [x])) for x in lines)
        return StageResult({key: path}, {"files": len(lines), "segments": n}, float(n),
                           float(n))


class DummyAsr(_Base):
    name = "asr"

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        return self._lines(shard_id, workdir, inputs["shard"], lambda item: [
            {"key": item.key, "status": "ok", "segments": [
                {"idx": i, "start": float(i), "end": i + 1.0, "text": f"{item.key}-{i}",
                 "kept": True} for i in range(2)]}])


class DummyEnhance(_Base):
    name = "enhance"

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        _pause(shard_id)
        key, path = self._out(shard_id, workdir)
        w = ShardWriter(path)
        n = 0
        for line in inputs["asr"].read_text().splitlines():
            rec = json.loads(line)
            for seg in rec["segments"]:
                w.write(f"{rec['key']}_{seg['idx']:04d}",
                        {"json": json.dumps({"text": seg["text"]}).encode()})
                n += 1
        w.close()
        return StageResult({key: path}, {"segments": n}, float(n), float(n))


class DummyTokenize(_Base):
    name = "tokenize"

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        return self._lines(shard_id, workdir, inputs["enhanced"], lambda item: [
            {"id": item.key, "text": json.loads(item.files["json"])["text"],
             "codes": {"neu_tokens": [1, 2]}, "duration_seconds": 1.0}])
