"""``onsei run --stages`` that stops before the last stage ends by naming the next step: the
command and the models it needs."""

from __future__ import annotations


def test_next_steps_name_the_command_and_the_models(make_settings, clean_env):
    from services.ops.run import next_steps

    s = make_settings(profile="offline")
    lines = next_steps(s, ["asr", "enhance"], "0-0")
    assert lines[0] == (f"next: tokenize (not asked for with --stages): onsei run --output "
                        f"{s.output_url} --range 0-0 --stages tokenize")
    assert "tokenize needs neuphonic/neucodec" in lines[1]
    assert next_steps(s, ["asr"], "3-4")[0].endswith("--range 3-4 --stages enhance,tokenize")


def test_a_whole_run_has_no_next_step(make_settings, clean_env):
    from services.ops.run import next_steps

    assert next_steps(make_settings(), ["asr", "enhance", "tokenize"], "0-0") == []
