"""The filter rules as data: each reads one field, says where it first exists, keeps a segment
whose field is unknown, and gives the reason strings the done records have always carried."""

from __future__ import annotations

from services.records import Mos, Quality
from services.rules.policy import FilterPolicy
from services.rules.quality import AtLeast, AtMost, Flagged, Phase, reasons


def test_each_kind_of_rule_keeps_unknown_fields_and_names_its_reason():
    low = AtLeast("dnsmos_after.ovrl", Phase.RESTORED, 2.0, "dnsmos_ovrl", off=0)
    music = AtMost("music", Phase.RESTORED, 0.5, "music")
    flag = Flagged("multi_speaker", Phase.RESTORED)
    bad = Quality(multi_speaker=True, dnsmos_after=Mos(ovrl=1.5), music=0.9)
    assert reasons((flag, low, music), bad) == ["multi_speaker", "dnsmos_ovrl<2", "music>0.5"]
    assert reasons((flag, low, music), Quality()) == []  # nothing computed: nothing judged


def test_a_limit_at_its_off_value_turns_the_rule_off():
    assert not AtLeast("speech_fraction", Phase.RESTORED, 0.0, "speech_fraction", off=0).active
    assert not AtMost("overlap", Phase.INPUT, 1.0, "overlap").active
    assert not Flagged("multi_speaker", Phase.RESTORED, on=False).active


def test_the_policy_splits_its_rules_by_where_their_field_exists():
    policy = FilterPolicy(max_overlap=0.3, max_music=0.5)
    assert [r.reads for r in policy.at(Phase.INPUT)] == ["music", "overlap"]
    assert "speech_fraction" in [r.reads for r in policy.at(Phase.RESTORED)]
    assert "music" not in [r.reads for r in policy.at(Phase.RESTORED)]
    assert policy.reasons(Quality(overlap=0.4)) == ["overlap>0.3"]
