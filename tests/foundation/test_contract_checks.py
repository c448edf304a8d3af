"""The contract check of `make lint` (deploy/tools/proto_breaking.py): the release image is the tag's
contracts, the accepted changes are exactly the ones buf reports, and any other breaking change fails."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("proto_breaking", ROOT / "deploy" / "tools" / "proto_breaking.py")
proto_breaking = importlib.util.module_from_spec(spec)
spec.loader.exec_module(proto_breaking)


def copy_of_contracts(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "buf.yaml", root / "buf.yaml")
    shutil.copytree(ROOT / "proto", root / "proto")
    return root


def test_the_repository_is_compatible_with_its_last_release(capsys):
    assert proto_breaking.check(ROOT) == 0, capsys.readouterr().err


def test_a_breaking_change_beyond_the_accepted_ones_fails(tmp_path, capsys):
    root = copy_of_contracts(tmp_path)
    proto = root / "proto" / "citetrace" / "trace" / "v1" / "trace_service.proto"
    text = proto.read_text(encoding="utf-8")
    changed = text.replace("string trace_id = 1;", "int64 trace_id = 1;", 1)
    assert changed != text
    proto.write_text(changed, encoding="utf-8")
    assert proto_breaking.check(root) == 1
    assert "trace_id" in capsys.readouterr().err


def test_an_exception_buf_no_longer_reports_fails(tmp_path, capsys):
    root = copy_of_contracts(tmp_path)
    exceptions = root / proto_breaking.EXCEPTIONS
    exceptions.write_text(exceptions.read_text(encoding="utf-8") + (
        "  - rule: FIELD_SAME_TYPE\n    message: 'a change that was never made'\n"), encoding="utf-8")
    assert proto_breaking.check(root) == 1
    assert "no longer reported" in capsys.readouterr().err


def test_the_release_image_is_the_tagged_contracts(tmp_path):
    image = proto_breaking.newest_release(ROOT)
    tag = image.stem
    known = subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/tags/{tag}"], cwd=ROOT,
                           capture_output=True, text=True)
    if known.returncode != 0:
        pytest.skip(f"git has no tag {tag} here (a clone without tags): the image is the baseline")
    rebuilt = proto_breaking.write_snapshot(ROOT, tag, tmp_path / f"{tag}.binpb").read_bytes()
    assert rebuilt == image.read_bytes(), f"{image} differs from the contracts of tag {tag}"
