"""The chat-model client every LLM and VLM step shares: an OpenAI-compatible ``/chat/completions`` client
over httpx with a whole-request deadline, seeded retries and an on-disk response cache (:mod:`.client`,
:mod:`.transport`), and what a pipeline says to a model (:mod:`.conversation`).

Infrastructure below the methods: it imports only the foundation (errors, io), so CompCon, naming,
``generate`` and the command line share one client without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    ".client": ("MAX_RETRIES", "MAX_TIMEOUT", "ChatClient", "check_base_url", "request_key"),
    ".conversation": ("ChatModel", "MalformedAnswerError", "ask", "png_data_url", "user_message"),
    ".transport": ("EndpointError",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .client import MAX_RETRIES, MAX_TIMEOUT, ChatClient, check_base_url, request_key
    from .conversation import ChatModel, MalformedAnswerError, ask, png_data_url, user_message
    from .transport import EndpointError

__all__ = ["MAX_RETRIES", "MAX_TIMEOUT", "ChatClient", "ChatModel", "EndpointError", "MalformedAnswerError",
           "ask", "check_base_url", "png_data_url", "request_key", "user_message"]
