"""The configs of the released models' semantic parts, so a checkpoint directory that lacks
``semantic_config.json`` / ``preprocessor_config.json`` still builds without the hub.

Values follow ``facebook/w2v-bert-2.0`` and ``ntu-spml/distilhubert``; a mismatch with the
checkpoint shows up as a key or shape error at load time, never as silent noise.
"""

from __future__ import annotations

from typing import Any

HUB_IDS: dict[str, str] = {
    "neucodec": "neuphonic/neucodec",
    "distill-neucodec": "neuphonic/distill-neucodec",
}
SEMANTIC_HUB_IDS: dict[str, str] = {
    "neucodec": "facebook/w2v-bert-2.0",
    "distill-neucodec": "ntu-spml/distilhubert",
}


def known_semantic_config(variant: str) -> dict[str, Any]:
    if variant == "neucodec":
        return {
            "model_type": "wav2vec2-bert", "hidden_size": 1024, "num_hidden_layers": 24,
            "num_attention_heads": 16, "intermediate_size": 4096,
            "feature_projection_input_dim": 160, "hidden_act": "swish",
            "position_embeddings_type": "relative_key", "left_max_position_embeddings": 64,
            "right_max_position_embeddings": 8, "conv_depthwise_kernel_size": 31,
            "layer_norm_eps": 1e-5, "add_adapter": False, "apply_spec_augment": False,
            "mask_time_prob": 0.05, "layerdrop": 0.1, "use_intermediate_ffn_before_adapter": False,
        }
    return {
        "model_type": "hubert", "hidden_size": 768, "num_hidden_layers": 2,
        "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
        "conv_dim": [512] * 7, "conv_stride": [5, 2, 2, 2, 2, 2, 2],
        "conv_kernel": [10, 3, 3, 3, 3, 2, 2], "conv_bias": False,
        "feat_extract_norm": "group", "feat_proj_layer_norm": False,
        "do_stable_layer_norm": False, "num_conv_pos_embeddings": 128,
        "num_conv_pos_embedding_groups": 16, "layer_norm_eps": 1e-5,
    }


def known_preprocessor_config(variant: str) -> dict[str, Any]:
    if variant == "neucodec":
        # w2v-BERT 2.0 filterbank; padding_value 1 as in its preprocessor_config.json.
        return {"feature_extractor_type": "SeamlessM4TFeatureExtractor", "feature_size": 80,
                "num_mel_bins": 80, "padding_value": 1.0, "sampling_rate": 16000, "stride": 2,
                "return_attention_mask": True, "padding_side": "right"}
    return {"feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1,
            "sampling_rate": 16000, "padding_value": 0.0, "do_normalize": False,
            "return_attention_mask": False, "padding_side": "right"}
