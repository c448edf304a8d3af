"""Entry point: python -m services.orchestrator"""

from __future__ import annotations

from citetrace.kit.server import run_service

from services.orchestrator.servicer import build_spec
from services.orchestrator.settings import PREFIX, Settings


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
