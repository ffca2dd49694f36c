"""All annotations of a batch of segments, from audio already in memory (no extra decode).

``Annotator.annotate(items)`` takes each segment's input (before restoration) and output (after)
at their own rates, resamples both to 16 kHz once, and runs DNSMOS on both, the speaker encoder
on the restored audio, the prosody measures (speech fraction, pitch, speaking rate, SNR:
``prosody.py``), the music score (held tones in the input's pauses: ``music.py``), and the
fidelity re-transcription on the sampled ones; DNSMOS, the speaker
encoder, the speech-fraction VAD (on a GPU: ``vad.py``) and Whisper run batched over the
items. ``seconds`` accumulates the time spent (the stage reports it).

The overlap is scored on the input, resampled from its own rate, by the pitch test
(``overlap.py``, at 8 kHz) or the trained detector ``ONSEI_QUALITY_OVERLAP_MODEL`` names
(``overlap_model.py``): from the frames the writer already found in it when it has them
(``overlap_frames``: its segment's, clipped to the piece), else from its own. The writer's
:class:`Resampled` hands back what it already resampled (the restored audio at 16 kHz, the input
at 8 kHz) instead of doing it again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from services.enhance.quality import music, overlap
from services.enhance.quality.campplus import CamppEncoder, label_encoder
from services.enhance.quality.dnsmos import Dnsmos
from services.enhance.quality.fidelity import FidelityChecker, sampled, whisper_loader
from services.enhance.quality.overlap_model import load_overlap_test
from services.enhance.quality.prosody import load_prosody, measure
from services.enhance.quality.records import QualityRecord
from services.enhance.quality.speaker import SpeakerEncoder
from services.enhance.quality.vad import SpeechFraction
from services.enhance.resampled import Resampled
from services.enhance.settings import EnhanceSettings

SR = 16000


@dataclass
class AnnotationInput:
    segment_id: str
    text: str
    language: str | None
    before: np.ndarray
    before_rate: int
    after: np.ndarray
    after_rate: int
    overlap_frames: overlap.Frames | None = None  # ``before``'s, when the caller has them
    around: tuple[np.ndarray, np.ndarray] | None = None  # the input either side, at before_rate


class Annotator:
    def __init__(self, settings: EnhanceSettings, device: str = "cpu",
                 fidelity: FidelityChecker | None = None) -> None:
        s = settings
        self.dnsmos = Dnsmos(hop_seconds=s.quality_dnsmos_hop_seconds, device=device,
                            pieces=s.quality_dnsmos_pieces)
        self.speaker = SpeakerEncoder(device=device)
        self.device = device
        self.vad = SpeechFraction(device)
        self.fraction = s.quality_fidelity_fraction
        self.speaker_threshold = s.quality_speaker_threshold
        self.cer_threshold = s.quality_fidelity_cer
        self.fidelity = fidelity or FidelityChecker(
            loader=whisper_loader(s, s.quality_fidelity_model, device))
        self.seconds = 0.0
        self.fidelity_checked = 0
        self._settings = s
        self._overlap_test: overlap.OverlapTest | None = None
        self._label_model: CamppEncoder | None = None

    @property
    def overlap(self) -> overlap.OverlapTest:
        """What finds the frames where two voices overlap (loaded at first use)."""
        if self._overlap_test is None:
            self._overlap_test = load_overlap_test(self._settings, self.device)
        return self._overlap_test

    @property
    def label_model(self) -> CamppEncoder | None:
        """CAM++, when ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL`` names it (loaded at first use)."""
        spec = self._settings.quality_speaker_label_model
        if spec and self._label_model is None:
            self._label_model = label_encoder(spec, self._settings, self.device)
        return self._label_model

    def load(self) -> None:
        self.dnsmos.load()
        self.speaker.load()
        _ = self.label_model
        self.vad.load()
        self.overlap.load()
        load_prosody()

    def info(self) -> dict[str, str | float]:
        return {"dnsmos": "speechmos sig_bak_ovr.onnx (P.835)",
                "speaker": "resemblyzer pretrained.pt", "overlap": self.overlap.info(),
                **({} if self.label_model is None else
                   {"speaker_labels": f"resemblyzer + campplus {self.label_model.path.name}"}),
                "speaker_threshold": self.speaker_threshold,
                "fidelity_fraction": self.fraction, "fidelity_cer": self.cer_threshold}

    def annotate(self, items: list[AnnotationInput],
                 resampled: Resampled | None = None) -> list[QualityRecord]:
        if not items:
            return []
        t0 = time.perf_counter()
        rs = resampled or Resampled()
        before = [rs(it.before, it.before_rate, SR) for it in items]
        after = [rs(it.after, it.after_rate, SR) for it in items]
        mos = self.dnsmos.score(before + after)
        spk = self.speaker.score(after)
        cam = self.label_model.embed(after) if self.label_model is not None else None
        windows = self.vad.windows(after)  # the pauses music.py looks in, and the fraction
        around = self._around(items, rs)
        fractions = [float(w.mean()) if w.size else 0.0 for w in windows]
        out = []
        for i, it in enumerate(items):
            c = spk[i].consistency
            out.append(QualityRecord(
                dnsmos_before=mos[i], dnsmos_after=mos[len(items) + i],
                speaker_embedding=spk[i].embedding, speaker_consistency=c,
                speaker_parts=spk[i].parts,
                multi_speaker=c is not None and c < self.speaker_threshold,
                prosody=measure(after[i], before[i], it.text, it.language, fractions[i]),
                music=music.music_score(before[i], windows[i], around[i]),
                speaker_embedding_campplus=None if cam is None else cam[i]))
        picked = [i for i, it in enumerate(items) if sampled(it.segment_id, self.fraction)]
        if picked:
            scores = self.fidelity.check([(after[i], items[i].text, items[i].language)
                                          for i in picked])
            for i, sc in zip(picked, scores):
                rec = out[i]
                rec.fidelity_cer, rec.fidelity_text = sc.cer, sc.transcript
                rec.restoration_changed_text = sc.cer > self.cer_threshold
            self.fidelity_checked += len(picked)
        for rec, it, x in zip(out, items, before):
            rec.overlap = self._overlap(it, x.size, rs)
        self.seconds += time.perf_counter() - t0
        return out

    def _around(self, items: list[AnnotationInput], rs: Resampled) -> list[music.Around | None]:
        """Each segment's input either side at 16 kHz with the VAD's verdicts (one VAD call
        for all of them): the file's pauses around it, where music.py looks too."""
        pieces = [None if it.around is None else music.context_pieces(
            rs(it.around[0], it.before_rate, SR), rs(it.around[1], it.before_rate, SR))
            for it in items]
        flat = [x for p in pieces if p is not None for x in p]
        verdicts = iter(self.vad.windows(flat) if flat else [])
        return [None if p is None else music.Around(p[0], next(verdicts), p[1], next(verdicts))
                for p in pieces]

    def _overlap(self, it: AnnotationInput, size16k: int, rs: Resampled) -> float | None:
        if size16k < overlap.MIN_SECONDS * SR:
            return None
        f = it.overlap_frames
        if f is None:
            f = self.overlap.frames(it.before, it.before_rate, rs)
        return f.share()
