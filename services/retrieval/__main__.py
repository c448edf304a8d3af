"""Entry point: python -m services.retrieval"""

from __future__ import annotations

from citetrace.kit.server import run_service

from services.retrieval.servicer import build_spec
from services.retrieval.settings import PREFIX, Settings


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
