"""What takedown requests cover: keys by source or name, voices, and every copy in a dedup
cluster of a covered segment."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from services.ops.provenance.requests import Takedown
from services.ops.provenance.resolve import resolve


def _req(i: str, kind: str, value: str, speakers: list[str] | None = None) -> Takedown:
    return Takedown(id=i, kind=kind, value=value, requested_by="t", reason="r",  # type: ignore[arg-type]
                    requested_at=0.0, speakers=speakers or [])


def test_sources_keys_voices_and_their_copies() -> None:
    prov = pa.table({"shard": [0, 0, 1, 1], "key": ["a", "b", "a", "c"],
                     "source": ["https://v/1", "https://v/2/", "https://v/3", "https://v/2"]})
    seg = pa.table({"id": ["a_0000@000000", "x_0001@000003", "c_0000@000001", "z_0000@000004",
                           "q_0000@000005", "q_0001@000005"],
                    "shard": [0, 3, 1, 4, 5, 5], "key": ["a", "x", "c", "z", "q", "q"],
                    "speaker": ["s1", None, "s9", "s7", "s7", None],
                    "cluster": ["a_0000@000000", "a_0000@000000", "c_0000@000001",
                                "c_0000@000001", None, None]})
    con = duckdb.connect()
    con.register("p", prov)
    con.register("s", seg)
    res = resolve(con, [_req("src", "source", " https://v/2"), _req("key", "key", "a@000001"),
                        _req("any", "key", "a"), _req("voice", "voice", "v.wav", ["s7"])],
                  "p", "s")
    # the source (trailing slash or not) covers b@0 and c@1, and c's copy z in shard 4;
    # z's voice is taken down, and with it its copy c
    assert res.covering("b_0000@000000", 0, "b", None) == ["src"]
    assert res.covering("c_0000@000001", 1, "c", None) == ["src", "voice"]
    assert res.covering("z_0000@000004", 4, "z", None) == ["src", "voice"]
    # a key with its shard covers that shard's key only; without, every shard's and copies
    assert res.covering("a_0003@000001", 1, "a", None) == ["any", "key"]
    assert res.covering("a_0003@000000", 0, "a", None) == ["any"]
    assert res.covering("x_0001@000003", 3, "x", None) == ["any"]  # a's copy
    # a voice covers its speaker's segments, in a cluster or not
    assert res.covering("q_0000@000005", 5, "q", "s7") == ["voice"]
    assert res.covering("q_0001@000005", 5, "q", None) == []
    assert res.covering("n_0000@000002", 2, "n", "s1", "https://v/2/") == ["src"]
    assert res.keys_of("src") == 2 and res.near_duplicates("src") == 2


def test_no_request_covers_nothing() -> None:
    con = duckdb.connect()
    res = resolve(con, [], "p", "s")
    assert res.covering("a_0000@000000", 0, "a", "s1", "https://v/1") == []
