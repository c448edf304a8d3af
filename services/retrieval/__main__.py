"""Entry point: python -m services.retrieval"""

from __future__ import annotations

import os

# Before numpy is imported: OpenBLAS threads would fight ONNX Runtime for the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from citetrace.kit.server import run_service  # noqa: E402

from services.retrieval.bootstrap import build_spec  # noqa: E402
from services.retrieval.settings import PREFIX, Settings  # noqa: E402


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
