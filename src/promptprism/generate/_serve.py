"""``python -m promptprism.generate._serve MODEL.gguf --port P``: cyllama's Python server, fixed for chat.

Changes to cyllama 0.2's ``PythonServer`` (see :mod:`promptprism.generate.llm_server`): the slot's KV cache is
cleared before each request; messages are laid out in ChatML, a final assistant message left open (a prefix
the model continues); and a request with ``"logprobs": true`` is answered with OpenAI's
``choices[0].logprobs.content`` (each generated token's log-probability and its ``top_logprobs`` most likely
alternatives, at most 20), read from the context's logits. cyllama 0.2's logits accessors look up
``model.n_vocab``, which its model class lacks: the server loads the model through a subclass that has it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

MAX_TOP_LOGPROBS = 20


def chatml(messages) -> str:
    """The ChatML prompt of a conversation, ending with an open assistant turn (a final assistant message
    stays open: the model continues it)."""
    messages = list(messages)
    prefix = ""
    if messages and messages[-1].role == "assistant":
        prefix = messages.pop().content
    parts = [f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n" + prefix


def top_logprobs(logits, k: int) -> tuple[list[int], list[float]]:
    """The ``k`` most likely token ids and their log-probabilities (log-softmax of ``logits``)."""
    import numpy as np

    z = np.asarray(logits, dtype=np.float64)
    logp = z - np.logaddexp.reduce(z)
    top = np.argsort(-logp, kind="stable")[:k]
    return top.tolist(), logp[top].tolist()


def generate_with_logprobs(slot, prompt: str, *, max_tokens: int, k: int) -> tuple[str, list[dict]]:
    """Generate from ``prompt`` with the slot's sampler; per token its log-probability and the top ``k``."""
    from cyllama.llama.llama_cpp import llama_batch_get_one

    vocab, context = slot.model.get_vocab(), slot.context
    context.kv_cache_clear()
    tokens = vocab.tokenize(prompt, add_special=True, parse_special=True)
    if not tokens or len(tokens) >= context.n_ctx - 1 or context.decode(llama_batch_get_one(tokens, 0)) != 0:
        return "", []
    text, content, n_past = "", [], len(tokens)
    for _ in range(max_tokens):
        ids, logps = top_logprobs(context.get_logits(), max(k, 1))
        token = slot.sampler.sample(context, -1)
        if vocab.is_eog(token):
            break
        piece = vocab.token_to_piece(token, 0, True)
        chosen = logps[ids.index(token)] if token in ids else None
        content.append({"token": piece, "logprob": chosen,
                        "top_logprobs": [{"token": vocab.token_to_piece(i, 0, True), "logprob": lp}
                                         for i, lp in zip(ids[:k], logps[:k], strict=True)]})
        text += piece
        if n_past >= context.n_ctx - 1 or context.decode(llama_batch_get_one([token], n_past)) != 0:
            break
        n_past += 1
    return text, content


def logprobs_handler(base, server):
    """The request handler class of ``server`` answering ``"logprobs": true`` chat requests itself."""

    class Handler(base):
        def _handle_chat_completions(self, data):
            if not data.get("logprobs"):
                return super()._handle_chat_completions(data)
            from cyllama.llama.server.python import ChatMessage

            try:
                k = int(data.get("top_logprobs") or 0)
                if not 0 <= k <= MAX_TOP_LOGPROBS:
                    return self._send_error(400, f"top_logprobs must be 0-{MAX_TOP_LOGPROBS}, got {k}")
                messages = [ChatMessage(role=m["role"], content=m["content"]) for m in data["messages"]]
                slot = server.slots[0]
                with server.generation_lock:
                    slot._build_sampler(temperature=float(data.get("temperature", 0.8)),
                                        min_p=float(data.get("min_p", 0.05)), seed=data.get("seed"))
                    text, content = generate_with_logprobs(slot, chatml(messages),
                                                           max_tokens=int(data.get("max_tokens") or 100), k=k)
            except (KeyError, TypeError, ValueError) as exc:
                return self._send_error(400, f"malformed request: {exc}")
            self._send_json_response({
                "object": "chat.completion", "model": data.get("model", server.config.model_alias),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": {"content": content}, "finish_reason": "stop"}],
                "usage": {"completion_tokens": len(content)}})

    return Handler


def patch_server(srv, threads: int | None = None) -> None:
    """Apply the fixes above to cyllama's server module ``srv``; ``threads``: each slot's context runs the
    model on that many CPU threads from its creation (llama.cpp's default is 4, whatever the machine)."""
    from cyllama.llama.llama_cpp import LlamaModel

    class VocabModel(LlamaModel):
        @property
        def n_vocab(self) -> int:
            return self.get_vocab().n_vocab

    original = srv.ServerSlot.process_and_generate

    def fresh_generate(self, prompt, max_tokens=100, request=None):
        self.context.kv_cache_clear()
        return original(self, prompt, max_tokens, request=request)

    create = srv.PythonServer._create_request_handler

    def create_handler(self):
        if not hasattr(self, "generation_lock"):
            self.generation_lock = threading.Lock()
        return logprobs_handler(create(self), self)

    if threads is not None:
        make_slot = srv.ServerSlot.__init__

        def threaded_slot(self, *args, **kwargs):
            make_slot(self, *args, **kwargs)
            self.context.set_n_threads(threads, threads)

        srv.ServerSlot.__init__ = threaded_slot
    srv.LlamaModel = VocabModel
    srv.ServerSlot.process_and_generate = fresh_generate
    srv.PythonServer._messages_to_prompt = lambda self, messages: chatml(messages)
    srv.PythonServer._create_request_handler = create_handler


def _positive(text: str) -> int:
    """A whole number >= 1 (argparse's type for --threads)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, start the server and block until SIGTERM/SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m promptprism.generate._serve")
    ap.add_argument("model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--ctx-size", type=int, default=2048)
    ap.add_argument("--threads", type=_positive, default=None,
                    help="CPU threads of the model (default: the thread budget, scale.threads)")
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the starting process dies")
    args = ap.parse_args(argv)
    from cyllama.llama.server import python as srv

    from ..scale.threads import budget_threads

    patch_server(srv, threads=args.threads or budget_threads())  # (before the server answers anything)
    config = srv.ServerConfig(model_path=args.model, host=args.host, port=args.port, n_ctx=args.ctx_size,
                              n_gpu_layers=0)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    parent = os.getppid()

    def orphan_watch() -> None:  # the parent was killed without stopping us: stop too
        while not stop.wait(1.0):
            if os.getppid() != parent:
                stop.set()

    if args.exit_with_parent:
        threading.Thread(target=orphan_watch, daemon=True).start()
    with srv.PythonServer(config):
        print(f"serving {args.model} on http://{args.host}:{args.port}/v1", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
