"""Long-form test speech and its scoring, shared by bench/asr.py and the ASR tests.

    make_longform("en", seconds=180)  -> LongForm(audio, reference, sentences, spans)
    peer_transcribe(model, audio, ...) -> the peer a user would pick: faster-whisper's
                                          ``BatchedInferencePipeline`` (Silero VAD, batched)
    wer(ref, hyp) / cer(ref, hyp)      -> error rates on normalised text

Files are minutes of espeak-ng sentences in two voices with random 0.3-2 s pauses, as collected
podcasts and talks are. Japanese is spoken from a kana-with-spaces form (espeak-ng reads no
kanji) and scored against the same sentence in normal orthography.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.speech_corpus import EN_SENTENCES
from services.enhance.quality.cer import edit_distance  # one Levenshtein for words and chars

SR = 16000

EN_MORE: list[str] = [
    "The wind blew the leaves across the empty parking lot.",
    "My grandmother makes the best apple pie in town.",
    "He opened the window to let some fresh air in.",
    "The concert was cancelled because of the storm.",
    "We watched the stars from the roof of the house.",
    "The little dog barked at every car that passed by.",
    "She finished reading the book in a single afternoon.",
    "The farmer sold fresh vegetables at the market.",
    "Nobody knew where the old key had been hidden.",
    "The plane landed safely after a long flight over the ocean.",
    "I like to walk in the park early in the morning.",
    "The painter used bright colors for the sunset.",
]
EN_LONG = EN_SENTENCES + EN_MORE

# (normal orthography, the kana-with-spaces form espeak-ng speaks)
JA_PAIRS: list[tuple[str, str]] = [
    ("私の名前は田中です。", "わたしの なまえは たなか です。"),
    ("毎日電車で会社に行きます。", "まいにち でんしゃで かいしゃに いきます。"),
    ("今日はとてもいい天気ですね。", "きょうは とても いい てんき です ね。"),
    ("明日友達と映画を見に行きます。", "あした ともだちと えいがを みに いきます。"),
    ("駅の前に大きな本屋があります。", "えきの まえに おおきな ほんやが あります。"),
    ("朝ご飯にパンと卵を食べました。", "あさごはんに パンと たまごを たべました。"),
    ("週末は家族と海に行きました。", "しゅうまつは かぞくと うみに いきました。"),
    ("この道をまっすぐ行ってください。", "この みちを まっすぐ いって ください。"),
    ("先生は図書館で本を読んでいます。", "せんせいは としょかんで ほんを よんで います。"),
    ("冬になると山に雪が降ります。", "ふゆに なると やまに ゆきが ふります。"),
    ("弟は毎晩遅くまで勉強します。", "おとうとは まいばん おそくまで べんきょう します。"),
    ("新しい靴を買いたいです。", "あたらしい くつを かいたい です。"),
    ("公園で子供たちが遊んでいます。", "こうえんで こどもたちが あそんで います。"),
    ("昨日の夜は雨が強かったです。", "きのうの よるは あめが つよかった です。"),
    ("母は台所で料理を作っています。", "ははは だいどころで りょうりを つくって います。"),
    ("私は音楽を聞くのが好きです。", "わたしは おんがくを きくのが すき です。"),
    ("夏休みに北海道へ旅行しました。", "なつやすみに ほっかいどうへ りょこう しました。"),
    ("この店のラーメンはおいしいです。", "この みせの ラーメンは おいしい です。"),
    ("父は毎朝新聞を読みます。", "ちちは まいあさ しんぶんを よみます。"),
    ("来週の月曜日に会議があります。", "らいしゅうの げつようびに かいぎが あります。"),
    ("窓を開けてもいいですか。", "まどを あけても いい です か。"),
    ("駅まで歩いて行きましょう。", "えきまで あるいて いきましょう。"),
    ("彼女は英語がとても上手です。", "かのじょは えいごが とても じょうず です。"),
    ("部屋の掃除を手伝ってください。", "へやの そうじを てつだって ください。"),
    ("春になると桜の花が咲きます。", "はるに なると さくらの はなが さきます。"),
    ("猫が机の上で寝ています。", "ねこが つくえの うえで ねて います。"),
    ("温かいお茶を一杯ください。", "あたたかい おちゃを いっぱい ください。"),
    ("日本の夏はとても暑いです。", "にほんの なつは とても あつい です。"),
    ("兄は銀行で働いています。", "あには ぎんこうで はたらいて います。"),
    ("夕方から友達とサッカーをします。", "ゆうがたから ともだちと サッカーを します。"),
    ("ありがとうございます。", "ありがとう ございます。"),
    ("空港までバスで行きます。", "くうこうまで バスで いきます。"),
]

# Non-target languages: files the stage must drop (bench: item 3's saving on dropped files).
OTHER_SENTENCES: dict[str, list[str]] = {
    "es": ["Hola, me llamo Juan y vivo en Madrid con mi familia.",
           "Me gusta mucho leer libros y pasear por el parque los domingos.",
           "Mañana vamos a visitar a mis abuelos en el campo.",
           "El tren sale de la estación a las ocho de la mañana.",
           "Mi hermana estudia medicina en la universidad."],
    "de": ["Guten Morgen, wie geht es Ihnen heute?",
           "Wir fahren am Wochenende mit dem Zug nach Berlin.",
           "Das Wetter ist heute sehr schön und warm.",
           "Meine Großmutter backt jeden Sonntag einen Kuchen.",
           "Der Hund spielt im Garten mit dem Ball."],
}

VOICES = {"en": ("en-us", "en-gb+f3"), "ja": ("ja", "ja+f3"), "es": ("es", "es+f3"),
          "de": ("de", "de+f3")}
SPEED = {"ja": 130}


@dataclass
class LongForm:
    language: str
    audio: np.ndarray
    sentences: list[str] = field(default_factory=list)  # references, in spoken order
    spans: list[tuple[float, float]] = field(default_factory=list)  # where each one is spoken

    @property
    def reference(self) -> str:
        return ("" if self.language == "ja" else " ").join(self.sentences)

    @property
    def seconds(self) -> float:
        return self.audio.size / SR


def _items(language: str) -> list[tuple[str, str]]:
    """(reference, spoken form) pairs for ``language``."""
    if language == "en":
        return [(s, s) for s in EN_LONG]
    if language == "ja":
        return JA_PAIRS
    return [(s, s) for s in OTHER_SENTENCES[language]]


_SYNTH_CACHE: dict[tuple[str, str], np.ndarray] = {}


def _say(text: str, voice: str, language: str) -> np.ndarray:
    from bench.speechgen import synth

    key = (text, voice)
    if key not in _SYNTH_CACHE:
        _SYNTH_CACHE[key] = synth(text, voice=voice, speed=SPEED.get(language, 160))
    return _SYNTH_CACHE[key]


def make_longform(language: str, seconds: float = 180.0, min_sentences: int = 30,
                  seed: int = 0, pauses: tuple[float, float] = (0.3, 2.0)) -> LongForm:
    """Sentences in shuffled order (repeating when needed), two voices, random pauses, until
    the file is at least ``seconds`` long and holds at least ``min_sentences`` sentences."""
    rng = random.Random(f"{language}-{seed}")
    items = _items(language)
    order: list[tuple[str, str]] = []
    parts = [np.zeros(int(rng.uniform(0.3, 1.0) * SR), dtype=np.float32)]
    t = parts[0].size / SR
    out = LongForm(language, parts[0])
    while t < seconds or len(out.sentences) < min_sentences:
        if not order:
            order = rng.sample(items, len(items))
        ref, spoken = order.pop()
        a = _say(spoken, rng.choice(VOICES[language]), language)
        pause = np.zeros(int(rng.uniform(*pauses) * SR), dtype=np.float32)
        out.sentences.append(ref)
        out.spans.append((t, t + a.size / SR))
        parts += [a, pause]
        t += (a.size + pause.size) / SR
    out.audio = np.concatenate(parts)
    return out


# --- real recorded speech (Debian packages; absent -> empty) -------------------------------------
PSPHINX = Path("/usr/share/pocketsphinx/test/data")  # pocketsphinx-testdata
FILLETS = Path("/usr/share/games/fillets-ng/sound")  # fillets-ng-data


def _read(path: Path) -> np.ndarray:
    from common.shards.audio import decode_audio

    return decode_audio(path.read_bytes(), SR)


def real_english() -> list[tuple[str, np.ndarray]]:
    """(transcript, audio) of pocketsphinx-testdata's LibriVox and card-reading clips."""
    out: list[tuple[str, np.ndarray]] = []
    for d, lst in (("librivox", "transcription"), ("cards", "cards.transcription")):
        f = PSPHINX / d / lst
        if not f.is_file():
            continue
        for line in f.read_text().splitlines():
            m = re.match(r"\s*<s>(.*)</s>\s*\((\S+)\)", line)
            if m and (PSPHINX / d / f"{m.group(2)}.wav").is_file():
                out.append((m.group(1).strip(), _read(PSPHINX / d / f"{m.group(2)}.wav")))
    return out


