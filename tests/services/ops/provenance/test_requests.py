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


@pytest.mark.parametrize("args, why", [
    ([], "name one of"), (["--source", "x", "--key", "k", "--reason", "r"], "name one of"),
    (["--source", "x"], "--reason is required"), (["--source", "x", "--reason", " "],
                                                  "--reason is required"),
    (["--list", "--key", "k"], "take no --source")])
def test_the_command_refuses_an_unclear_request(tmp_path: Path, args, why) -> None:
    from click.testing import CliRunner

    from services.ops.provenance.cli import takedown

    got = CliRunner().invoke(takedown, ["--output", str(tmp_path / "out"), *args])
    assert got.exit_code == 2 and why in got.output, got.output
    assert not (tmp_path / "out" / "_ledger" / "takedown").exists()


def test_a_request_matching_nothing_is_recorded_with_a_warning(make_settings,
                                                                tmp_path: Path) -> None:
    from click.testing import CliRunner

    from services.ops.provenance.cli import takedown

    s = make_settings()
    got = CliRunner().invoke(takedown, ["--output", s.output_url, "--source", "https://v/9",
                                        "--reason", "asked", "--by", "me"],
                             env={"ONSEI_SCRATCH_DIR": s.scratch_dir})
    assert got.exit_code == 0, got.output
    assert "matches nothing in the corpus now" in got.output
    (t,), bad = load_all(open_store(s.output_url, s))
    assert bad == {}
    assert (t.kind, t.value, t.requested_by, t.reason, t.matched.keys) == (
        "source", "https://v/9", "me", "asked", 0)
