"""trace: The append-only evidence record of every answer."""
