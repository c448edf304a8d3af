"""scheduler_gateway: Live availability from the scheduling system of record."""
