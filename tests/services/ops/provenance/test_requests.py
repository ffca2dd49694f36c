"""Takedown requests are written once and read back in order; a damaged one is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.provenance.requests import PREFIX, Takedown, load_all, record


def test_append_only(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    t1 = Takedown(id="b1", kind="source", value="https://v/1", requested_by="me",
                  reason="asked", requested_at=2000.0)
    t0 = Takedown(id="a0", kind="key", value="k@000001", requested_by="me", reason="asked",
                  requested_at=1000.0)
    record(store, t1)
    record(store, t0)
    with pytest.raises(FileExistsError):
        record(store, t1)
    got, bad = load_all(store)
    assert [t.id for t in got] == ["a0", "b1"] and bad == {}
    store.write_bytes(f"{PREFIX}zz-broken.json", b"{")
    got, bad = load_all(store)
    assert len(got) == 2 and list(bad) == [f"{PREFIX}zz-broken.json"]
