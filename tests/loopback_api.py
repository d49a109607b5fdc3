"""A loopback stand-in for the OpenAI and Anthropic APIs (127.0.0.1 only), for end-to-end tests.

Every request body is kept (``LoopbackAPI.bodies``), so a test can search what left the
process. Answers are short fixed texts in each API's response shape.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackAPI:
    """``with LoopbackAPI() as api:`` serves on ``api.port`` until the block ends."""

    def __init__(self, answer: str = "A short public answer about the topic."):
        self.answer = answer
        self.bodies: list[str] = []
        self.lock = threading.Lock()

    def __enter__(self) -> "LoopbackAPI":
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0))).decode("utf-8", "replace")
                with api.lock:
                    api.bodies.append(raw)
                request = json.loads(raw)
                if self.path.endswith("/chat/completions"):
                    body = {"id": "c", "object": "chat.completion", "created": 0, "model": request["model"],
                            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                         "message": {"role": "assistant", "content": api.answer}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                else:
                    body = {"id": "m", "type": "message", "role": "assistant", "model": request["model"],
                            "content": [{"type": "text", "text": api.answer}], "stop_reason": "end_turn",
                            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def environment(self) -> dict[str, str]:
        """The SDKs' standard variables pointing both clients at this server."""
        return {"OPENAI_BASE_URL": f"http://127.0.0.1:{self.port}/v1", "OPENAI_API_KEY": "sk-loopback-key-0000",
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}", "ANTHROPIC_API_KEY": "sk-loopback-key-1111",
                "NO_PROXY": "127.0.0.1,localhost"}

    def search(self, needles) -> list[str]:
        """The needles found in any request body."""
        with self.lock:
            blob = "\n".join(self.bodies)
        return [n for n in needles if n in blob]