def real_german() -> list[np.ndarray]:
    """fillets-ng-data's recorded German lines (real speech in a language the stage drops)."""
    return [_read(p) for p in sorted(FILLETS.glob("elk/en/deu-p-*.ogg"))]


def real_longform(clips: list[tuple[str, np.ndarray]], seconds: float = 180.0, seed: int = 0,
                  language: str = "en") -> LongForm:
    """Recorded clips in shuffled rounds with random 0.3-2 s pauses, ``seconds`` long."""
    rng = random.Random(f"real-{seed}")
    parts = [np.zeros(int(0.5 * SR), dtype=np.float32)]
    out, t, order = LongForm(language, parts[0]), 0.5, []
    while t < seconds:
        if not order:
            order = rng.sample(clips, len(clips))
        ref, a = order.pop()
        pause = np.zeros(int(rng.uniform(0.3, 2.0) * SR), dtype=np.float32)
        out.sentences.append(ref)
        out.spans.append((t, t + a.size / SR))
        parts += [a.astype(np.float32), pause]
        t += (a.size + pause.size) / SR
    out.audio = np.concatenate(parts)
    return out


# --- scoring ------------------------------------------------------------------------------------
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _number_words(n: int) -> list[str]:
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])
    return [str(n)]


def words(text: str) -> list[str]:
    """Lower-case words; numerals under 100 spelled out, as Whisper writes either ("9", "nine")."""
    out: list[str] = []
    for w in re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split():
        out += _number_words(int(w)) if w.isdigit() else [w]
    return out


