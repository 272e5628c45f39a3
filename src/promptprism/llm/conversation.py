"""What a pipeline says to a chat model and how it reads the answers: the :class:`ChatModel` protocol, user
turns with images (PNG data URLs in ``image_url`` parts) and :func:`ask`, which re-asks on an answer the
parser cannot read."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..errors import InputError, PromptPrismError

T = TypeVar("T")


class MalformedAnswerError(PromptPrismError):
    """A model kept answering in a format the parser cannot read (after the allowed re-asks)."""

    def __init__(self, message: str, answers: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.answers = list(answers)


class ChatModel(Protocol):
    """What the pipeline needs from a chat model: messages in, text out."""

    model: str

    def chat(self, messages: list[dict]) -> str:
        """The model's reply text to a list of chat messages."""


def png_data_url(image: Any) -> str:
    """A PIL image, an image array or a file (:func:`~promptprism.data.imageio.to_rgb`'s rules) as
    ``data:image/png;base64,...``."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        raise InputError("images in chat messages need Pillow: pip install pillow") from None
    from ..data.imageio import to_rgb

    buf = io.BytesIO()
    to_rgb(image).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def user_message(text: str, images: Sequence[Any] = ()) -> dict:
    """A user turn: plain text, or text followed by images as ``image_url`` parts."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": png_data_url(im)}} for im in images]
    return {"role": "user", "content": parts}


def ask(
    client: ChatModel, messages: list[dict], parse: Callable[[str], T], *, what: str, reasks: int = 2
) -> tuple[T, list[dict], list[str]]:
    """Ask, parse; on a malformed answer re-ask (the bad answer and the parser's complaint are appended to the
    conversation, so the retry is a new request and never a cache hit), at most ``reasks`` times.

    Returns (parsed value, conversation including the accepted answer, all raw answers). Raises
    :class:`MalformedAnswerError` naming ``what`` and the last problem when every answer is malformed.
    """
    convo = list(messages)
    answers: list[str] = []
    problem = ""
    for _ in range(reasks + 1):
        text = client.chat(convo)
        answers.append(text)
        try:
            value = parse(text)
        except ValueError as exc:
            problem = str(exc)
            convo = convo + [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"Your answer could not be read: {problem}. "
                    "Please answer again, exactly in the requested format.",
                },
            ]
            continue
        return value, convo + [{"role": "assistant", "content": text}], answers
    raise MalformedAnswerError(
        f"{what}: {getattr(client, 'model', 'the model')} answered in an unreadable format "
        f"{len(answers)} time{'s' if len(answers) > 1 else ''} ({problem}); last answer began "
        f"{answers[-1][:120]!r}",
        answers,
    )
