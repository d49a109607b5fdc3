"""The OpenAI and Anthropic backends against a real HTTP server on 127.0.0.1.

The official clients are used unmodified (``base_url`` points at the server);
the server answers with each API's request/response shapes and can be scripted
to return 429/5xx/529/400, to stall past the client's timeout, to send a body that
is not JSON, a 200 reply holding an error object, or ``content: null``. Retries
are the clients' own (``max_retries``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dpkit.backends import (AnthropicBackend, BackendError, OpenAIBackend, PrivateTextError, ResponseCache,
                            get_backend)
from dpkit.privacy import Laplace, PrivacyLedger
from dpkit.privacy.marks import Public, compose_prompt, release_text
from dpkit.validate import ParameterError

FAKE_KEY = "sk-test-0123456789abcdef-SECRET"


class FakeAPI:
    """State shared by the handler threads: a script of failures and a log of requests."""

    def __init__(self):
        # consumed one per request: ("status", code, retry_after) | ("stall", s) | ("malformed",)
        # | ("error200",) | ("null",)
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay = 0.0
        self.hold = 0          # >0: each request waits (up to 1 s) until this many are in flight

    def next_action(self):
        with self.lock:
            return self.script.pop(0) if self.script else None


def _openai_body(request: dict) -> dict:
    last = request["messages"][-1]["content"]
    text = f"openai:{request['model']}:{last}:seed={request.get('seed')}"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}


def _anthropic_body(request: dict) -> dict:
    last = request["messages"][-1]["content"]
    text = f"anthropic:{request['model']}:{last}:system={request.get('system')}"
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": request["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 3}}


def _error_body(path: str, code: int) -> dict:
    kind = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}.get(code, "api_error")
    if path.endswith("/messages"):
        return {"type": "error", "error": {"type": kind, "message": f"scripted {code}"}}
    return {"error": {"message": f"scripted {code}", "type": kind, "code": None, "param": None}}


def make_handler(api: FakeAPI):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, code: int, body: dict, headers: dict | None = None):
            return self._send_raw(code, json.dumps(body).encode(), headers)

        def _leave(self):
            """Count this request out once, BEFORE its answer is written: the client may send its next
            request as soon as it reads the answer, and must not find this one still counted."""
            if getattr(self, "_counted", False):
                self._counted = False
                with api.lock:
                    api.in_flight -= 1

        def _send_raw(self, code: int, data: bytes, headers: dict | None = None):
            self._leave()
            try:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def do_POST(self):
            length = int(self.headers.get("content-length", 0))
            request = json.loads(self.rfile.read(length))
            with api.lock:
                api.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "json": request})
                api.in_flight += 1
                api.max_in_flight = max(api.max_in_flight, api.in_flight)
                self._counted = True
            try:
                action = api.next_action()
                deadline = time.monotonic() + 1.0
                while api.hold and api.in_flight < api.hold and time.monotonic() < deadline:
                    time.sleep(0.005)
                if api.delay:
                    time.sleep(api.delay)
                if action and action[0] == "stall":
                    time.sleep(action[1])
                elif action and action[0] == "status":
                    headers = {"retry-after": str(action[2])} if action[2] is not None else {}
                    return self._send(action[1], _error_body(self.path, action[1]), headers)
                elif action and action[0] == "malformed":
                    return self._send_raw(200, b'{"id": "x", "choices": [')
                elif action and action[0] == "error200":
                    return self._send(200, _error_body(self.path, 500))
                elif action and action[0] == "null":
                    body = (_openai_body(request) if self.path.endswith("/chat/completions")
                            else _anthropic_body(request))
                    if "choices" in body:
                        body["choices"][0]["message"]["content"] = None
                    else:
                        body["content"] = []
                    return self._send(200, body)
                if self.path.endswith("/chat/completions"):
                    return self._send(200, _openai_body(request))
                if self.path.endswith("/messages"):
                    return self._send(200, _anthropic_body(request))
                return self._send(404, {"error": {"message": "no such route"}})
            finally:
                self._leave()

    return Handler


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    state = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.port = server.server_address[1]
    yield state
    server.shutdown()
    server.server_close()


def openai_backend(api, **kw):
    kw.setdefault("max_retries", 3)
    kw.setdefault("cache", None)
    return OpenAIBackend("gpt-test", base_url=f"http://127.0.0.1:{api.port}/v1", **kw)


def anthropic_backend(api, **kw):
    kw.setdefault("max_retries", 3)
    kw.setdefault("cache", None)
    return AnthropicBackend("claude-test", base_url=f"http://127.0.0.1:{api.port}", **kw)


def test_openai_request_and_response_shapes(api):
    backend = openai_backend(api)
    text = backend.generate(Public("hello"), max_new_tokens=7, temperature=0.0, seed=3,
                            system=Public("be brief"))
    assert text == "openai:gpt-test:hello:seed=3"
    (request,) = api.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    body = request["json"]
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    assert body["max_completion_tokens"] == 7 and body["temperature"] == 0.0 and body["seed"] == 3


def test_anthropic_request_and_response_shapes(api):
    backend = anthropic_backend(api)
    chat = [{"role": "system", "content": Public("sys")}, {"role": "user", "content": Public("hi")}]
    assert backend.generate(chat, max_new_tokens=5) == "anthropic:claude-test:hi:system=sys"
    (request,) = api.requests
    assert request["path"] == "/v1/messages"
    headers = request["headers"]
    assert headers.get("x-api-key") == FAKE_KEY or headers.get("authorization") == f"Bearer {FAKE_KEY}"
    body = request["json"]
    assert body["max_tokens"] == 5 and body["system"] == "sys"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert backend.usage == {"input_tokens": 3, "output_tokens": 3}


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend])
def test_rate_limit_then_success_waits_at_least_retry_after(api, make):
    backend = make(api)
    api.script = [("status", 429, 1)]
    start = time.monotonic()
    assert ":x:" in backend.generate(Public("x"))
    assert time.monotonic() - start >= 1.0       # Retry-After honoured by the client's own retry
    assert backend.attempts == 2 and len(api.requests) == 2


@pytest.mark.parametrize("make,code", [(openai_backend, 500), (openai_backend, 503), (anthropic_backend, 529),
                                       (anthropic_backend, 502)])
def test_server_errors_are_retried(api, make, code):
    backend = make(api)
    api.script = [("status", code, 0)]
    assert backend.generate(Public("y"))
    assert len(api.requests) == 2 and backend.attempts == 2


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend])
def test_rate_limits_exhaust_the_retries_with_a_clear_error(api, make):
    backend = make(api, max_retries=1)
    api.script = [("status", 429, 0), ("status", 429, 0)]
    with pytest.raises(BackendError, match="after 2 attempts.*RateLimitError \\(HTTP 429\\)"):
        backend.generate(Public("x"))
    assert len(api.requests) == 2


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend])
@pytest.mark.parametrize("fault", ["malformed", "error200", "null"])
def test_replies_without_text_are_errors_and_never_cached(api, make, fault, tmp_path):
    cache = ResponseCache(tmp_path)
    backend = make(api, cache=cache)
    api.script = [(fault,)]
    with pytest.raises(BackendError) as info:
        backend.generate(Public("q"))
    assert len(cache) == 0 and backend.requests == 0
    if fault != "malformed":
        assert "returned no text" in str(info.value)
    assert backend.generate(Public("q"))          # the next answer is a real one, and it is cached
    assert len(cache) == 1


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend])
def test_timeout_then_success(api, make):
    backend = make(api, timeout=0.3)
    backend.client                               # build the client (imports) before timing
    api.script = [("stall", 2.5)]
    start = time.monotonic()
    assert "z" in backend.generate(Public("z"))
    assert backend.attempts == 2
    assert time.monotonic() - start < 2.0        # the stalled request was abandoned at the timeout


@pytest.mark.parametrize("make", [openai_backend, anthropic_backend])
def test_timeouts_exhaust_retries_with_a_clear_error(api, make):
    backend = make(api, timeout=0.2, max_retries=1)
    api.script = [("stall", 0.6), ("stall", 0.6)]
    with pytest.raises(BackendError, match="after 2 attempts.*Timeout"):
        backend.generate(Public("slow"))


def test_non_retryable_error_fails_at_once_without_leaking_the_key(api):
    backend = openai_backend(api)
    api.script = [("status", 400, None)]
    with pytest.raises(BackendError, match="non-retryable.*HTTP 400") as info:
        backend.generate(Public("bad"))
    assert len(api.requests) == 1
    assert FAKE_KEY not in str(info.value) and FAKE_KEY not in repr(backend)
    assert FAKE_KEY not in json.dumps(backend.describe())


def test_concurrency_limit_and_order(api):
    api.hold, api.delay = 2, 0.05          # requests wait for a partner: overlap is certain
    backend = openai_backend(api, concurrency=2)
    prompts = [Public(f"p{i}") for i in range(6)]
    out = backend.generate_batch(prompts)
    assert out == [f"openai:gpt-test:p{i}:seed=0" for i in range(6)]
    assert api.max_in_flight == 2
    api.max_in_flight = 0
    threads = [threading.Thread(target=backend.generate_batch, args=([Public(f"t{j}{i}") for i in range(3)],))
               for j in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert api.max_in_flight == 2                 # the limit holds across threads too


def test_cache_makes_a_rerun_free_and_stores_no_prompt_or_key(api, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    first = openai_backend(api, cache=cache)
    prompts = [Public("a"), Public("b")]
    texts = first.generate_batch(prompts, seed=1)
    assert len(api.requests) == 2
    again = openai_backend(api, cache=cache)
    assert again.generate_batch(prompts, seed=1) == texts
    assert len(api.requests) == 2 and again.requests == 0        # served from disk
    assert first.describe()["billed_tokens"] == {"input_tokens": 6, "output_tokens": 6}
    assert again.describe()["billed_tokens"] == {"input_tokens": 0, "output_tokens": 0}
    again.generate_batch(prompts, seed=2)                         # other parameters: new requests
    assert len(api.requests) == 4
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert FAKE_KEY not in stored and '"a"' not in stored


def test_guard_refuses_plain_text_before_any_request(api):
    backend = openai_backend(api)
    with pytest.raises(PrivateTextError, match="str without a valid mark of 14 characters"):
        backend.generate_batch([Public("fine"), "patient record"])
    with pytest.raises(PrivateTextError):
        backend.generate(Public("x"), system="plain system text")
    with pytest.raises(PrivateTextError):
        backend.generate(Public("a") + " and more")            # concatenation drops the mark
    assert api.requests == []


def test_privatized_provenance_reaches_the_description(api):
    backend = anthropic_backend(api)
    entry = PrivacyLedger().spend(Laplace(1.0, epsilon=1.0).contract, "keyphrases")
    seeds = release_text("fever; cough", entry, source="dpkps.keyphrases", note="eps=1")
    prompt = compose_prompt(Public("Write a note about: {k}"), k=seeds)
    backend.generate(prompt)
    backend.generate(Public("public only"))
    described = backend.describe()
    (sent,) = described["prompts_with_privatized_text"]
    assert (sent["source"], sent["note"], sent["prompts"]) == ("dpkps.keyphrases", "eps=1", 1)
    assert sent["contract"]["epsilon"] == 1.0 and sent["ledger_entry"]["label"] == "keyphrases"
    assert described["prompts_public_only"] == 1 and described["prompts_unmarked"] == 0
    assert api.requests[0]["json"]["messages"][0]["content"] == "Write a note about: fever; cough"


def test_missing_key_and_key_argument_are_refused(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = get_backend("openai", cache=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        backend.generate(Public("x"))
    with pytest.raises(ParameterError, match="environment variable ANTHROPIC_API_KEY") as info:
        get_backend("anthropic", api_key="sk-should-not-be-echoed")
    assert "sk-should-not-be-echoed" not in str(info.value)


def test_a_batch_failing_half_way_keeps_and_caches_the_answers_it_got(api, tmp_path):
    cache = ResponseCache(tmp_path)
    backend = openai_backend(api, cache=cache, concurrency=1, max_retries=0)
    api.script = [None, ("status", 400, None)]           # first prompt answered, second rejected
    prompts = [Public("ok"), Public("bad"), Public("later")]
    with pytest.raises(BackendError):
        backend.generate_batch(prompts)
    assert len(cache) == 1 and backend.requests == 1
    assert backend.generate_batch(prompts)[0] == "openai:gpt-test:ok:seed=0"
    assert [r["json"]["messages"][0]["content"] for r in api.requests] == ["ok", "bad", "bad", "later"]


@pytest.mark.parametrize("cls,variable,path", [(OpenAIBackend, "OPENAI_BASE_URL", "/v1"),
                                               (AnthropicBackend, "ANTHROPIC_BASE_URL", "")])
def test_base_url_from_the_environment_is_used_and_recorded_without_credentials(api, monkeypatch, tmp_path,
                                                                                cls, variable, path):
    monkeypatch.setenv(variable, f"http://user:hunter2-PASSWORD@127.0.0.1:{api.port}{path}")
    backend = cls("model-env", cache=None)
    assert ":model-env:q" in backend.generate(Public("q"))            # the client used the variable
    assert backend.describe()["base_url"] == f"http://127.0.0.1:{api.port}{path}"
    monkeypatch.setenv(variable, f"http://user:hunter2-PASSWORD@127.0.0.1:{api.port}{path}?api-key=QUERY-SECRET")
    from dpkit.runs import Run
    run = Run(tmp_path / "run", params={})
    run.finish(backend=backend)
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert "hunter2" not in written and "QUERY-SECRET" not in written and FAKE_KEY not in written
    assert "hunter2" not in repr(backend) and "QUERY-SECRET" not in json.dumps(backend.describe())


def test_options_are_validated_without_overflow():
    for bad in (dict(timeout=1e300), dict(timeout=float("nan")), dict(max_retries=10 ** 400),
                dict(concurrency=0), dict(cache=False), dict(retry_seed=0)):
        with pytest.raises(ParameterError):
            OpenAIBackend("m", **bad)