def chars(text: str) -> list[str]:
    """Characters of NFKC text with punctuation, symbols and spaces removed (CER's units)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return [c for c in text if unicodedata.category(c)[0] in "LN"]


def wer(reference: str, hypothesis: str) -> float:
    ref = words(reference)
    return edit_distance(ref, words(hypothesis)) / max(1, len(ref))


def cer(reference: str, hypothesis: str) -> float:
    ref = chars(reference)
    return edit_distance(ref, chars(hypothesis)) / max(1, len(ref))


def error_rate(language: str, reference: str, hypothesis: str) -> float:
    """CER for Japanese (no word boundaries), WER otherwise."""
    return cer(reference, hypothesis) if language == "ja" else wer(reference, hypothesis)


# --- the peer -----------------------------------------------------------------------------------
@dataclass
class PeerResult:
    language: str
    probability: float
    text: str  # "" when the file was dropped


def peer_transcribe(model: Any, audio: np.ndarray, languages: list[str], batch_size: int,
                    beam_size: int = 1, threshold: float = 0.5,
                    word_timestamps: bool = False) -> PeerResult:
    """What a user would write: ``BatchedInferencePipeline.transcribe`` with Silero VAD, the
    same model and batch size; its language ID runs first (inside ``transcribe``, before any
    decoding) and a file in another language is dropped without consuming its segments.
    ``word_timestamps``: its word alignment too, when the stage compared gives words."""
    from faster_whisper import BatchedInferencePipeline

    pipe = BatchedInferencePipeline(model)
    segments, info = pipe.transcribe(audio, batch_size=batch_size, beam_size=beam_size,
                                     vad_filter=True, temperature=0.0,
                                     word_timestamps=word_timestamps)
    if info.language not in languages or info.language_probability < threshold:
        return PeerResult(info.language, info.language_probability, "")
    joiner = "" if info.language == "ja" else " "
    return PeerResult(info.language, info.language_probability,
                      joiner.join(s.text.strip() for s in segments))
