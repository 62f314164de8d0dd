"""Notifications to a team's webhook: failed runs and every promotion decision.

The URL comes from `ESCRAG_WEBHOOK_URL` (a Slack/Teams incoming webhook or any HTTP endpoint that takes a
JSON POST). It is read at send time and never logged: webhook URLs carry their secret in the path.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from typing import Any

logger = logging.getLogger(__name__)

WEBHOOK_ENV = "ESCRAG_WEBHOOK_URL"


def webhook_url() -> str | None:
    return os.environ.get(WEBHOOK_ENV) or None


def message(kind: str, text: str, **fields: Any) -> dict[str, Any]:
    """The JSON body: `text` for chat webhooks, the structured fields for everything else."""
    return {"text": f"escrag {kind}: {text}", "kind": kind, **fields}


def send(body: dict[str, Any], attempts: int = 3, timeout_s: float = 10.0) -> bool:
    """POST `body` to the webhook, retried with back-off; never raises (a notification must not fail a run)."""
    url = webhook_url()
    if not url:
        return False
    data = json.dumps(body, default=str).encode()
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s):
                return True
        except (urllib.error.URLError, OSError) as exc:
            logger.warning(
                "webhook notification failed (attempt %d of %d): %s", attempt + 1, attempts, type(exc).__name__
            )
            time.sleep(2**attempt)
    return False
