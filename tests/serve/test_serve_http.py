"""`xpuinfer serve` over raw HTTP: OpenAI error objects with the right status for malformed JSON and bad fields
(type and range, each naming its field), unknown fields ignored, 404 / 405 (with Allow), 413 by Content-Length and
by a chunked body, oversized headers refused, 401 with --api-key (missing, wrong, right; /health open), 503 when
the queue is full, a client that disconnects mid-stream (its sequence cancelled and its KV blocks freed, seen in
/metrics), randomized malformed requests that never bring the server down, and SIGTERM: no new connections,
running streams finish (or, past --shutdown-timeout, end with an error event), exit status 0."""
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import serveutil as su  # noqa: E402

fail = su.Failures()
TF = su.TF


def request(port, method, path, body=None, headers=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    c.request(method, path, body=data, headers=headers or {})
    r = c.getresponse()
    out = r.status, dict(r.getheaders()), r.read()
    c.close()
    return out


def error_of(status, body, want_status, what, param=None):
    if not fail.check(status == want_status, f"{what}: status {status} (want {want_status}): {body[:300]!r}"):
        return None
    try:
        e = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        fail(f"{what}: not an OpenAI error object: {body[:300]!r}")
        return None
    fail.check(set(e) == {"message", "type", "param", "code"} and isinstance(e["message"], str) and e["message"],
               f"{what}: error fields {e}")
    if param is not None:
        fail.check(e["param"] == param, f"{what}: param {e['param']!r} (want {param!r})")
    return e


def raw(port, data, timeout=10):
    """Sends bytes, returns what comes back until the server closes or times out."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:  # the server may answer and close before it has read everything
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    finally:
        s.close()
    return out


# ------------------------------------------------------------------ command line: usage errors exit 2 before listening
for args, needle in [(["--system", "x"], "--system"), (["--tools", "t.json"], "--tools"), (["--parallel", "0"], "--parallel"),
                     (["--var", "x=notjson"], "--var"), (["--max-body", "lots"], "--max-body"),
                     (["--kv-pool", "1G", "--kv-pool-tokens", "64"], "not both"), (["--port", "70000"], "--port")]:
    p = subprocess.run([su.CLI, "serve", "-m", TF, "--port", "0"] + args, capture_output=True, text=True, timeout=60)
    fail.check(p.returncode == 2 and needle in p.stderr and "listening" not in p.stderr,
               f"serve {args}: exit {p.returncode}, {p.stderr!r}")

# ------------------------------------------------------------------ errors
srv = su.Server(TF, ["--max-body", "64K", "--max-header", "8192"])
P = srv.port
C = "/v1/completions"
CH = "/v1/chat/completions"
ok_c = {"model": "tiny", "prompt": "Love is", "max_tokens": 4}
ok_ch = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}

s, h, b = request(P, "POST", C, b"{\"model\": \"tiny\", \"prompt\": ")
error_of(s, b, 400, "truncated JSON")
s, h, b = request(P, "POST", C, b"\xff\xfe not json")
error_of(s, b, 400, "binary body")
s, h, b = request(P, "POST", C, b"[1, 2]")
error_of(s, b, 400, "array body")
bad_fields = [
    ({"prompt": "x"}, "model"), ({"model": 5, "prompt": "x"}, "model"),
    ({"model": "tiny"}, "prompt"), ({"model": "tiny", "prompt": 5}, "prompt"),
    ({"model": "tiny", "prompt": [1, "a"]}, "prompt"), ({"model": "tiny", "prompt": ["a", "b"]}, "prompt"),
    ({**ok_c, "max_tokens": "4"}, "max_tokens"), ({**ok_c, "max_tokens": 0}, "max_tokens"),
    ({**ok_c, "max_tokens": 1.5}, "max_tokens"), ({**ok_c, "temperature": "hot"}, "temperature"),
    ({**ok_c, "temperature": 3}, "temperature"), ({**ok_c, "top_p": 1.5}, "top_p"),
    ({**ok_c, "seed": "s"}, "seed"), ({**ok_c, "stop": 5}, "stop"), ({**ok_c, "stop": ["a", 1]}, "stop"),
    ({**ok_c, "stop": ["s"] * 17}, "stop"), ({**ok_c, "n": 2}, "n"), ({**ok_c, "stream": "yes"}, "stream"),
    ({**ok_c, "logprobs": 30}, "logprobs"), ({**ok_c, "logprobs": True}, "logprobs"),
    ({**ok_c, "stream_options": 1}, "stream_options"), ({**ok_c, "echo": True}, "echo"),
    ({**ok_c, "presence_penalty": 0.5}, "presence_penalty"), ({**ok_c, "prompt": [5000]}, None),
    ({**ok_c, "prompt": ""}, "prompt"), ({**ok_c, "max_tokens": 2000}, "max_tokens"),
]
for body, param in bad_fields:
    s, h, b = request(P, "POST", C, body)
    error_of(s, b, 400, f"completions {body}", param)
# a stop string that is not UTF-8 (JSON escapes cannot make one; raw bytes can): refused by the engine's checks
s, h, b = request(P, "POST", C, b'{"model": "tiny", "prompt": "x", "stop": ["a\xff"]}')
error_of(s, b, 400, "stop string not UTF-8", "stop")
bad_chat = [
    ({"model": "tiny"}, "messages"), ({"model": "tiny", "messages": []}, "messages"),
    ({"model": "tiny", "messages": "hi"}, "messages"), ({"model": "tiny", "messages": [5]}, "messages"),
    ({"model": "tiny", "messages": [{"content": "x"}]}, "messages"),
    ({"model": "tiny", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages"),
    ({**ok_ch, "top_logprobs": 2}, "top_logprobs"), ({**ok_ch, "logprobs": 1}, "logprobs"),
    ({**ok_ch, "tools": {}}, "tools"), ({**ok_ch, "max_completion_tokens": -1}, "max_completion_tokens"),
    (ok_ch, "messages"),  # tinyfortunes has no chat template: 400 that says so
]
for body, param in bad_chat:
    s, h, b = request(P, "POST", CH, body)
    e = error_of(s, b, 400, f"chat {body}", param)
    if body is ok_ch and e:
        fail.check("chat template" in e["message"], f"no-template message: {e['message']}")
# unknown fields are ignored, as OpenAI does; null counts as not given
s, h, b = request(P, "POST", C, {**ok_c, "frobnicate": {"x": [1]}, "user": "me", "temperature": None, "stop": None})
fail.check(s == 200 and json.loads(b)["choices"][0]["finish_reason"] in ("stop", "length"), f"unknown fields: {s} {b[:200]}")
s, h, b = request(P, "POST", C, {**ok_c, "model": "other"})
error_of(s, b, 404, "unknown model", "model")
s, h, b = request(P, "GET", "/v1/nothing")
error_of(s, b, 404, "unknown path")
s, h, b = request(P, "DELETE", "/v1/models")
error_of(s, b, 405, "DELETE /v1/models")
s, h, b = request(P, "GET", C)
error_of(s, b, 405, "GET /v1/completions")
fail.check(h.get("Allow") == "POST", f"405 Allow header {h.get('Allow')}")
s, h, b = request(P, "POST", C, b"{" + b" " * (70 * 1024) + b"}")
error_of(s, b, 413, "body by Content-Length")
# a chunked body: no Content-Length, the limit is found while reading
big = b" " * (70 * 1024)
chunked = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
           b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n")
out = raw(P, chunked)
fail.check(out.startswith(b"HTTP/1.1 413"), f"chunked body over the limit: {out[:100]!r}")
out = raw(P, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
fail.check(out[:12] in (b"HTTP/1.1 431", b"HTTP/1.1 413", b"HTTP/1.1 400"), f"oversized header: {out[:100]!r}")
s, h, b = request(P, "GET", "/health")
fail.check(s == 200, f"health after the errors: {s}")

# randomized malformed requests: mutated JSON bodies and mutated raw HTTP; the server must answer and live
rng = random.Random(1234)
seeds = [json.dumps(x).encode() for x in [ok_c, ok_ch, {**ok_c, "stop": ["a", "b"], "logprobs": 2},
                                           {**ok_c, "prompt": [1, 2, 3], "stream": True}]]


def mutate(b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(4)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            del b[min(i, len(b) - 1)]
        elif op == 1:
            b[i:i] = bytes([rng.choice(b'{}[]",:0123456789-.e\\u\x00\xff ntrufalse')])
        elif op == 2 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        else:
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[min(i, j):max(i, j)][:64]
    return bytes(b)


statuses = {}
for k in range(300):
    body = mutate(rng.choice(seeds))
    path = rng.choice([C, CH])
    try:
        s, h, b = request(P, "POST", path, body, timeout=30)
    except Exception as e:  # noqa: BLE001
        fail(f"fuzz {k}: {body!r}: {type(e).__name__} {e}")
        continue
    statuses[s] = statuses.get(s, 0) + 1
    if s not in (200, 400, 404):
        fail(f"fuzz {k}: status {s} for {body!r}")
    elif s != 200:
        error_of(s, b, s, f"fuzz {k}")
head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + seeds[0][:20]
for k in range(100):
    out = raw(P, mutate(head), timeout=5)
    fail.check(out == b"" or out.startswith(b"HTTP/1."), f"raw fuzz {k}: {out[:80]!r}")
s, h, b = request(P, "GET", "/health")
fail.check(s == 200 and srv.p.poll() is None, f"alive after fuzzing: {s} (statuses {statuses})")
print("fuzz statuses", statuses)
fail.check(srv.stop() == 0, "exit status after the error cases")

# ------------------------------------------------------------------ auth
srv = su.Server(TF, ["--api-key", "sekret"])
P = srv.port
for hdr, want in [({}, 401), ({"Authorization": "Bearer nope"}, 401), ({"Authorization": "Bearer sekretX"}, 401),
                  ({"Authorization": "sekret"}, 401), ({"Authorization": "Bearer sekret"}, 200)]:
    s, h, b = request(P, "POST", C, ok_c, hdr)
    if want == 401:
        error_of(s, b, 401, f"auth {hdr}")
        fail.check(h.get("WWW-Authenticate") == "Bearer", f"401 without WWW-Authenticate: {h}")
    else:
        fail.check(s == 200, f"auth {hdr}: {s} {b[:200]!r}")
s, h, b = request(P, "GET", "/v1/models")
error_of(s, b, 401, "models without the key")
s, h, b = request(P, "GET", "/health")
fail.check(s == 200, f"/health without the key: {s}")
fail.check(srv.stop() == 0, "exit status (auth)")

# ------------------------------------------------------------------ a full queue, a dropped client
srv = su.Server(TF, ["--parallel", "1", "--max-queue", "1"])
P = srv.port
long_req = {**ok_c, "max_tokens": 900, "ignore_eos": True, "stream": True}  # parallel 1: a 992-position pool


def open_stream(port, body, chunks=3):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(data) + data)
    got = b""
    while got.count(b"data: ") < chunks:
        x = s.recv(4096)
        if not x or (got + x)[:12] not in (b"HTTP/1.1 200"[:len(got + x)], b"HTTP/1.1 200"):
            raise RuntimeError(f"not a stream: {(got + x)[:400]!r}")
        got += x
    return s, got


a, got_a = open_stream(P, long_req)
b_, got_b = open_stream(P, long_req, chunks=0)  # waits for the first (parallel 1), in the queue (max-queue 1)
deadline = time.time() + 20
while srv.metrics()["xpuinfer_requests_in_flight"] < 2 and time.time() < deadline:
    time.sleep(0.02)
s, h, b = request(P, "POST", C, ok_c)
error_of(s, b, 503, "third request with --parallel 1 --max-queue 1")
fail.check(got_a.startswith(b"HTTP/1.1 200") and b"text/event-stream" in got_a, f"stream head {got_a[:200]!r}")
m = srv.metrics()
fail.check(m["xpuinfer_requests_in_flight"] == 2 and m["xpuinfer_kv_blocks_used"] > 0, f"two streams: {m}")
a.close()  # the client goes away mid-stream
b_.close()
deadline = time.time() + 20
while time.time() < deadline:
    m = srv.metrics()
    if m["xpuinfer_requests_in_flight"] == 0 and m["xpuinfer_sequences_running"] == 0:
        break
    time.sleep(0.05)
fail.check(m["xpuinfer_requests_in_flight"] == 0 and m["xpuinfer_sequences_running"] == 0 and
           m["xpuinfer_sequences_waiting"] == 0 and m["xpuinfer_kv_blocks_used"] == 0,
           f"after the clients left: {m}")
fail.check(m["xpuinfer_client_disconnects_total"] == 2, f"disconnects {m['xpuinfer_client_disconnects_total']}")
fail.check(m["xpuinfer_completion_tokens_total"] < 1500, f"the dropped streams ran on: {m['xpuinfer_completion_tokens_total']} tokens")
s, h, b = request(P, "POST", C, ok_c)
fail.check(s == 200, f"a request after the drops: {s}")
fail.check(srv.stop() == 0, "exit status (queue)")

# ------------------------------------------------------------------ graceful shutdown
# streams that finish within the grace period run to the end; new connections are refused after the signal
srv = su.Server(TF, ["--shutdown-timeout", "30"])
P = srv.port
streams = [open_stream(P, {**ok_c, "max_tokens": 100, "ignore_eos": True, "stream": True}) for _ in range(3)]
results = [None] * 3


def drain(i):
    s, got = streams[i]
    try:
        while not got.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n") and not got.endswith(b"0\r\n\r\n"):
            x = s.recv(65536)
            if not x:
                break
            got += x
    except OSError:
        pass
    results[i] = got


threads = [threading.Thread(target=drain, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
srv.p.send_signal(15)
time.sleep(0.3)
try:
    c = socket.create_connection(("127.0.0.1", P), timeout=2)
    c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    r = c.recv(100)
    fail.check(r == b"" or b" 503 " in r[:20], f"a new connection after SIGTERM: {r!r}")
except OSError:
    pass  # refused: expected
for t in threads:
    t.join(60)
for i, got in enumerate(results):
    fail.check(got is not None and b"data: [DONE]" in got and b'"finish_reason":"length"' in got,
               f"stream {i} did not finish cleanly: {(got or b'')[-300:]!r}")
rc = srv.stop(timeout=60)
fail.check(rc == 0, f"exit status after SIGTERM with running streams: {rc}")

# past the grace period the rest is cancelled: an error event, [DONE], exit 0, quickly
srv = su.Server(TF, ["--shutdown-timeout", "0.2", "--ctx-size", "1024"])
P = srv.port
s1, got = open_stream(P, {**ok_c, "max_tokens": 1000, "ignore_eos": True, "stream": True})
t0 = time.time()
srv.p.send_signal(2)
try:
    while True:
        x = s1.recv(65536)
        if not x:
            break
        got += x
except OSError:
    pass
rc = srv.stop(timeout=30)
fail.check(rc == 0 and time.time() - t0 < 10, f"SIGINT past the grace period: exit {rc} after {time.time() - t0:.1f} s")
fail.check(b"shutting down" in got and b"data: [DONE]" in got, f"cancelled stream's end: {got[-300:]!r}")

if fail.n:
    print("".join(srv.log))
print(f"{fail.n} failures")
sys.exit(1 if fail.n else 0)
