"""The fleet control loop against a fake SkyPilot: launches, preemptions and recoveries,
provider caps, backlog following and scale to zero."""

from __future__ import annotations

import pytest

from services.ops.fleet.config import BacklogPolicy, FleetConfig
from services.ops.fleet.loop import Fleet, owned_by
from tests.services.ops.fleet.fake_sky import FakeSky


def _cfg(**kw) -> FleetConfig:
    base = {"poll_interval_sec": 1, "max_launch_per_cycle": 3, "scale_down_after_cycles": 1,
            "targets": {"asr": {"count": 5, "template": "deploy/skypilot/asr.yaml",
                                "type": "L4:1", "env": ["ONSEI_BROKER_URL"]}}}
    base.update(kw)
    return FleetConfig.model_validate(base)


def test_launches_up_to_count_bounded_per_cycle() -> None:
    sky = FakeSky()
    fleet = Fleet(_cfg(), sky)
    rep = fleet.reconcile()
    assert len(rep.launched) == 3  # max_launch_per_cycle
    assert all(owned_by("asr", n) for _, n, _ in rep.launched)
    assert sky.launches[0]["gpus"] == "L4:1" and sky.launches[0]["env"] == ["ONSEI_BROKER_URL"]
    rep = fleet.reconcile()  # pending jobs count as active: only the 2 missing are launched
    assert len(rep.launched) == 2 and rep.active["asr"] == 3
    rep = fleet.reconcile()
    assert rep.launched == [] and rep.active["asr"] == 5
    assert len({lc["name"] for lc in sky.launches}) == 5  # unique names


def test_recovering_jobs_are_not_replaced_but_failed_ones_are() -> None:
    sky = FakeSky()
    fleet = Fleet(_cfg(max_launch_per_cycle=10), sky)
    fleet.reconcile()
    sky.start_all()
    first, second = sky.ids("asr")[:2]
    sky.set(first, "RECOVERING")  # preempted: SkyPilot recovers it itself
    sky.set(second, "STARTING")
    assert fleet.reconcile().launched == []
    sky.set(first, "RUNNING")
    sky.set(second, "FAILED")  # e.g. FAILED_NO_RESOURCE: gone for good
    rep = fleet.reconcile()
    assert len(rep.launched) == 1 and rep.active["asr"] == 4


def test_other_jobs_are_ignored_by_prefix() -> None:
    sky = FakeSky()
    sky.add_foreign("asr-big-0123abcd", "RUNNING", "gcp")  # another target's job
    sky.add_foreign("asr-manual", "RUNNING", "gcp")  # someone's own job
    sky.add_foreign("asr-0123abcd", "RUNNING", "gcp")  # ours (e.g. from a previous run)
    fleet = Fleet(_cfg(max_launch_per_cycle=10), sky)
    rep = fleet.reconcile()
    assert rep.active["asr"] == 1 and len(rep.launched) == 4
    assert not owned_by("asr", "asr-big-0123abcd") and owned_by("asr-big", "asr-big-0123abcd")


def test_provider_cap_spreads_and_holds_launches() -> None:
    sky = FakeSky()
    for k in range(3):  # gcp is already at its cap of 3 (jobs of anyone count)
        sky.add_foreign(f"other-{k}", "RUNNING", "gcp")
    cfg = _cfg(max_launch_per_cycle=10, provider_cap=2, provider_caps={"gcp": 3},
               targets={"asr": {"count": 6, "template": "t.yaml",
                                "providers": ["gcp", "aws", "lambda"]}})
    fleet = Fleet(cfg, sky)
    rep = fleet.reconcile()
    clouds = sorted(c for _, _, c in rep.launched)
    assert clouds == ["aws", "aws", "lambda", "lambda"]  # gcp full; others up to 2 each
    assert rep.capped == {"asr": 2}
    assert all(lc["cloud"] in ("aws", "lambda") for lc in sky.launches)
    sky.start_all()
    sky.set(sky.ids("other")[0], "SUCCEEDED")  # room on gcp again
    rep = fleet.reconcile()
    assert [c for _, _, c in rep.launched] == ["gcp"] and rep.capped == {"asr": 1}


