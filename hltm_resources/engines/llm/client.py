"""One client for every LLM call: structured output, retries, bounded concurrency, caching and
accounting, over the ``openai`` SDK against any OpenAI-compatible endpoint (or Azure OpenAI).

- Structured output: ``response_format`` with a JSON schema; if the server rejects that, plain
  JSON mode, then no ``response_format`` (remembered per client). Replies are validated with
  pydantic; an invalid reply is retried with the validation error in the prompt, up to the
  retry budget, then :class:`LLMOutputError`.
- Resilience: 429, 5xx, timeouts and connection errors are retried with exponential backoff and
  jitter, honouring ``Retry-After``; the SDK's own retries are off so every retry is counted.
- Concurrency: a semaphore bounds the requests in flight across the whole process.
- Cache: (prompt version, model, messages, schema) -> reply, persistent, so a re-run after a
  crash does not pay twice.
- Accounting: calls and tokens from the API's ``usage``; counted locally (and said so) when a
  server does not report usage.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hltm_resources.config import ConfigError, Settings
from hltm_resources.engines.base import Usage
from hltm_resources.engines.llm.prompts import PROMPT_VERSION
from hltm_resources.stores.llm_cache import LLMCache, PostgresLLMCache, cache_key, open_cache

T = TypeVar("T", bound=BaseModel)
_SEMAPHORES: dict[int, threading.BoundedSemaphore] = {}
_SEM_LOCK = threading.Lock()
MAX_BACKOFF_S = 30.0


class LLMOutputError(RuntimeError):
    """The model never returned valid output within the retry budget."""


class LLMUnavailableError(RuntimeError):
    """The endpoint kept failing (429/5xx/timeouts) beyond the retry budget."""


def _semaphore(limit: int) -> threading.BoundedSemaphore:
    with _SEM_LOCK:
        if limit not in _SEMAPHORES:
            _SEMAPHORES[limit] = threading.BoundedSemaphore(limit)
        return _SEMAPHORES[limit]


def retry_after_seconds(exc: Exception) -> float | None:
    """The server's ``Retry-After`` (seconds or ``retry-after-ms``), if it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000.0
        if "retry-after" in headers:
            return float(headers["retry-after"])
    except (TypeError, ValueError):
        return None
    return None


def backoff_seconds(
    attempt: int,
    retry_after: float | None,
    base: float = 0.5,
    rng: Callable[[], float] = random.random,
) -> float:
    """Exponential backoff with full jitter, never shorter than ``Retry-After``."""
    delay = min(MAX_BACKOFF_S, base * (2**attempt)) * (0.5 + rng() / 2)
    return max(delay, retry_after or 0.0)


def make_openai_client(settings: Settings):
    """An ``OpenAI`` or ``AzureOpenAI`` client (SDK retries off: this module retries)."""
    import openai

    if not settings.api_key:
        raise ConfigError(
            "the openai engine needs an API key: set OPENAI_API_KEY (any value "
            "for a local server that ignores it)"
        )
    if settings.azure_api_version:
        if not settings.base_url:
            raise ConfigError(
                "Azure OpenAI needs OPENAI_BASE_URL set to the resource endpoint "
                "(https://<resource>.openai.azure.com)"
            )
        return openai.AzureOpenAI(
            azure_endpoint=settings.base_url,
            api_version=settings.azure_api_version,
            api_key=settings.api_key,
            timeout=settings.timeout_s,
            max_retries=0,
        )
    return openai.OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout_s,
        max_retries=0,
    )


def server_context_tokens(settings: Settings, timeout_s: float = 5.0) -> int | None:
    """The context a chat server serves per request, if it says: ``HLTM_LLM_CONTEXT``, else
    llama.cpp's ``/props`` (``n_ctx`` of a slot) or vLLM's ``max_model_len`` in
    ``/v1/models``; None when neither answers (hosted APIs: their contexts are large)."""
    if settings.llm_context_tokens:
        return settings.llm_context_tokens
    if not settings.base_url or settings.azure_api_version:
        return None
    base = settings.base_url.rstrip("/")
    root = base.removesuffix("/v1")
    for url, read in (
        (f"{root}/props", lambda d: d["default_generation_settings"]["n_ctx"]),
        (f"{base}/models", lambda d: min(m["max_model_len"] for m in d["data"])),
    ):
        try:
            request = urllib.request.Request(
                url, headers={"Authorization": f"Bearer {settings.api_key or ''}"}
            )
            with urllib.request.urlopen(request, timeout=timeout_s) as reply:
                value = int(read(json.load(reply)))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if value > 0:
            return value
    return None


_ASK_SHORTER = (
    "\n\nYour previous reply was too long and was cut off before the JSON "
    "object was complete. Reply with a shorter JSON object: fewer items, short "
    "values, no repetition."
)


