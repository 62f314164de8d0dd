"""Chat backends for the ESC-Preference roles: a local transformers model or an OpenAI-compatible server.

Both take chat messages [{role, content}] and return the assistant's text, and both cache answers on disk
by a hash of (backend, model, messages, max_tokens, temperature), so a rerun of the builder costs nothing.

HTTP backend settings come from the environment (`http_backend_from_env`):
  ESCRAG_LLM_URL      base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1 (POST {url}/chat/completions)
  ESCRAG_LLM_MODEL    model name sent in the request
  ESCRAG_LLM_API_KEY  bearer token (optional; OPENAI_API_KEY is read when it is unset)
  ESCRAG_LLM_TIMEOUT  seconds per request (default 60)
Connection errors, timeouts, HTTP 429 and 5xx are retried with exponential back-off; any other HTTP error
fails at once. After the last attempt a `BackendUnavailableError` says which URL and why.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)

Message = dict[str, str]
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class BackendError(RuntimeError):
    """The backend answered, but not with a usable completion (bad request, bad key, malformed body)."""


class BackendUnavailableError(BackendError):
    """The backend could not be reached (or kept failing) after every retry."""


class ChatBackend(Protocol):
    name: str  # the kind of backend; `label` (where present) names the model for records, never a URL or key

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7) -> str: ...


class ResponseCache:
    """Answers on disk, one JSON file per prompt hash; `None` folder disables caching."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = Path(folder) if folder else None
        self.hits = 0

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def get(self, key: str) -> str | None:
        if self.folder is None:
            return None
        path = self.folder / key[:2] / f"{key}.json"
        if not path.is_file():
            return None
        self.hits += 1
        return json.loads(path.read_text(encoding="utf-8"))["text"]

    def put(self, key: str, text: str) -> None:
        if self.folder is None:
            return
        path = self.folder / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"text": text}, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)


class HttpChatBackend:
    """POST {base_url}/chat/completions of an OpenAI-compatible server, with retries and a disk cache."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        cache_dir: Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"ESCRAG_LLM_URL must start with http:// or https://, got {base_url!r}")
        if retries < 0 or timeout <= 0:
            raise ValueError("retries must be >= 0 and timeout > 0")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.label = f"http:{model}"  # what records name as the model: never the URL or the key
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.cache = ResponseCache(cache_dir)
        self._sleep = sleep
        self.requests = 0

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7) -> str:
        key = self.cache.key(self.name, self.model, list(messages), max_tokens, temperature)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        body = {"model": self.model, "messages": list(messages), "max_tokens": max_tokens, "temperature": temperature}
        text = self._parse(self._post(json.dumps(body).encode()))
        self.cache.put(key, text)
        return text

    def _post(self, payload: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                delay = self.backoff * 2 ** (attempt - 1)
                logger.warning(
                    "chat backend %s: %s; retry %d/%d in %.1f s", self.url, last, attempt, self.retries, delay
                )
                self._sleep(delay)
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:200]
                if exc.code not in RETRYABLE_STATUS:
                    raise BackendError(f"chat backend {self.url} answered HTTP {exc.code}: {detail}") from None
                last = f"HTTP {exc.code}"
            except json.JSONDecodeError as exc:
                raise BackendError(f"chat backend {self.url} sent a body that is not JSON: {exc}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        raise BackendUnavailableError(
            f"chat backend {self.url} is unavailable after {self.retries + 1} attempts ({last}); "
            "check ESCRAG_LLM_URL and that the server is running"
        )

    def _parse(self, body: dict[str, Any]) -> str:
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"chat backend {self.url}: no choices[0].message.content in {str(body)[:200]}") from None
        if not isinstance(content, str):
            raise BackendError(f"chat backend {self.url}: message content is {type(content).__name__}, not text")
        return content.strip()


LLM_PREFIX = "ESCRAG_LLM"  # the ESC-Preference roles
JUDGE_PREFIX = "ESCRAG_JUDGE"  # the evaluation's optional pairwise judge (models/pairwise_judge.py)


def http_configured(env: dict[str, str] | None = None, prefix: str = LLM_PREFIX) -> bool:
    env = dict(os.environ if env is None else env)
    return bool(env.get(f"{prefix}_URL") and env.get(f"{prefix}_MODEL"))


def http_backend_from_env(
    cache_dir: Path | None = None, env: dict[str, str] | None = None, prefix: str = LLM_PREFIX
) -> HttpChatBackend:
    """An HttpChatBackend from {prefix}_URL / _MODEL / _API_KEY / _TIMEOUT; a clear error when unset."""
    env = dict(os.environ if env is None else env)
    url, model = env.get(f"{prefix}_URL"), env.get(f"{prefix}_MODEL")
    if not url or not model:
        raise BackendError(f"the http backend needs {prefix}_URL and {prefix}_MODEL in the environment")
    try:
        timeout = float(env.get(f"{prefix}_TIMEOUT", "60"))
    except ValueError:
        raise BackendError(f"{prefix}_TIMEOUT must be a number of seconds, got {env[f'{prefix}_TIMEOUT']!r}") from None
    key = env.get(f"{prefix}_API_KEY") or env.get("OPENAI_API_KEY")
    return HttpChatBackend(url, model, api_key=key, timeout=timeout, cache_dir=cache_dir)


class LocalChatBackend:
    """A local causal LM with a chat template (SmolLM2 from artifacts/base_model), sampling on CPU."""

    name = "local"

    def __init__(
        self,
        model_dir: Path | str,
        *,
        seed: int = 13,
        cache_dir: Path | None = None,
        model_name: str | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").is_file():
            raise FileNotFoundError(f"no model in {self.model_dir}; run `escrag stage base_model` first")
        self.model = str(self.model_dir.resolve())
        self.label = f"local:{model_name or self.model_dir.name}"  # records name the model, not the path
        self.seed = seed
        self.cache = ResponseCache(cache_dir)
        self._loaded: tuple[Any, Any] | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from models.base_model import load_policy

            model, tokenizer = load_policy(self.model_dir)
            self._loaded = (model.eval(), tokenizer)
        return self._loaded

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7) -> str:
        key = self.cache.key(self.name, self.model, list(messages), max_tokens, temperature, self.seed)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        import torch

        model, tokenizer = self._load()
        prompt = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        enc = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        # Reproducible per prompt and different across prompts, wherever the project (and model folder) lies.
        prompt_key = self.cache.key(list(messages), max_tokens, temperature)
        torch.manual_seed(int(prompt_key[:8], 16) ^ self.seed)
        sample = temperature > 0
        with torch.no_grad():
            out = model.generate(
                **enc,
                max_new_tokens=max_tokens,
                do_sample=sample,
                temperature=temperature if sample else None,
                top_p=0.95 if sample else None,
                pad_token_id=tokenizer.pad_token_id,
            )
        text = tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True).strip()
        self.cache.put(key, text)
        return text
