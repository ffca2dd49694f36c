"""The caps on hours per speaker and per source keep exactly the lines their rule names: the
schema witness first, then every line in the order of the hash of the seed and its id, each
kept while its voice and its source both stay within their caps; a cap set to a voice's own
hours keeps all of it, whatever order its durations are added in."""

from __future__ import annotations

from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.export.caps import SOURCE, SPEAKER, Caps
from services.ops.export.run import export
from services.ops.export.split import unit_hash
from services.ops.export.write import SplitPlan
from services.records import corpus_id
from tests.services.ops.export.synth import lines_of, voices_run, write_run
from tests.speakersfiles import write_labels


@pytest.fixture
def linked(make_settings):
    s = make_settings()
    store = open_store(s.output_url, s)
    run, labels = voices_run()
    write_run(store, s, run)
    write_labels(store, s, labels)
    return s, run, labels


def _expected(run, labels, witness: str, seed: int, speaker_s: Decimal, source_s: Decimal):
    """The rule computed apart from the export: durations as the decimals they were written."""
    rows = []
    for sid, segs in run.shards.items():
        for seg in segs:
            cid = corpus_id(seg.id, sid)
            order = -1.0 if cid == witness else unit_hash(seed, cid)
            rows.append((order, cid, labels[sid][seg.id][0], f"{sid}:{seg.source}",
                         Decimal(repr(seg.seconds)).quantize(Decimal("0.01"))))
    used: dict[str, Decimal] = defaultdict(Decimal)
    kept, out, out_s = set(), Counter(), defaultdict(Decimal)
    for order, cid, voice, source, sec in sorted(rows):
        over = next((cap for cap, who, limit in ((SPEAKER, "v" + voice, speaker_s),
                                                 (SOURCE, "s" + source, source_s))
                     if used[who] + sec > limit and order >= 0), None)
        if over:
            out[over] += 1
            out_s[over] += sec
            continue
        kept.add(cid)
        used["v" + voice] += sec
        used["s" + source] += sec
    return kept, out, out_s


@pytest.mark.parametrize("seed", [0, 7])
def test_both_caps_keep_exactly_the_lines_the_rule_names(linked, tmp_path: Path,
                                                         seed: int) -> None:
    s, run, labels = linked
    speaker_s, source_s = Decimal("9.3"), Decimal("3.3")  # both bind: voices ~38 s, files ~5 s
    plan = SplitPlan(seed=seed, validation_fraction=0.0,
                     caps=Caps(hours_per_speaker=float(speaker_s) / 3600,
                               hours_per_source=float(source_s) / 3600))
    res = export(s, s.output_url, str(tmp_path / "set"), plan=plan)
    train = lines_of(tmp_path / "set")["train"]
    # every line has the same fields: one witness, moved to the front of train
    kept, out, out_s = _expected(run, labels, train[0]["id"], seed, speaker_s, source_s)
    assert {x["id"] for x in train} == kept
    assert res.written.capped.segments == out and out[SPEAKER] and out[SOURCE]
    for cap in (SPEAKER, SOURCE):
        assert res.written.capped.seconds[cap] == pytest.approx(float(out_s[cap]))
    card = (tmp_path / "set" / "README.md").read_text()
    for cap, flag in ((SPEAKER, "--max-hours-per-speaker"), (SOURCE, "--max-hours-per-source")):
        assert (f"| `{flag}` | {plan.caps.describe()[cap]:g} | {out[cap]} | "
                f"{float(out_s[cap]) / 3600:.3f} |") in card


def test_a_cap_of_a_voices_own_hours_keeps_all_of_it(linked, tmp_path: Path) -> None:
    s, run, labels = linked
    hours: dict[str, Decimal] = defaultdict(Decimal)
    for sid, segs in run.shards.items():
        for seg in segs:
            hours[labels[sid][seg.id][0]] += Decimal(repr(seg.seconds)).quantize(Decimal("0.01"))
    most = max(hours.values())
    top = [v for v, h in hours.items() if h == most]
    for seed in range(6):  # sums in six orders: floats added in some of them pass the cap
        for cap_s, all_kept in ((most, True), (most - Decimal("0.01"), False)):
            to = tmp_path / f"set{seed}-{all_kept}"
            export(s, s.output_url, str(to),
                   plan=SplitPlan(seed=seed, validation_fraction=0.0,
                                  caps=Caps(hours_per_speaker=float(cap_s) / 3600)))
            by_voice = Counter(x["corpus_speaker_id"] for x in lines_of(to)["train"])
            assert all((by_voice[v] == 32) == all_kept for v in top), (seed, cap_s, by_voice)
