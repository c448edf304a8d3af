"""What the Dockerfiles install is a wheel of this repository (`pip install .`): every tracked
file under services/, apps/ and libs/citetrace/ (code, YAML policies, migrations, data) must be in it, or
the container would miss it even though every in-repo test passes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from citetrace.kit.stack import SERVICES

from observability.conftest import ROOT


def test_the_wheel_the_images_install_carries_every_tracked_source_file(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "services", "libs/citetrace", "apps"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    tracked = [path for path in tracked if (ROOT / path).exists()]
    assert tracked
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, source / name)
    for path in tracked:
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, source / path)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                             str(source), "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("citetrace-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {path.removeprefix("libs/") for path in tracked}
    missing = sorted(expected - names)
    assert not missing, f"tracked files missing from the wheel (add package data or __init__.py): {missing}"
    for info in SERVICES:
        assert f"services/{info.name}/__main__.py" in names
    assert "citetrace/kit/healthcheck.py" in names
