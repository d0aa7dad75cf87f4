"""A scripted chat model for the adapters' tests: it answers from a list, never calls a model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool


class ScriptedModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools: each turn is the next scripted message."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def script(*turns: AIMessage | str) -> ScriptedModel:
    return ScriptedModel(messages=iter(turns))


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    """A model turn asking for one tool call."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def last_tool_message(messages: Sequence[BaseMessage]) -> BaseMessage:
    return [m for m in messages if m.type == "tool"][-1]
