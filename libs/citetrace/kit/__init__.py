"""The service kit: settings, errors, auth, telemetry, metrics, server and clients shared by every service."""