class LLMClient:
    """Structured chat calls with retries, a cache and accounting (thread-safe)."""

    def __init__(
        self,
        settings: Settings,
        usage: Usage,
        client=None,
        cache: LLMCache | PostgresLLMCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not settings.chat_model:
            raise ConfigError(
                "the openai engine needs a chat model: set HLTM_CHAT_MODEL (the "
                "deployment name on Azure)"
            )
        self.settings = settings
        self.model = settings.chat_model
        self.usage = usage
        self.client = client or make_openai_client(settings)
        self.cache = cache if cache is not None else open_cache(settings)
        self.sleep = sleep
        self._format = "json_schema"  # downgraded once if the server rejects it
        self._sem = _semaphore(settings.concurrency)

    # -- the one entry point -----------------------------------------------------------------
    def structured(
        self,
        agent: str,
        system: str,
        user: str,
        model_cls: type[T],
        node_id: str | None = None,
        max_tokens: int = 1024,
        validate: Callable[[T], None] | None = None,
        schema: dict | None = None,
    ) -> T:
        """A reply parsed into ``model_cls`` (checked by ``validate`` if given).

        ``schema`` is what the server is asked to follow (default: the model's own schema);
        callers pass inline schemas with enums of the ids the reply may cite.
        """
        schema = schema or model_cls.model_json_schema()
        messages: list[dict[str, str]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        key = cache_key(PROMPT_VERSION, self.model, messages, schema)
        cached = self.cache.get(key)
        if cached is not None:
            try:
                parsed = model_cls.model_validate_json(cached)
                if validate:
                    validate(parsed)
                self.usage.add(cache_hits=1)
                return parsed
            except (ValidationError, ValueError):
                pass  # a stale entry: ask again
        budget = self.settings.max_retries
        last_error = ""
        for attempt in range(budget + 1):
            content, finish = self._complete(messages, schema, model_cls.__name__, max_tokens)
            try:
                parsed = model_cls.model_validate_json(_strip_fences(content))
                if validate:
                    validate(parsed)
            except (ValidationError, ValueError) as exc:
                cut = finish == "length"
                last_error = (
                    f"the reply was cut off at max_tokens={max_tokens} ({_describe(exc)})"
                    if cut
                    else _describe(exc)
                )
                if attempt == budget:
                    break
                self.usage.add(retries=1)
                if cut:
                    # Echoing a reply that ran out of tokens would only lengthen the prompt
                    # and leave less room for the next one: ask again, for less (the note is
                    # added to the original request, so repeated cuts do not pile it up).
                    messages = [
                        {"role": "system", "content": system},
                        {"role": "user", "content": user + _ASK_SHORTER},
                    ]
                else:
                    messages = messages[:2] + [
                        {"role": "assistant", "content": content[:4000]},
                        {
                            "role": "user",
                            "content": f"Your reply was not valid: {last_error}\n"
                            "Reply again with only a JSON object that matches the schema.",
                        },
                    ]
                continue
            self.cache.put(key, node_id, agent, self.model, parsed.model_dump_json())
            return parsed
        raise LLMOutputError(
            f"{agent} for {node_id or 'query'}: no valid JSON from "
            f"{self.model} after {budget + 1} attempts (last error: "
            f"{last_error})"
        )

    # -- transport ---------------------------------------------------------------------------
    def _complete(
        self, messages: list[dict], schema: dict, name: str, max_tokens: int
    ) -> tuple[str, str | None]:
        """The reply's text and its finish reason (``length`` when cut off)."""
        import openai

        attempt = 0
        while True:
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "max_tokens": max_tokens,
                "temperature": 0,
            }
            if self._format == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": False},
                }
            elif self._format == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            try:
                with self._sem:
                    response = self.client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if self._format != "none" and "response_format" in str(exc).lower():
                    self._format = "json_object" if self._format == "json_schema" else "none"
                    continue
                raise
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APITimeoutError,
                openai.APIConnectionError,
            ) as exc:
                if attempt >= self.settings.max_retries:
                    raise LLMUnavailableError(
                        f"{self.settings.base_url or 'OpenAI'} kept failing after "
                        f"{attempt + 1} attempts: {type(exc).__name__}: {_short(str(exc))}"
                    ) from exc
                self.usage.add(retries=1)
                self.sleep(backoff_seconds(attempt, retry_after_seconds(exc)))
                attempt += 1
                continue
            self._account(messages, response)
            choice = response.choices[0]
            return choice.message.content or "", getattr(choice, "finish_reason", None)

    def _account(self, messages: list[dict], response) -> None:
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None) if usage else None
        completion = getattr(usage, "completion_tokens", None) if usage else None
        if prompt is None or completion is None:
            from hltm_resources.tokens import count_tokens, encoding_name

            prompt = sum(count_tokens(m["content"]) for m in messages)
            completion = count_tokens(response.choices[0].message.content or "")
            self.usage.token_encoding = f"{encoding_name()} (counted locally)"
        elif self.usage.token_encoding is None:
            self.usage.token_encoding = "api usage"
        self.usage.add(llm_calls=1, prompt_tokens=int(prompt), completion_tokens=int(completion))


def _describe(exc: Exception) -> str:
    """A validation error without the offending input: error messages end up in Dagster's
    event log, and the input may quote documents (which must be erasable)."""
    if isinstance(exc, ValidationError):
        return _short(
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}"
                for e in exc.errors(include_input=False, include_url=False)
            )
        )
    return _short(str(exc))


def _strip_fences(text: str) -> str:
    """Models without JSON mode often wrap JSON in ```json fences or add prose around it."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text[3:]
        text = text.rsplit("```", 1)[0]
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


def _short(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)
