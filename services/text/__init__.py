"""A segment's text as it is spoken, for TTS training (docs/text.md): ``text_spoken`` (numbers,
dates, money, units and abbreviations written out, in the segment's language), and for
Japanese its ``reading`` (katakana) and ``accent``; English ``phonemes`` behind a setting.

:func:`services.text.forms.text_forms` is the one entry point: asr calls it when it keeps a
segment, enhance when it cuts one at a speaker change."""
