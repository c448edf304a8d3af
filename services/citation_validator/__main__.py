"""Entry point: python -m services.citation_validator"""

from __future__ import annotations

from citetrace.kit.server import run_service

from services.citation_validator.bootstrap import build_spec
from services.citation_validator.settings import PREFIX, Settings


def main() -> None:
    run_service(build_spec, Settings, PREFIX)


if __name__ == "__main__":
    main()