def test_backlog_follow_and_scale_to_zero() -> None:
    sky = FakeSky()
    backlog = {"asr": 95}
    cfg = _cfg(max_launch_per_cycle=100, targets={"asr": {
        "template": "t.yaml", "backlog": {"queue": "asr", "shards_per_worker": 10, "min": 1,
                                          "max": 8}}})
    fleet = Fleet(cfg, sky, backlog=lambda q: backlog[q])
    rep = fleet.reconcile()
    assert rep.desired["asr"] == 8 and len(rep.launched) == 8  # ceil(95/10)=10 -> max 8
    sky.start_all()
    backlog["asr"] = 25
    rep = fleet.reconcile()
    assert rep.desired["asr"] == 3 and len(rep.cancelled) == 5
    backlog["asr"] = 0
    rep = fleet.reconcile()
    assert rep.desired["asr"] == 0 and len(rep.cancelled) == 3
    assert fleet.reconcile().active["asr"] == 0
    backlog["asr"] = 1  # new work: back from zero to the floor
    assert len(fleet.reconcile().launched) == 1


def test_scale_down_waits_for_a_lasting_surplus_and_spares_running_jobs() -> None:
    sky = FakeSky()
    backlog = {"asr": 40}
    cfg = _cfg(max_launch_per_cycle=100, scale_down_after_cycles=2, targets={"asr": {
        "template": "t.yaml", "backlog": {"queue": "asr", "shards_per_worker": 10}}})
    fleet = Fleet(cfg, sky, backlog=lambda q: backlog[q])
    fleet.reconcile()
    running = sky.ids("asr")[:2]
    for i in running:
        sky.set(i, "RUNNING")
    backlog["asr"] = 20
    assert fleet.reconcile().cancelled == []  # one cycle of surplus: hold
    rep = fleet.reconcile()
    assert sorted(i for _, i in rep.cancelled) == sorted(set(sky.ids("asr")) - set(running))


def test_round_robin_between_targets_and_dry_run() -> None:
    sky = FakeSky()
    cfg = _cfg(max_launch_per_cycle=4, targets={
        "asr": {"count": 10, "template": "a.yaml"},
        "tokenize": {"count": 10, "template": "t.yaml"}})
    rep = Fleet(cfg, sky).reconcile(dry_run=True)
    assert sorted(t for t, _, _ in rep.launched) == ["asr", "asr", "tokenize", "tokenize"]
    assert sky.launches == []  # dry run changes nothing


def test_launch_failure_and_broker_outage_do_not_stop_the_cycle() -> None:
    class Flaky(FakeSky):
        def launch(self, template, name, **kw):
            if template == "bad.yaml":
                raise RuntimeError("sky said no")
            super().launch(template, name, **kw)

    def broken(queue: str) -> int:
        raise ConnectionError("redis down")

    sky = Flaky()
    cfg = _cfg(max_launch_per_cycle=10, targets={
        "bad": {"count": 1, "template": "bad.yaml"},
        "good": {"count": 2, "template": "good.yaml"},
        "follow": {"template": "f.yaml", "backlog": {"queue": "asr"}}})
    rep = Fleet(cfg, sky, backlog=broken).reconcile()
    assert [t for t, _, _ in rep.launched] == ["good", "good"]
    assert len(rep.errors) == 2 and rep.desired["follow"] == 0


def test_run_sleeps_between_cycles() -> None:
    sky = FakeSky()
    slept: list[float] = []
    Fleet(_cfg(max_launch_per_cycle=2), sky).run(cycles=3, sleep=slept.append)
    assert len(slept) == 2 and len(sky.launches) == 5


@pytest.mark.parametrize("backlog,want", [(0, 0), (1, 2), (25, 3), (1000, 7)])
def test_backlog_policy_clamp(backlog: int, want: int) -> None:
    assert BacklogPolicy(queue="q", shards_per_worker=10, min=2, max=7).desired(backlog) == want


def test_bad_target_name_is_refused() -> None:
    with pytest.raises(ValueError):
        _cfg(targets={"ASR x": {"template": "t.yaml"}})
