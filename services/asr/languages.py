"""The language codes Whisper knows (faster-whisper's tokenizer list, copied so the settings can
be checked without the ASR stack installed; tests/common/test_settings.py compares the two)."""

from __future__ import annotations

WHISPER_LANGUAGES: tuple[str, ...] = (
    "af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs", "ca", "cs", "cy",
    "da", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fo", "fr", "gl", "gu", "ha", "haw",
    "he", "hi", "hr", "ht", "hu", "hy", "id", "is", "it", "ja", "jw", "ka", "kk", "km", "kn",
    "ko", "la", "lb", "ln", "lo", "lt", "lv", "mg", "mi", "mk", "ml", "mn", "mr", "ms", "mt",
    "my", "ne", "nl", "nn", "no", "oc", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si",
    "sk", "sl", "sn", "so", "sq", "sr", "su", "sv", "sw", "ta", "te", "tg", "th", "tk", "tl",
    "tr", "tt", "uk", "ur", "uz", "vi", "yi", "yo", "zh", "yue",
)

# Names people type instead of the code (a hint in the error message, not accepted as values).
COMMON_NAMES = {"english": "en", "japanese": "ja", "chinese": "zh", "mandarin": "zh",
                "cantonese": "yue", "korean": "ko", "spanish": "es", "french": "fr",
                "german": "de", "italian": "it", "portuguese": "pt", "russian": "ru",
                "arabic": "ar", "hindi": "hi", "dutch": "nl", "polish": "pl", "turkish": "tr",
                "vietnamese": "vi", "thai": "th", "indonesian": "id", "ukrainian": "uk"}
