"""Preflight: the input is there and the output root can be written, or one clear line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from common.stages.preflight import PreflightError, check_input_root, check_output_root


def test_output_root_is_made_and_probed(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    check_output_root(str(tmp_path / "new" / "out"), s)
    assert (tmp_path / "new" / "out").is_dir()
    assert list((tmp_path / "new" / "out").iterdir()) == []  # the probe is gone


def test_output_root_that_is_a_file(make_settings, tmp_path: Path) -> None:
    f = tmp_path / "out"
    f.write_text("x")
    with pytest.raises(PreflightError, match=r"output root .*out is a file, not a directory"):
        check_output_root(str(f), make_settings())
    with pytest.raises(PreflightError, match=r"is under a file"):
        check_output_root(str(f / "sub"), make_settings())


def test_output_root_not_writable(make_settings, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:  # not root: permissions do it
        ro.chmod(0o555)
    try:
        with pytest.raises(PreflightError, match=r"output root .*ro/out is not writable: "):
            check_output_root(str(ro / "out"), make_settings())
    finally:
        if res.returncode == 0:
            subprocess.run(["umount", "-l", str(ro)], check=False)
        ro.chmod(0o755)


def test_input_missing_or_a_file(make_settings, tmp_path: Path) -> None:
    with pytest.raises(PreflightError, match=r"input .*nowhere does not exist"):
        check_input_root(str(tmp_path / "nowhere"), make_settings())
    (tmp_path / "f").write_text("x")
    with pytest.raises(PreflightError, match="is not a directory"):
        check_input_root(str(tmp_path / "f"), make_settings())
    check_input_root(str(tmp_path), make_settings())


def test_s3_bucket_and_prefix(make_settings, s3_bucket: str) -> None:
    import boto3

    s = make_settings()
    with pytest.raises(PreflightError, match=r"input s3://.*/raw does not exist"):
        check_input_root(f"s3://{s3_bucket}/raw", s)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="raw/shard-000000.tar", Body=b"x")
    check_input_root(f"s3://{s3_bucket}/raw", s)
    check_output_root(f"s3://{s3_bucket}/out", s)
    with pytest.raises(PreflightError, match="bucket 'no-such-bucket-13' does not exist"):
        check_output_root("s3://no-such-bucket-13/out", s)


def test_s3_without_credentials(make_settings, s3_bucket: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(PreflightError, match="no AWS credentials found") as e:
        check_output_root(f"s3://{s3_bucket}/out", make_settings())
    assert "\n" not in str(e.value)
