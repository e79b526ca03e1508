"""ChatOpenAI whose every call goes through turngate.jobs.model_calls (adaptive concurrency, retries,
counts). The openai client's own retries are off (max_retries=0) so each retry is ours and
counted; streaming is off so every call takes the one path that is limited and retried."""
from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr

from turngate.jobs.model_calls import call_with_retries, call_with_retries_sync


def _seen(result: ChatResult) -> tuple[dict[str, str], int]:
    """The response headers ChatOpenAI attached (removed, so they never reach a message, a
    Turn or the on-disk cache) and the tokens the call used."""
    headers: dict[str, str] = {}
    for generation in result.generations:
        info = generation.generation_info or {}
        headers = info.pop("headers", None) or headers
    usage = (result.llm_output or {}).get("token_usage") or {}
    return headers, int(usage.get("total_tokens") or 0)


class ProviderChatModel(ChatOpenAI):
    _call_key: str = PrivateAttr(default="")
    _retries: int = PrivateAttr(default=0)
    _budgeted: bool = PrivateAttr(default=True)  # counts against --max-model-calls (the agent's calls)

    @classmethod
    def build(cls, call_key: str, *, retries: int, temperature: float | None, budgeted: bool = True,
              **kwargs: Any) -> ProviderChatModel:
        model = cls(max_retries=0, include_response_headers=True, disable_streaming=True,
                    **({"temperature": temperature} if temperature is not None else {}), **kwargs)
        model._call_key, model._retries, model._budgeted = call_key, retries, budgeted
        return model

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        parent = super()._agenerate
        return await call_with_retries(self._call_key, lambda: parent(messages, stop, run_manager, **kwargs),
                                       max_retries=self._retries, on_success=_seen, budgeted=self._budgeted)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        parent = super()._generate
        return call_with_retries_sync(self._call_key, lambda: parent(messages, stop, run_manager, **kwargs),
                                      max_retries=self._retries, on_success=_seen, budgeted=self._budgeted)
