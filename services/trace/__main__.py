"""Entry point: python -m services.trace"""

from __future__ import annotations

from citetrace.kit.server import run_service

from services.trace.bootstrap import build_spec
from services.trace.settings import PREFIX, Settings


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
