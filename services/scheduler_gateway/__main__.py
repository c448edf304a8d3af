"""Entry point: python -m services.scheduler_gateway"""

from __future__ import annotations

from citetrace.kit.server import run_service

from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.settings import PREFIX, Settings


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
