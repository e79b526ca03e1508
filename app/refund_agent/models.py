"""The model layer the agent uses: turngate.jobs.models (a spec string -> a LangChain chat model),
with Northwind's deterministic offline model (app/refund_agent/offline) registered as `offline`."""
from __future__ import annotations

from turngate.jobs.models import (  # noqa: F401  (the agent's model layer is the library's)
    DEFAULT_MAX_RETRIES,
    ORQ_ROUTER,
    ModelSpec,
    _seconds,
    make_model,
    parse_spec,
    register_offline_model,
)


def _offline(**kwargs):
    from .offline import OfflineChatModel  # imported when first used: start-up stays fast

    return OfflineChatModel(**kwargs)


register_offline_model(_offline)
