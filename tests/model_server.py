#!/usr/bin/env python3
"""A loopback model server for tests: speaks the OpenAI Responses API
(/v1/responses) and Chat Completions (/v1/chat/completions) on 127.0.0.1,
streaming (server-sent events) or not, and replays scripted replies,
faults included.  Python 3 standard library only.

    model_server.py [--port N] [--port-file F] [--script FILE] [--log FILE] [--key KEY]

It prints "listening PORT" on stdout (and writes PORT to --port-file).
Replies are served in order from a queue: --script FILE (a JSON array, or
one JSON object per line) and POST /_queue (a JSON array, appended).  GET (or POST)
/_log returns every model request received ({path, headers, body, conn}:
conn numbers the TCP connection, to see keep-alive at work); POST /_reset
empties queue and log.  --log FILE also appends each request as a JSON line.
With --key, a request whose Authorization is not "Bearer KEY" gets 401 with
a message that quotes the key it got (clients must redact it).

A reply is an object with "kind" (and "repeat": N to serve it N times, -1
forever; "delay": X to wait X seconds before answering):
  action      {"action": {"type": ..., fields}}: the action as one function
              call (when the request has tools) or as structured output
              {"action": ...}; "reasoning": true puts a reasoning item first
              (a string: with that summary text);
              "text": also a message with that text (tools mode)
  text        {"text": S}: a message with output text only
  raw         {"name": N, "arguments": S} a function call with these raw
              arguments, or, in structured mode, S as the output text
  two-calls   {"actions": [A, B]}: two function calls (or two messages)
  refusal     {"refusal": S}
  incomplete  {"reason": "max_output_tokens"} (chat: finish_reason length)
  failed      {"message": S, "code": C} (chat: an "error" member)
  error-event {"message": S} an "error" event in a stream (plain: as failed)
  status      {"status": 429, "headers": {...}, "message": S}: an HTTP error
  stall       {"seconds": X}: wait, then close without answering
  truncate    a 200 whose body stops before its Content-Length, then close
  cut         streaming: events, then half an event, then close without
              ending the chunked body (plain: as truncate)
  end-early   streaming: events, then a clean end without the terminal one
  invalid-json  a 200 whose body (or a stream event's data) is not JSON
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
QUEUE = []
LOG = []
COUNTER = [0]
CONNS = [0]
ARGS = None


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return "%s_%d" % (prefix, COUNTER[0])


def pop_reply():
    with LOCK:
        if not QUEUE:
            return None
        r = QUEUE[0]
        rep = r.get("repeat", 1)
        if rep == 1:
            QUEUE.pop(0)
        elif rep > 1:
            r["repeat"] = rep - 1
        return r


def usage_responses(r):
    u = {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 20},
         "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 8},
         "total_tokens": 150}
    u.update(r.get("usage", {}))
    return u


def usage_chat(r):
    u = {"prompt_tokens": 120, "prompt_tokens_details": {"cached_tokens": 20},
         "completion_tokens": 30, "completion_tokens_details": {"reasoning_tokens": 8},
         "total_tokens": 150}
    u.update(r.get("usage_chat", {}))
    return u


def args_of(action):
    return json.dumps({k: v for k, v in action.items() if k != "type"})


# ------------------------------------------------------------ Responses

def output_items(reply, tools):
    """The output items of a reply, and (status, incomplete, error)."""
    kind = reply["kind"]
    items = []
    if reply.get("reasoning"):
        summary = reply["reasoning"]
        items.append({"type": "reasoning", "id": next_id("rs"),
                      "summary": [{"type": "summary_text", "text": summary}] if isinstance(summary, str) else []})

    def message(text, part_type="output_text"):
        part = ({"type": "output_text", "text": text, "annotations": []}
                if part_type == "output_text" else {"type": "refusal", "refusal": text})
        return {"type": "message", "id": next_id("msg"), "role": "assistant",
                "status": "completed", "content": [part]}

    def call(name, arguments):
        return {"type": "function_call", "id": next_id("fc"), "call_id": next_id("call"),
                "name": name, "arguments": arguments, "status": "completed"}

    if kind == "action":
        a = reply["action"]
        if reply.get("text"):
            items.append(message(reply["text"]))
        if tools:
            items.append(call(a.get("type", "?"), args_of(a)))
        else:
            items.append(message(json.dumps({"action": a})))
    elif kind == "text":
        items.append(message(reply["text"]))
    elif kind == "raw":
        if tools:
            items.append(call(reply.get("name", "evaluate"), reply["arguments"]))
        else:
            items.append(message(reply["arguments"]))
    elif kind == "two-calls":
        for a in reply["actions"]:
            if tools:
                items.append(call(a["type"], args_of(a)))
            else:
                items.append(message(json.dumps({"action": a})))
    elif kind == "refusal":
        items.append(message(reply["refusal"], "refusal"))
    elif kind == "incomplete":
        return items, "incomplete", {"reason": reply.get("reason", "max_output_tokens")}, None
    elif kind in ("failed", "error-event"):
        return items, "failed", None, {"code": reply.get("code", "server_error"),
                                       "message": reply.get("message", "the model failed")}
    return items, "completed", None, None


def response_object(reply, body, items, status, incomplete, error):
    return {"id": next_id("resp"), "object": "response", "created_at": int(time.time()),
            "status": status, "error": error, "incomplete_details": incomplete,
            "model": body.get("model", "?"), "output": items, "parallel_tool_calls": False,
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []),
            "usage": usage_responses(reply) if status != "failed" else None}


def responses_events(reply, body, tools):
    """The (event, data) pairs of a streamed Responses reply."""
    items, status, incomplete, error = output_items(reply, tools)
    final = response_object(reply, body, items, status, incomplete, error)
    start = dict(final, status="in_progress", output=[], usage=None, error=None, incomplete_details=None)
    seq = [0]
    out = []

    def ev(t, **kw):
        d = {"type": t, "sequence_number": seq[0]}
        d.update(kw)
        seq[0] += 1
        out.append((t, d))

    ev("response.created", response=start)
    ev("response.in_progress", response=start)
    if reply["kind"] == "error-event":
        ev("error", code=reply.get("code", "server_error"), message=reply.get("message", "stream error"),
           param=None)
        return out
    for i, it in enumerate(items):
        added = dict(it)
        if it["type"] == "function_call":
            added["arguments"] = ""
        if it["type"] == "message":
            added["content"] = []
        ev("response.output_item.added", output_index=i, item=added)
        if it["type"] == "message":
            for j, part in enumerate(it["content"]):
                ev("response.content_part.added", item_id=it["id"], output_index=i, content_index=j,
                   part=dict(part, text="") if part["type"] == "output_text" else dict(part, refusal=""))
                if part["type"] == "output_text":
                    t = part["text"]
                    for k in range(0, len(t), 7):
                        ev("response.output_text.delta", item_id=it["id"], output_index=i,
                           content_index=j, delta=t[k:k + 7])
                    ev("response.output_text.done", item_id=it["id"], output_index=i,
                       content_index=j, text=t)
                else:
                    ev("response.refusal.delta", item_id=it["id"], output_index=i, content_index=j,
                       delta=part["refusal"])
                    ev("response.refusal.done", item_id=it["id"], output_index=i, content_index=j,
                       refusal=part["refusal"])
                ev("response.content_part.done", item_id=it["id"], output_index=i, content_index=j,
                   part=part)
        elif it["type"] == "function_call":
            a = it["arguments"]
            for k in range(0, len(a), 9):
                ev("response.function_call_arguments.delta", item_id=it["id"], output_index=i,
                   delta=a[k:k + 9])
            ev("response.function_call_arguments.done", item_id=it["id"], output_index=i, arguments=a)
        ev("response.output_item.done", output_index=i, item=it)
    term = {"completed": "response.completed", "incomplete": "response.incomplete",
            "failed": "response.failed"}[status]
    ev(term, response=final)
    return out


# ------------------------------------------------------------------ Chat

def chat_message(reply, tools):
    """(message, finish_reason, error) of a Chat reply."""
    kind = reply["kind"]
    msg = {"role": "assistant", "content": None, "refusal": None}
    calls = []

    def call(name, arguments):
        return {"id": next_id("call"), "type": "function",
                "function": {"name": name, "arguments": arguments}}

    if kind == "action":
        a = reply["action"]
        if tools:
            calls.append(call(a.get("type", "?"), args_of(a)))
            if reply.get("text"):
                msg["content"] = reply["text"]
        else:
            msg["content"] = json.dumps({"action": a})
    elif kind == "text":
        msg["content"] = reply["text"]
    elif kind == "raw":
        if tools:
            calls.append(call(reply.get("name", "evaluate"), reply["arguments"]))
        else:
            msg["content"] = reply["arguments"]
    elif kind == "two-calls":
        if tools:
            calls = [call(a["type"], args_of(a)) for a in reply["actions"]]
        else:
            msg["content"] = "".join(json.dumps({"action": a}) for a in reply["actions"])
    elif kind == "refusal":
        msg["refusal"] = reply["refusal"]
    elif kind == "incomplete":
        msg["content"] = '{"action": {"type": "eval'
        return msg, "length", None
    elif kind in ("failed", "error-event"):
        return msg, None, {"message": reply.get("message", "the model failed"),
                           "type": "server_error", "code": reply.get("code")}
    if calls:
        msg["tool_calls"] = calls
    return msg, "tool_calls" if calls else "stop", None


def chat_object(reply, body, msg, finish, error):
    o = {"id": next_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()),
         "model": body.get("model", "?"),
         "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
         "usage": usage_chat(reply)}
    if error:
        o["error"] = error
    return o


def chat_chunks(reply, body, tools):
    msg, finish, error = chat_message(reply, tools)
    cid = next_id("chatcmpl")
    base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "?")}

    def chunk(delta, fr=None):
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": fr, "logprobs": None}])

    out = [chunk({"role": "assistant", "content": ""})]
    if error:
        out.append(dict(base, choices=[], error=error))
        return out
    if msg.get("content"):
        t = msg["content"]
        for k in range(0, len(t), 7):
            out.append(chunk({"content": t[k:k + 7]}))
    if msg.get("refusal"):
        out.append(chunk({"refusal": msg["refusal"]}))
    for i, c in enumerate(msg.get("tool_calls", [])):
        out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                          "function": {"name": c["function"]["name"], "arguments": ""}}]}))
        a = c["function"]["arguments"]
        for k in range(0, len(a), 9):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": a[k:k + 9]}}]}))
    out.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append(dict(base, choices=[], usage=usage_chat(reply)))
    return out


# --------------------------------------------------------------- server

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with LOCK:
            CONNS[0] += 1
            self.conn_no = CONNS[0]

    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_log":
            with LOCK:
                self.send_json(200, LOG)
        else:
            self.send_json(404, {"error": {"message": "no such path %s" % self.path}})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n)

    def do_POST(self):
        raw = self.read_body()
        if self.path == "/_log":
            with LOCK:
                return self.send_json(200, LOG)
        if self.path == "/_queue":
            with LOCK:
                QUEUE.extend(json.loads(raw))
            return self.send_json(200, {"ok": True, "queued": len(QUEUE)})
        if self.path == "/_reset":
            with LOCK:
                QUEUE.clear()
                LOG.clear()
            return self.send_json(200, {"ok": True})
        if self.path not in ("/v1/responses", "/v1/chat/completions"):
            return self.send_json(404, {"error": {"message": "Unknown path %s" % self.path,
                                                  "type": "invalid_request_error"}})
        try:
            body = json.loads(raw)
        except ValueError:
            return self.send_json(400, {"error": {"message": "request body is not JSON"}})
        entry = {"path": self.path, "conn": self.conn_no, "body": body,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
        with LOCK:
            LOG.append(entry)
            if ARGS.log:
                with open(ARGS.log, "a") as f:
                    f.write(json.dumps(entry) + "\n")
        if ARGS.key and self.headers.get("Authorization") != "Bearer " + ARGS.key:
            got = (self.headers.get("Authorization") or "")[7:]
            return self.send_json(401, {"error": {
                "message": "Incorrect API key provided: %s. You can find your API key at "
                           "https://platform.openai.com/account/api-keys." % got,
                "type": "invalid_request_error", "code": "invalid_api_key"}})
        reply = pop_reply()
        if reply is None:
            return self.send_json(500, {"error": {"message": "model server: no scripted reply left"}},
                                  {"x-should-retry": "false"})
        chat = self.path.endswith("/chat/completions")
        tools = bool(body.get("tools"))
        self.serve(reply, body, chat, tools, bool(body.get("stream")))

    def serve(self, reply, body, chat, tools, stream):
        kind = reply["kind"]
        if reply.get("delay"):
            time.sleep(reply["delay"])
        if kind == "status":
            err = {"message": reply.get("message", "error %d" % reply["status"]),
                   "type": reply.get("type", "server_error"), "code": reply.get("code")}
            return self.send_json(reply["status"], {"error": err}, reply.get("headers"))
        if kind == "stall":
            time.sleep(reply.get("seconds", 5))
            self.close_connection = True
            return
        if kind == "invalid-json" and not stream:
            data = b'{"id": "resp_x", "output": [ not json'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if kind in ("truncate", "cut") and not stream:
            data = json.dumps({"id": "resp_cut", "object": "response", "output": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if not stream:
            if chat:
                msg, finish, error = chat_message(reply, tools)
                return self.send_json(200, chat_object(reply, body, msg, finish, error))
            items, status, incomplete, error = output_items(reply, tools)
            return self.send_json(200, response_object(reply, body, items, status, incomplete, error))
        self.stream(reply, body, chat, tools)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def stream(self, reply, body, chat, tools):
        kind = reply["kind"]
        inner = dict(reply, kind="action", action={"type": "evaluate", "source": "(+ 1 2)"}) \
            if kind in ("cut", "end-early", "invalid-json", "truncate") else reply
        if chat:
            events = [(None, c) for c in chat_chunks(inner, body, tools)]
        else:
            events = responses_events(inner, body, tools)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def frame(name, data):
            text = data if isinstance(data, str) else json.dumps(data)
            return (("event: %s\n" % name) if name else "").encode() + b"data: " + text.encode() + b"\n\n"

        if kind in ("cut", "truncate"):
            for name, d in events[:3]:
                self.chunk(frame(name, d))
            half = frame(*events[3])
            self.chunk(half[: len(half) // 2])
            self.close_connection = True
            return
        if kind == "end-early":
            for name, d in events[:3]:
                self.chunk(frame(name, d))
            self.wfile.write(b"0\r\n\r\n")
            return
        if kind == "invalid-json":
            for name, d in events[:2]:
                self.chunk(frame(name, d))
            self.chunk(b"event: response.output_item.added\ndata: {not json\n\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        for name, d in events:
            self.chunk(frame(name, d))
        if chat:
            self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def load_script(path):
    text = open(path).read().strip()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(l) for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--script")
    p.add_argument("--log")
    p.add_argument("--key")
    ARGS = p.parse_args()
    if ARGS.script:
        QUEUE.extend(load_script(ARGS.script))
    srv = Server(("127.0.0.1", ARGS.port), Handler)
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        import os
        os.rename(tmp, ARGS.port_file)
    print("listening %d" % port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
