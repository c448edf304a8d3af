"""retrieval: Versioned policy knowledge: ingestion, hybrid search, exact passages."""
