"""citetrace: every answer carries a machine-checkable path from question to cited source revision."""

__version__ = "0.1.0"
