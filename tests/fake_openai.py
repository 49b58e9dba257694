"""A scripted OpenAI-compatible HTTP server of the tests' own (for fault injection).

It answers ``/v1/chat/completions`` with JSON that fits the schema the client sends (ids come
from the schema's enums), after playing a script of faults: ``"429"`` (with Retry-After),
``"500"``, ``"bad_json"``, ``"cut"`` (a reply that ran out of tokens: half a JSON object,
``finish_reason: "length"``). A ``poison`` substring makes every request whose prompt contains it
get invalid JSON forever.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _valid_reply(name: str, schema: dict) -> dict:
    props = schema.get("properties", {})
    if name == "FacetsOut":
        return {
            "facets": [
                {"key": "title", "value": "Data Engineer"},
                {"key": "location", "value": "Dublin, Ireland"},
                {"key": "skills", "value": "Python; SQL"},
            ]
        }
    if name == "QAOut":
        source = props["question_answers"]["items"]["properties"]["source"].get("enum", ["d"])
        return {
            "rationale": "r",
            "question_answers": [
                {
                    "question": "What role is the project hiring for?",
                    "answer": "Data Engineer",
                    "source": source[0],
                }
            ],
        }
    if name == "SummaryOut":
        return {"summary": "A Data Engineer search in Dublin, Ireland."}
    if name == "AggOut":
        kids = props["facets"]["items"]["properties"]["children"]["items"].get("enum", [])
        return {
            "facets": [{"key": "title", "value": "Data Engineer", "support": 1, "children": kids}],
            "question_answers": [
                {
                    "question": "What roles are hired most often?",
                    "answer": "Data Engineer",
                    "children": kids,
                }
            ],
            "detailed_summary": "Mostly Data Engineer searches.",
            "summary": "Mostly Data Engineer searches.",
        }
    if name == "ParseOut":
        keys = props["facets"]["items"]["properties"]["key"].get("enum", [])
        return {"kind": "summary", "facets": [{"key": keys[0], "value": None}] if keys else []}
    if name == "AnswerOut":
        ids = props["citation"]["items"].get("enum", [])
        return {"rationale": "r", "answer": "Data Engineer roles.", "citation": ids[:1]}
    if name == "JudgeOut":
        return {"rationale": "r", "score": 1.0}
    return {}


class Script:
    def __init__(
        self, faults: list[str] | None = None, poison: str | None = None, usage: bool = True
    ):
        self.faults = list(faults or [])
        self.poison = poison
        self.usage = usage
        self.requests: list[dict] = []
        self.lock = threading.Lock()


@contextmanager
def fake_openai(script: Script) -> Iterator[str]:
    """Serve on 127.0.0.1 (a free port); yields the base URL ``http://127.0.0.1:PORT/v1``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 - http.server API
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length) or b"{}")
            with script.lock:
                script.requests.append(request)
                fault = script.faults.pop(0) if script.faults else "ok"
            prompt = json.dumps(request.get("messages", []))
            if script.poison and script.poison in prompt:
                fault = "bad_json"
            if fault == "429":
                return self._send(
                    429, {"error": {"message": "slow down", "type": "rate"}}, {"Retry-After": "0.2"}
                )
            if fault == "500":
                return self._send(500, {"error": {"message": "boom", "type": "server"}})
            fmt = request.get("response_format") or {}
            spec = fmt.get("json_schema") or {}
            finish = "stop"
            if fault == "bad_json":
                content = "Sure! here is the answer: {not json"
            else:
                content = json.dumps(_valid_reply(spec.get("name", ""), spec.get("schema", {})))
            if fault == "cut":
                content, finish = content[: len(content) // 2], "length"
            body = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": request.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": {"role": "assistant", "content": content},
                    }
                ],
            }
            if script.usage:
                body["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
            return self._send(200, body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
