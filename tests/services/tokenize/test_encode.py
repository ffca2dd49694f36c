"""Token counts and batched-vs-alone agreement on the real NeuCodec classes (small, random)."""

from __future__ import annotations

import numpy as np

from services.tokenize.encode import encode_batch, expected_frames, prepare
from tests.services.tokenize.conftest import tone

# Lengths on both sides of each hop boundary, T % 320 == 0 included (the library then pads a
# whole extra hop), short and long. (3519, 6400 and 8000 repeated these cases at ~40 % of the
# test's time.)
LENGTHS = [320, 639, 640, 959, 960, 3200, 3201, 9617]


def test_token_counts_exact_for_many_lengths(codec) -> None:
    m = codec.model
    items = [prepare(m, "neucodec", tone(n, 16_000, seed=i)) for i, n in enumerate(LENGTHS)]
    assert [it.frames for it in items] == [n // 320 for n in LENGTHS]
    batched = encode_batch(m, items, "exact")
    alone = encode_batch(m, items, "library")  # the library's encode_code, one at a time
    for n, b, a in zip(LENGTHS, batched, alone):
        assert b.shape == (n // 320,) == a.shape == (expected_frames(n, "neucodec"),)
        assert b.dtype == np.int64 and b.min() >= 0 and b.max() < 65_536


def test_exact_policy_matches_library_alone(codec) -> None:
    """Same pre-quantiser embeddings as encode_code on each item alone (random weights make
    codes near-constant, so the continuous embeddings are what can tell a difference)."""
    m = codec.model
    lengths = [8_000, 7_321, 4_500]  # the longest alone, and two padded to it
    items = [prepare(m, "neucodec", tone(n, 16_000, seed=i)) for i, n in enumerate(lengths)]
    codes_b, emb_b = encode_batch(m, items, "exact", return_embeddings=True)
    codes_a, emb_a = encode_batch(m, items, "library", return_embeddings=True)
    for cb, ca, eb, ea in zip(codes_b, codes_a, emb_b, emb_a):
        assert eb.shape == ea.shape
        np.testing.assert_allclose(eb, ea, atol=1e-4, rtol=0)
        assert (cb == ca).all()


def test_padded_differs_at_the_tail_and_stitched_repairs_it(codec) -> None:
    """Padding the audio changes only the last frames of shorter items (acoustic receptive
    field); ``stitched`` re-encodes those tails alone and so matches alone everywhere. Code
    agreement is measured and reported, not assumed."""
    from services.tokenize.encode import TAIL_FRAMES

    m = codec.model
    lengths = [14_400, 14_100, 13_000]  # >= the 40-frame tail window: the batched tail path
    items = [prepare(m, "neucodec", tone(n, 16_000, seed=i)) for i, n in enumerate(lengths)]
    codes_a, emb_a = encode_batch(m, items, "library", return_embeddings=True)
    codes_p, emb_p = encode_batch(m, items, "padded", return_embeddings=True)
    codes_s, emb_s = encode_batch(m, items, "stitched", return_embeddings=True)
    total = same = 0
    for it, cp, ca, cs, ep, ea, es in zip(items, codes_p, codes_a, codes_s, emb_p, emb_a, emb_s):
        assert cp.shape == ca.shape == cs.shape == (it.frames,)
        differing = np.nonzero(np.abs(ep - ea).max(axis=0) > 1e-4)[0]
        assert all(f >= it.frames - TAIL_FRAMES for f in differing), differing
        np.testing.assert_allclose(es, ea, atol=1e-4, rtol=0)
        assert (cs == ca).all()
        total += ca.size
        same += int((cp == ca).sum())
    assert any(np.abs(ep - ea).max() > 1e-4 for ep, ea in zip(emb_p[1:], emb_a[1:]))
    print(f"padded policy code agreement (random weights): {same / total:.4f}")


def test_trimmed_semantic_model_matches_untrimmed_library(codec) -> None:
    """Dropping w2v-BERT layers past the 16th changes nothing: the library reads
    hidden_states[16] of the whole (here 17-layer) model."""
    from services.tokenize.loader import load_codec

    full = load_codec(codec.directory, "neucodec", "cpu", trim=False)
    assert len(full.model.semantic_model.encoder.layers) == 17
    x = tone(4_321, 16_000, seed=3)
    ours = encode_batch(codec.model, [prepare(codec.model, "neucodec", x)], "exact", True)
    ref = encode_batch(full.model, [prepare(full.model, "neucodec", x)], "library", True)
    np.testing.assert_allclose(ours[1][0], ref[1][0], atol=1e-4, rtol=0)
    assert (ours[0][0] == ref[0][0]).all()
