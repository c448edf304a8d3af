"""orchestrator: Splits a question into parts by authority and returns one traced answer."""
