"""`onsei report --html`'s listening section: per filter reason, the segments it removes and the
kept ones nearest its threshold, each with a player whose audio is in the page; rendered in
headless chromium, where every player must load its clip offline."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from common.shards.tar import ShardWriter
from common.storage import open_store
from services.ops.report.listen import html, listen, section
from services.records import Sidecar
from services.stages import PIPELINE
from services.tokenize.filter import FilterPolicy
from tests.services.ops.export.synth import Run, Seg, quality, write_run
from tests.system_packages import CHROMIUM, needs

MUSIC = (0.9, 0.7, 0.45, 0.3, 0.1, None)


def _flac(seconds: float, f0: float) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    buf = io.BytesIO()
    sf.write(buf, (0.2 * np.sin(2 * np.pi * f0 * t)).astype(np.float32), 24000, format="FLAC")
    return buf.getvalue()


def _run(make_settings):
    """One shard: music scores either side of 0.5, one low OVRL, real FLAC for each."""
    s = make_settings()
    store = open_store(s.output_url, s)
    segs = [Seg(f"show_{i:04d}", 1.0 + i, quality().model_copy(update={"music": m}), "show#s0")
            for i, m in enumerate(MUSIC)]
    segs.append(Seg("show_0009", 2.5, quality(ovrl=1.4), "show#s1"))
    write_run(store, s, Run(shards={0: segs}, languages={"show": "en"}), tokens=False)
    with tempfile.TemporaryDirectory() as d:  # the same sidecars, with audio that plays
        path = Path(d) / "e.tar"
        with ShardWriter(path) as w:
            for i, seg in enumerate(segs):
                meta = Sidecar(text=f"words of <{seg.id}>", language="en", source_key="show",
                               start=0.0, end=seg.seconds, duration_seconds=seg.seconds,
                               quality=seg.quality, speaker_id=seg.speaker)
                w.write(seg.id, {"flac": _flac(seg.seconds, 200 + 50 * i),
                                 "json": meta.to_json().encode()})
        store.put_file(path, PIPELINE.output_key("enhance", s, 0))
    return s, store


def test_samples_dropped_and_near_threshold_per_reason(make_settings) -> None:
    s, store = _run(make_settings)
    got = listen(store, s, [0], FilterPolicy())
    assert sorted(got.dropped) == ["dnsmos_ovrl<2", "music>0.5"]
    assert [c.segment.split("@")[0] for c in got.dropped["music>0.5"]] == ["show_0000",
                                                                          "show_0001"]
    near = sorted(got.near["music>0.5"], key=lambda t: -t[0])
    assert [c.scores["music"] for _, _, c in near] == [0.45, 0.3, 0.1]  # nearest first
    page = html(got, 1)
    assert page.count("<audio controls") == 2 + 1 + 3 + 3  # dropped, dropped, near x2 reasons
    assert "data:audio/flac;base64," in page
    assert "words of &lt;show_0000&gt;" in page and "<show_0000>" not in page
    assert 'data-reason="music&gt;0.5"' in page
    small = html(got, 1, max_bytes=len(got.dropped["music>0.5"][0].audio))
    assert small.count("<audio controls") == 1 and "audio left out" in small


def test_section_off_and_fairness_table(make_settings) -> None:
    s, _ = _run(make_settings)
    assert section(s.output_url, s, 0) == ""
    page = section(s.output_url, s, 8)
    assert 'class="fairness" data-by="length"' in page and "From 1 of 1 enhanced" in page


_PROBE = """<script>
window.addEventListener('load', () => {
  const players = document.querySelectorAll('audio');
  document.body.setAttribute('data-players', String(players.length));
  for (const a of players) {
    a.addEventListener('loadedmetadata', () => a.setAttribute('data-duration', a.duration));
    a.addEventListener('error', () => a.setAttribute('data-error', '1'));
    a.preload = 'metadata';
    a.load();
  }
});
</script>"""


@needs(CHROMIUM)
def test_page_plays_in_chromium(make_settings, tmp_path: Path) -> None:
    from services.ops.report.collect import collect
    from services.ops.report.render import render_html

    s, _ = _run(make_settings)
    page = render_html(collect(s.output_url, s), section(s.output_url, s, 8))
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe is not None
    res = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        check=False, capture_output=True, text=True, timeout=120)
    dom = res.stdout
    assert 'data-players="9"' in dom, res.stderr[-2000:]
    durations = [float(x) for x in re.findall(r'data-duration="([\d.]+)"', dom)]
    assert len(durations) == 9 and 'data-error="1"' not in dom, res.stderr[-2000:]
    assert {1.0, 2.0, 2.5, 3.0, 4.0, 5.0} <= {round(d, 1) for d in durations}  # their own clips
    shot = tmp_path / "shot.png"
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--user-data-dir={tmp_path / 'profile2'}", f"--screenshot={shot}",
                    "--window-size=1200,1600", probe.as_uri()],
                   check=False, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 1000
