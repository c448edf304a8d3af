"""`buf breaking` against the last release of the contracts, with the breaking changes accepted on purpose.

The contracts of each release tag (v0.1.0, ...) are kept as a buf image, proto/releases/<tag>.binpb
(`--write-snapshot TAG` builds it from the tag's tree), so the check needs neither the tag nor the
network in a fresh clone; tests/foundation/test_contract_checks.py checks the image against the tag
where git has it. The newest image is the baseline.

proto/releases/breaking-exceptions.yaml lists the changes accepted against that baseline (rule and
buf's exact message, with the reason). Anything else buf reports fails the check, and so does an
exception buf no longer reports (it belongs to an older baseline: remove it).

    python deploy/tools/proto_breaking.py                      # make lint runs this
    python deploy/tools/proto_breaking.py --write-snapshot v0.2.0   # after tagging a release
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASES = Path("proto") / "releases"
EXCEPTIONS = RELEASES / "breaking-exceptions.yaml"
BUF = str(ROOT / "node_modules" / ".bin" / "buf")  # from package.json (make setup)


def release_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.stem))


def newest_release(root: Path) -> Path:
    images = sorted((root / RELEASES).glob("v*.binpb"), key=release_key)
    if not images:
        raise SystemExit(f"proto-breaking: no release image under {root / RELEASES} (see --write-snapshot)")
    return images[-1]


def breaking_changes(root: Path, against: Path) -> list[dict]:
    result = subprocess.run([BUF, "breaking", "--against", str(against), "--error-format", "json"],
                            cwd=root, capture_output=True, text=True)
    if result.returncode not in (0, 100):  # 100: breaking changes found
        raise SystemExit(f"proto-breaking: buf failed: {result.stderr.strip()}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def accepted(root: Path, release: str) -> list[dict]:
    path = root / EXCEPTIONS
    if not path.exists():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if data.get("against") != release:
        return []  # exceptions of an older baseline: that release already contains them
    return list(data.get("accepted") or [])


def check(root: Path) -> int:
    image = newest_release(root)
    release = image.stem
    changes = breaking_changes(root, image)
    allowed = accepted(root, release)
    keys = {(a["rule"], a["message"]) for a in allowed}
    unexpected = [c for c in changes if (c["type"], c["message"]) not in keys]
    seen = {(c["type"], c["message"]) for c in changes}
    stale = [a for a in allowed if (a["rule"], a["message"]) not in seen]
    for c in unexpected:
        print(f"{c['path']}:{c['start_line']}: {c['type']}: {c['message']}", file=sys.stderr)
    for a in stale:
        print(f"{EXCEPTIONS}: accepted change no longer reported against {release} (remove it): "
              f"{a['rule']}: {a['message']}", file=sys.stderr)
    if unexpected or stale:
        print(f"proto-breaking: {len(unexpected)} breaking change(s) against release {release}"
              + (f", {len(stale)} stale exception(s)" if stale else ""), file=sys.stderr)
        return 1
    print(f"proto-breaking: compatible with release {release}"
          + (f" ({len(changes)} accepted change(s), {EXCEPTIONS})" if changes else ""))
    return 0


def write_snapshot(root: Path, tag: str, out: Path | None = None) -> Path:
    """Builds proto/releases/<tag>.binpb (or `out`) from the contracts in git tag `tag`."""
    out = (out or root / RELEASES / f"{tag}.binpb").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", tag, "buf.yaml", "proto"], cwd=root, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        subprocess.run([BUF, "build", "--exclude-source-info", "-o", str(out)], cwd=tmp, check=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this one)")
    parser.add_argument("--write-snapshot", metavar="TAG", help="build proto/releases/TAG.binpb from git tag TAG")
    args = parser.parse_args(argv)
    if args.write_snapshot:
        print(f"wrote {write_snapshot(args.root, args.write_snapshot)}")
        return 0
    return check(args.root)


if __name__ == "__main__":
    sys.exit(main())
