"""Hostile file names through the real pipeline, as the README's quick start runs it (``onsei
run`` on examples/offline.yaml: the bundled Whisper base, RNNoise; no codec weights, so no
tokens), then ``onsei export --no-tokens``, ``onsei status`` and ``onsei report``.

A name holding a control character (every C0 and C1 one, DEL, a line separator, a bidi
override; a tab-separated JSON body with a newline) is refused per file at the input
(``error:unsafe_member:control_character_in_name``, its name shown with escapes) and the rest of
the shard goes on; a name holding rich markup, HTML or a JSON body is kept as it is. Every
exported line's id is a segment the stages produced, each kept name is exported, and status and
report exit 0 showing the text escaped, with the output root's own name holding markup too.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixtures.speechgen import make_shard, synth, wav_bytes
from services.ops.cli import cli
from services.records import corpus_id
from tests.services.asr.conftest import _model_cache
from tests.services.ops.export.synth import lines_of
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)
REPO = Path(__file__).resolve().parents[2]

CONTROLS = [chr(c) for c in (*range(1, 0x20), *range(0x7f, 0xa0))] + ["\u2028", "\u202e"]
REFUSED = [f"c{ord(c):04x}{c}end" for c in CONTROLS] + [
    'k\t{"id": "forged_0000@000000", "text": "chosen", "duration_seconds": 1}\nfile:0:y']
KEPT = ["mix[/x]", "[link=http://x]a[/link]", "<b>html</b>",
        '{"id": "forged_0000@000000", "text": "chosen"}']


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args)


@pytest.mark.timeout(600)
def test_hostile_names_through_run_export_status_report(tmp_path: Path, monkeypatch) -> None:
    speech = wav_bytes(synth("hello world, this is a short test", voice="en", speed=170))
    raw = tmp_path / "raw[/x][link=https:evil]"
    make_shard(raw / "shard-000000.tar", {k: {"wav": speech} for k in [*REFUSED, *KEPT]})
    out = tmp_path / "out[/x][link=https:evil]"
    for k, v in {"ONSEI_CONFIG": str(REPO / "examples" / "offline.yaml"),
                 "ONSEI_INPUT_URL": str(raw), "ONSEI_OUTPUT_URL": str(out),
                 "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"),
                 "ONSEI_MODEL_CACHE": _model_cache(), "ONSEI_BROKER_URL": "redis://127.0.0.1:1/0",
                 "ONSEI_QUALITY_FIDELITY_FRACTION": "0", "ONSEI_FILTER_MIN_OVRL": "0",
                 "ONSEI_FILTER_MIN_SPEECH_FRACTION": "0", "ONSEI_FILTER_MAX_MUSIC": "1",
                 "HF_HUB_OFFLINE": "1", "COLUMNS": "400"}.items():
        monkeypatch.setenv(k, v)

    res = _invoke(["run", "--range", "0-1", "--stages", "asr,enhance"])
    # shard 1 has no input: a failure record whose reason quotes the input root's markup
    assert "asr: processed 1" in res.output and "enhance: processed 1" in res.output, res.output
    asr = [json.loads(x) for x in (out / "asr" / "shard-000000.jsonl").read_text().splitlines()]
    by_key = {r["key"]: r for r in asr}
    for key in KEPT:
        assert by_key[key]["status"] == "ok", by_key.get(key)
    refused = [r for r in asr if r["status"] == "error:unsafe_member:control_character_in_name"]
    assert len(refused) == len(REFUSED), [r["key"] for r in asr]
    assert all(r["key"].isprintable() for r in refused), [r["key"] for r in refused]
    with tarfile.open(out / "enhanced" / "shard-000000.tar") as tf:
        made = {corpus_id(m.name[:-5], 0) for m in tf.getmembers() if m.name.endswith(".json")}
    assert {m.rsplit("@", 1)[0].rsplit("_", 1)[0] for m in made} == set(KEPT), made

    to = tmp_path / "set"
    res = _invoke(["export", "--to", str(to), "--no-tokens", "--validation-fraction", "0"])
    assert res.exit_code == 0, res.output
    ids = [x["id"] for rows in lines_of(to).values() for x in rows]
    assert len(ids) == len(set(ids)) and set(ids) == made, (ids, made)
    assert not any(x["text"] == "chosen" for rows in lines_of(to).values() for x in rows)

    res = _invoke(["status"])
    assert res.exit_code == 0, res.output
    # the table's title wraps a long root across lines: read it without the wrapping
    assert "out[/x][link=https:evil]" in "".join(res.output.split()), res.output
    assert "\x1b" not in res.output, res.output
    assert "raw[/x][link=https:evil]/shard-000001.tar" in res.output, res.output
    res = _invoke(["report", "--html", str(tmp_path / "report.html")])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output
    html = (tmp_path / "report.html").read_text()
    assert "\x1b" not in html and "raw[/x][link=https:evil]/shard-000001.tar" in html
    assert "out[/x][link=https:evil]" in html
