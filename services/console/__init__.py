"""The evidence console: an HTTP service (Starlette on uvicorn) that renders answers with citation
markers, opens the cited passage at its pinned version, and shows receipts and reviews. It talks to
the other services only over their gRPC contracts, with the signed-in user's token."""
