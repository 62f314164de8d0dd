"""Prefect flows that compose tasks, and the `escrag` command line."""
