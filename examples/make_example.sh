#!/usr/bin/env bash
# Make the example input shard examples/raw/shard-000000.tar from speech synthesized here
# (espeak-ng), in a mix of formats, then pack it with `onsei pack-audio`.
#
#   en/sentence_one.flac   English, ~5 s     (kept, transcribed)
#   en/sentence_two.wav    English, ~5 s, 16 kHz stereo
#   ja/aisatsu.opus        Japanese (kana, spaces between words) in Ogg/Opus
#   es/frase.mp3           Spanish: language ID drops it (not in ONSEI_ASR_LANGUAGES)
#   silence.wav            3 s of silence: nothing to transcribe
#
# Needs espeak-ng and ffmpeg. Re-running replaces the shard.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
for tool in espeak-ng ffmpeg; do
  command -v "$tool" >/dev/null || { echo "make_example.sh: $tool is required" >&2; exit 1; }
done
if command -v onsei >/dev/null; then onsei=(onsei); else onsei=(python -m services.ops.cli); fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="$work/speech"
mkdir -p "$src/en" "$src/ja" "$src/es"

say() {  # say VOICE TEXT OUT.wav
  espeak-ng -v "$1" -s 140 -w "$3" "$2"
}
ff() { ffmpeg -nostdin -loglevel error -y "$@"; }

say en-us "The quick brown fox jumps over the lazy dog, and then it runs back into the quiet forest." "$work/en1.wav"
say en-us "Speech data for training needs clean audio, accurate text, and a careful check of every file." "$work/en2.wav"
say ja "きょう は とても いい てんき です ね 。 みんな で こうえん に いきましょう 。" "$work/ja.wav"
say es "Buenos días, hoy vamos a caminar por la ciudad y comer en un restaurante pequeño." "$work/es.wav"

ff -i "$work/en1.wav" -c:a flac "$src/en/sentence_one.flac"
ff -i "$work/en2.wav" -ar 16000 -ac 2 -c:a pcm_s16le "$src/en/sentence_two.wav"
ff -i "$work/ja.wav" -c:a libopus -b:a 32k "$src/ja/aisatsu.opus"
ff -i "$work/es.wav" -c:a libmp3lame -b:a 48k "$src/es/frase.mp3"
ff -f lavfi -i "anullsrc=r=16000:cl=mono" -t 3 -c:a pcm_s16le "$src/silence.wav"

cd "$here/.."
"${onsei[@]}" pack-audio "$src" --output "$here/raw" --start-id 0 --overwrite --no-progress
ls -l "$here/raw"
