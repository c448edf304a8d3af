"""The store of record of the retrieval service: documents, immutable versions, passages (SQL)."""
