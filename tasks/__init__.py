"""Pipeline units: each stage once, callable from `dvc repro` (via `escrag stage`) and from Prefect."""
