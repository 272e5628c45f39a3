"""The chat client moved to :mod:`promptprism.llm`; this module keeps the old import path working."""

from __future__ import annotations

from ...llm.client import MAX_RETRIES, MAX_TIMEOUT, RETRY_STATUS, ChatClient, check_base_url, request_key
from ...llm.conversation import ChatModel, MalformedAnswerError, ask, png_data_url, user_message
from ...llm.transport import EndpointError

__all__ = ["MAX_RETRIES", "MAX_TIMEOUT", "RETRY_STATUS", "ChatClient", "ChatModel", "EndpointError",
           "MalformedAnswerError", "ask", "check_base_url", "png_data_url", "request_key", "user_message"]
