"""``python -m promptprism.generate._serve MODEL.gguf --port P``: cyllama's Python server, fixed for chat.

Two changes to cyllama 0.2's ``PythonServer`` (see :mod:`promptprism.generate.llm_server`): the slot's KV
cache is cleared before each request, and messages are laid out in ChatML.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def chatml(messages) -> str:
    """The ChatML prompt of a conversation, ending with an open assistant turn."""
    parts = [f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n"


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, start the server and block until SIGTERM/SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m promptprism.generate._serve")
    ap.add_argument("model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--ctx-size", type=int, default=2048)
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the starting process dies")
    args = ap.parse_args(argv)
    from cyllama.llama.server import python as srv

    original = srv.ServerSlot.process_and_generate

    def fresh_generate(self, prompt, max_tokens=100, request=None):
        self.context.kv_cache_clear()
        return original(self, prompt, max_tokens, request=request)

    srv.ServerSlot.process_and_generate = fresh_generate
    srv.PythonServer._messages_to_prompt = lambda self, messages: chatml(messages)
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
