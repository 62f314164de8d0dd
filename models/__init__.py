"""The ML layer of escrag: plain Python, torch, transformers, TRL and LanceDB; never Prefect."""
