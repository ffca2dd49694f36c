"""A stage added from its own folder and one line of the pipeline's declaration.

The toy stage lives in a temporary package outside the checkout (spec, settings, stage and the
two fleet entry points, nothing else) and joins the real pipeline between asr and enhance
through ``ONSEI_PIPELINE``; ``onsei run`` and a real Celery worker of it process real asr output
(bundled Whisper base on synthesized speech), and the operator commands see it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixtures.speech_corpus import EN_SENTENCES
from fixtures.speechgen import make_shard, synth, wav_bytes
from services.pipeline import DECLARED, ENV, declared
from tests.harness import pipeline_env, run_cli, start_worker, wait_until, worker_logs
from tests.services.asr.conftest import MODEL, _model_cache
from tests.system_packages import ESPEAK, needs

REPO = Path(__file__).resolve().parents[2]

# the whole of a stage: what it reads and writes (and where its workers run), its settings
# section, its processing, and the two modules Celery's ``-A toyext.toy`` looks for
TOY = {
    "__init__.py": "",
    "spec.py": """
        from common.stages.contract import InputRef
        from common.stages.spec import Deploy, StageSpec
        from toyext.toy.settings import ToySettings

        SPEC = StageSpec(
            name="toy", settings=ToySettings, stage_class="toyext.toy.stage:ToyStage",
            output_key=lambda s, i: f"toy/{s.shard_stem(i)}.json",
            inputs=lambda s, i: {"asr": InputRef.of_stage("asr")},
            deploy=Deploy(extra=None, image="nvidia/cuda:12.6.3-runtime-ubuntu24.04",
                          image_why="no model: the CUDA runtime alone", gpu_memory="none",
                          metrics_port=9231),
        )
    """,
    "settings.py": """
        from pydantic import Field

        from common.settings import Settings


        class ToySettings(Settings):
            toy_label: str = Field("toy", description="written into each output")
    """,
    "stage.py": """
        import json

        from common.stages.contract import Stage, StageResult
        from services.records import AsrLine
        from toyext.toy.spec import SPEC


        class ToyStage(Stage):
            name = "toy"

            def load(self):
                pass

            def model_info(self):
                return {"model": "toy", "version": "1"}

            def process(self, shard_id, inputs, workdir):
                rows = [AsrLine.from_json(x) for x in inputs["asr"].read_bytes().splitlines()]
                words = sum(len(s.text.split()) for r in rows for s in r.kept)
                key = SPEC.output_key(self.settings, shard_id)
                out = workdir / "out" / "toy.json"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps({"label": self.settings.toy_label, "words": words,
                                           "read": self.input_keys["asr"]}))
                return StageResult({key: out}, {"words": words})
    """,
    "celery.py": """
        from services.pipeline import worker_app

        app = worker_app("toy")
    """,
    "tasks.py": """
        from services.pipeline import worker_task
        from toyext.toy.celery import app

        process_shard = worker_task(app, "toy")
    """,
}
# the one line: the declaration with the toy stage between asr and enhance
LINE = "asr,toyext.toy,enhance,tokenize"


def toy_package(root: Path) -> Path:
    (root / "toyext" / "toy").mkdir(parents=True)
    (root / "toyext" / "__init__.py").write_text("")
    for name, text in TOY.items():
        (root / "toyext" / "toy" / name).write_text(textwrap.dedent(text).lstrip())
    return root


def test_declared_names_packages() -> None:
    assert declared({}) == {"asr": "services.asr", "enhance": "services.enhance",
                            "tokenize": "services.tokenize"}
    assert list(declared({}).values()) == list(DECLARED)
    assert declared({ENV: LINE}) == {"asr": "services.asr", "toy": "toyext.toy",
                                     "enhance": "services.enhance",
                                     "tokenize": "services.tokenize"}


@pytest.mark.parametrize("value, why", [
    ("asr,enhance,toy-ext.toy", "is not a package name"),
    ("asr,enhance,other.asr", "two stages named 'asr'"),
    ("asr,,tokenize", "is not a package name"),
])
def test_a_bad_declaration_is_one_line(tmp_path: Path, value: str, why: str) -> None:
    env = {**os.environ, ENV: value, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "services.ops.cli", "status", "--output",
                          str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().startswith(f"Error: {ENV}: ") and why in res.stderr, res.stderr


@pytest.mark.timeout(600)
@needs(ESPEAK)
def test_a_toy_stage_runs_in_onsei_run_and_its_worker(tmp_path: Path,
                                                      private_redis_url: str,
                                                      request: pytest.FixtureRequest) -> None:
    pkg = toy_package(tmp_path / "ext")
    speech = wav_bytes(synth(EN_SENTENCES[3]))  # 11 words: the toy counts at least 4
    for i in range(3):
        make_shard(tmp_path / "raw" / f"shard-{i:06d}.tar", {"a": {"wav": speech}})
    env = pipeline_env(private_redis_url, str(tmp_path / "raw"), str(tmp_path / "out"),
                       tmp_path / "scratch", ONSEI_PIPELINE=LINE, ONSEI_TOY_LABEL="from-env",
                       ONSEI_MODEL_CACHE=_model_cache(), ONSEI_ASR_MODEL=MODEL,
                       ONSEI_ASR_DEVICE="cpu", ONSEI_ASR_COMPUTE_TYPE="int8",
                       HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = f"{pkg}{os.pathsep}{env['PYTHONPATH']}"
    env.pop("ONSEI_CONFIG", None)
    out = tmp_path / "out"

    # `onsei run`: the toy stage in its place, after asr, its settings section read
    res = run_cli(["services.ops.cli", "run", "--range", "0-2", "--stages", "asr"], env, 420)
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_cli(["services.ops.cli", "run", "--range", "0-2", "--stages", "enhance"], env)
    assert "enhance: processed 0, already done 0, failed 0, waiting 3" in res.stdout, \
        res.stdout + res.stderr  # it reads asr's output, and waits on the stage before it
    res = run_cli(["services.ops.cli", "run", "--range", "0-1", "--stages", "toy"], env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "toy: processed 2, already done 0, failed 0, waiting 0" in res.stdout, res.stdout
    for i in (0, 1):
        made = json.loads((out / "toy" / f"shard-{i:06d}.json").read_text())
        assert made == {"label": "from-env", "words": made["words"],
                        "read": f"asr/shard-{i:06d}.jsonl"} and made["words"] >= 4, made
        done = json.loads((out / "_ledger" / "toy" / f"shard-{i:06d}.json").read_text())
        assert done["stage"] == "toy" and done["counts"] == {"words": made["words"]}
        assert done["outputs"] == [f"toy/shard-{i:06d}.json"], done
    assert not (out / "toy" / "shard-000002.json").exists()

    # a real worker of the toy stage (`celery -A toyext.toy`): shard 2 from the queue, handed
    # on to enhance's queue by the declared order
    w = start_worker("toyext.toy", "toy", env)
    request.addfinalizer(w.kill9)
    res = run_cli(["services.ops.enqueue", "--range", "2", "--stage", "toy",
                   "--until", "enhance"], env)
    assert res.returncode == 0 and "enqueued 1 (toy=1)" in res.stdout, res.stdout + res.stderr
    # this process's pipeline has no toy stage (the harness's waits read it): the file itself
    record = out / "_ledger" / "toy" / "shard-000002.json"
    failed = out / "_ledger" / "_failed" / "toy" / "shard-000002.json"
    assert wait_until(record.exists, 120, workers=[w],
                      abort=lambda: failed.read_text() if failed.exists() else None), \
        worker_logs([w])
    assert json.loads((out / "toy" / "shard-000002.json").read_text())["label"] == "from-env"
    assert "toy" in w.log_text() and "Traceback" not in w.log_text(), worker_logs([w])

    # the operator commands list it among the stages, in its place
    status = json.loads(run_cli(["services.ops.cli", "status", "--json"], env).stdout)
    assert list(status["stages"]) == ["asr", "toy", "enhance", "tokenize"]
    assert status["stages"]["toy"]["done"] == 3
    assert status["stages"]["enhance"]["queued"] == 1  # the hand-on
