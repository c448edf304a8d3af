"""citation_validator: Checks every cited claim before it leaves."""
