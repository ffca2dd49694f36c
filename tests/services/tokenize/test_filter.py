from __future__ import annotations

from services.tokenize.filter import FilterPolicy

GOOD = {"dnsmos_after": {"ovrl": 3.2}, "dnsmos_delta": {"ovrl": 0.8}, "multi_speaker": False,
        "restoration_changed_text": None}


def test_defaults_skip_broken_audio_but_not_multi_speaker_or_changed_text() -> None:
    p = FilterPolicy()
    assert p.reasons(GOOD) == []
    assert p.reasons(GOOD | {"multi_speaker": True}) == []  # off: it drops clean speech
    assert FilterPolicy(multi_speaker=True).reasons(GOOD | {"multi_speaker": True}) == [
        "multi_speaker"]
    assert p.reasons(GOOD | {"dnsmos_after": {"ovrl": 1.4}}) == ["dnsmos_ovrl<2"]
    assert p.reasons(GOOD | {"restoration_changed_text": True}) == []  # fidelity filter: off
    assert p.reasons(None) == [] and p.reasons({}) == []  # not annotated: kept


def test_every_failed_rule_gives_its_reason() -> None:
    p = FilterPolicy(multi_speaker=True, min_ovrl=3.5, min_ovrl_delta=1.0, changed_text=True)
    bad = GOOD | {"multi_speaker": True, "restoration_changed_text": True}
    assert p.reasons(bad) == ["multi_speaker", "dnsmos_ovrl<3.5", "dnsmos_delta<1",
                              "restoration_changed_text"]


def test_rules_whose_field_was_not_computed_do_not_apply() -> None:
    p = FilterPolicy(min_ovrl_delta=0.0, changed_text=True)
    assert p.reasons({"multi_speaker": False, "speaker_consistency": None}) == []


def test_policy_reads_the_settings(make_settings) -> None:
    p = FilterPolicy.from_settings(make_settings(filter_min_ovrl=0, filter_multi_speaker=False,
                                                 filter_restoration_changed_text=True))
    assert p.reasons(GOOD | {"multi_speaker": True, "dnsmos_after": {"ovrl": 1.0}}) == []
    assert p.reasons(GOOD | {"restoration_changed_text": True}) == ["restoration_changed_text"]
