"""The orchestrator's core: scope gate, router, conflict detection and the answer pipeline.
No grpc imports here: downstream services are reached through the ports in `ports.py`."""
