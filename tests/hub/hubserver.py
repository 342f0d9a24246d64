"""A Hugging Face Hub look-alike for the tests: Python standard library only, 127.0.0.1, ephemeral port.

It answers /{org}/{name}/resolve/{revision}/{file} as the Hub does (X-Repo-Commit, ETag = git blob sha1 for
small files; for LFS files a 302 to a second host name, "localhost", carrying X-Linked-Etag = sha256 and
X-Linked-Size), serves the "CDN" side with Range support, and injects faults on request. It counts what it
serves so tests can prove that resumed downloads do not refetch finished bytes. It stops itself after a
deadline so a failing test can never hang."""
import hashlib
import json
import os
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.environ.get("XPI_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "examples", "models", "tinyfortunes")
LFS_SUFFIXES = (".safetensors",)


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fake_commit(*parts):
    return hashlib.sha1("/".join(parts).encode()).hexdigest()


def tiny_files():
    out = {}
    for f in sorted(os.listdir(TINY)):
        with open(os.path.join(TINY, f), "rb") as fh:
            out[f] = fh.read()
    return out


def split_safetensors(data, n_shards=2):
    """Splits a safetensors file by tensors into n shards (by hand: header JSON + re-based offsets)."""
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    meta = header.pop("__metadata__", None)
    names = list(header)
    per = (len(names) + n_shards - 1) // n_shards
    shards, weight_map = {}, {}
    for i in range(n_shards):
        sname = "model-%05d-of-%05d.safetensors" % (i + 1, n_shards)
        h, body = {}, b""
        if meta is not None:
            h["__metadata__"] = meta
        for name in names[i * per:(i + 1) * per]:
            a, b = header[name]["data_offsets"]
            t = dict(header[name])
            t["data_offsets"] = [len(body), len(body) + (b - a)]
            body += data[8 + hlen + a:8 + hlen + b]
            h[name] = t
            weight_map[name] = sname
        hj = json.dumps(h).encode()
        hj += b" " * (-len(hj) % 8)
        shards[sname] = struct.pack("<Q", len(hj)) + hj + body
    index = json.dumps({"metadata": {"total_size": sum(len(v) for v in shards.values())},
                        "weight_map": weight_map}, indent=2).encode()
    return shards, index


class Repo:
    def __init__(self, repo_id, files, branches=("main",), token=None):
        self.repo_id = repo_id
        self.commit = fake_commit(repo_id, "c1")
        self.files = dict(files)
        self.branches = set(branches)
        self.token = token  # gated: this bearer token is required


class HubState:
    def __init__(self):
        self.repos = {}
        self.faults = {}        # file name -> list of faults for CDN GETs, consumed in order ("x*" persists):
                                # "500", "corrupt", "norange", "badrange", "drop:N" (hang up after N bytes),
                                # "stall:N" (N bytes, then silence), "drip:N" (N bytes, then 2 bytes/s)
        self.size_delta = {}    # file name -> added to the announced X-Linked-Size
        self.head_faults = []   # statuses answered to the next metadata requests (e.g. 503), consumed in order
        self.renames = {}       # old repo id -> new one, answered with a relative 307 as the Hub does
        self.throttle = 0.0     # seconds of sleep per 256 KiB chunk on the CDN
        self.stall_s = 4.0
        self.lock = threading.Lock()
        self.reset_counts()

    def reset_counts(self):
        self.bytes_served = {}  # file -> body bytes written on GET
        self.gets = {}          # file -> GET count
        self.log = []           # (method, path, host, authorization, range)

    def add(self, repo):
        self.repos[repo.repo_id] = repo
        return repo


class Handler(BaseHTTPRequestHandler):
    server_version = "FakeHub/1.0"

    def log_message(self, *args):
        pass

    @property
    def st(self):
        return self.server.state

    def _record(self):
        with self.st.lock:
            self.st.log.append((self.command, self.path, self.headers.get("Host"),
                                self.headers.get("Authorization"), self.headers.get("Range")))

    def _error(self, code, error_code=None, message=None, commit=None):
        self.send_response(code)
        if error_code:
            self.send_header("X-Error-Code", error_code)
        if message:
            self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        body = (message or "error").encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self._route()

    def do_GET(self):
        self._route()

    def _route(self):
        self._record()
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path.startswith("/cdn/"):
            return self._cdn(path[5:])
        parts = path.lstrip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, message="not a resolve URL")
        repo_id, rev, file = parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:])
        with self.st.lock:
            injected = self.st.head_faults.pop(0) if self.st.head_faults and self.command == "HEAD" else None
        if injected == "stall":  # answer nothing for a while, then hang up
            end = time.time() + self.st.stall_s
            while time.time() < end and not self.server.stopping:
                time.sleep(0.05)
            self.close_connection = True
            return
        if injected:
            return self._error(injected, message="injected")
        if repo_id in self.st.renames:
            self.send_response(307)
            self.send_header("Location", "/%s/resolve/%s/%s" % (self.st.renames[repo_id], rev, file))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        repo = self.st.repos.get(repo_id)
        auth = self.headers.get("Authorization")
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        if repo.token and auth != "Bearer " + repo.token:
            return self._error(403 if auth else 401, "GatedRepo",
                               "Access to model %s is restricted" % repo_id)
        if rev not in repo.branches and rev != repo.commit:
            return self._error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        if file not in repo.files:
            return self._error(404, "EntryNotFound", "Entry not found", commit=repo.commit)
        data = repo.files[file]
        if file.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(data).hexdigest()
            self.send_response(302)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            self.send_header("X-Linked-Size", str(len(data) + self.st.size_delta.get(file, 0)))
            self.send_header("ETag", 'W/"%s"' % git_blob_sha1(b"lfs pointer " + sha.encode()))
            self.send_header("Location", "http://localhost:%d/cdn/%s/%s/%s" % (
                self.server.server_address[1], repo_id.replace("/", "--"), repo.commit, urllib.parse.quote(file)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", '"%s"' % git_blob_sha1(data))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "GET":
            self._count(file, len(data), get=True)
            self.wfile.write(data)

    def _count(self, file, n, get=False):
        with self.st.lock:
            self.st.bytes_served[file] = self.st.bytes_served.get(file, 0) + n
            if get:
                self.st.gets[file] = self.st.gets.get(file, 0) + 1

    def _cdn(self, rest):
        folder, commit, file = rest.split("/", 2)
        repo = self.st.repos.get(folder.replace("--", "/", 1))
        if repo is None or repo.commit != commit or file not in repo.files:
            return self._error(404, message="no such object")
        data = repo.files[file]
        fault = None
        with self.st.lock:
            q = self.st.faults.get(file)
            if q:
                fault = q[0]
                if not fault.endswith("*"):
                    q.pop(0)
                fault = fault.rstrip("*")
        if self.command == "GET":
            self._count(file, 0, get=True)
        if fault == "500":
            return self._error(500, message="Internal Server Error")
        if fault == "corrupt":
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start, status = 0, 200
        rng = self.headers.get("Range") if fault != "norange" else None  # "norange": answer 200, whole file
        if fault == "badrange" and rng:  # a 206 that starts somewhere else than asked
            rng = "bytes=0-"
        if rng:
            a = rng.split("=", 1)[1].split("-", 1)[0]
            start, status = int(a), 206
            if start >= len(data):
                return self._error(416, message="range not satisfiable")
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        limit = len(body)
        if fault and (fault.startswith("drop:") or fault.startswith("stall:") or fault.startswith("drip:")):
            limit = min(limit, int(fault.split(":")[1]))
        chunk = 256 * 1024
        pos = 0
        try:
            while pos < limit:
                piece = body[pos:min(limit, pos + chunk)]
                self.wfile.write(piece)
                self._count(file, len(piece))
                pos += len(piece)
                if self.st.throttle:
                    time.sleep(self.st.throttle)
            self.wfile.flush()
            if fault and fault.startswith("drip:"):  # then 2 bytes a second: never stalled, never done
                while pos < len(body) and not self.server.stopping:
                    time.sleep(1.0)
                    piece = body[pos:pos + 2]
                    self.wfile.write(piece)
                    self.wfile.flush()
                    self._count(file, len(piece))
                    pos += len(piece)
                limit = pos
            if fault and fault.startswith("stall:"):
                end = time.time() + self.st.stall_s
                while time.time() < end and not self.server.stopping:
                    time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if limit < len(body):  # drop the connection mid-file
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class HubServer:
    """Starts on 127.0.0.1:<ephemeral>; stop() (or the deadline) shuts it down."""

    def __init__(self, state, deadline_s=120):
        self.state = state
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.state = state
        self.httpd.stopping = False
        self.port = self.httpd.server_address[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.timer = threading.Timer(deadline_s, self.stop)
        self.timer.daemon = True
        self.timer.start()

    def stop(self):
        if not self.httpd.stopping:
            self.httpd.stopping = True
            self.httpd.shutdown()
            self.httpd.server_close()
            self.timer.cancel()


def closed_port():
    """A local port with nothing listening (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- test harness shared by tests/hub/test_*.py

import shutil
import subprocess
import sys
import tempfile

CLI = os.environ.get("XPI_CLI", os.path.join(ROOT, "build", "xpuinfer"))
SANITIZER_REPORTS = []


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, file=sys.stderr)
        return cond

    def done(self):
        # A sanitizer build reports leaks and UB on stderr: fail on any report, also on expected error paths.
        for args, err in SANITIZER_REPORTS:
            self(False, "sanitizer report from xpuinfer %s:\n%s" % (" ".join(args), err[-3000:]))
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


class Sandbox:
    """A temporary HF_HOME and the environment for one CLI run against endpoint."""

    def __init__(self, endpoint):
        self.dir = tempfile.mkdtemp(prefix="xpi-hub-")
        self.hf_home = os.path.join(self.dir, "hf")
        self.cache = os.path.join(self.hf_home, "hub")
        self.endpoint = endpoint

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update({"HF_HOME": self.hf_home, "HF_ENDPOINT": self.endpoint, "HF_HUB_DOWNLOAD_TIMEOUT": "2",
                    "HF_HUB_ETAG_TIMEOUT": "5", "XPI_HUB_RETRY_DELAY_MS": "10", "XPI_HUB_MAX_RETRIES": "3"})
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    def run(self, args, timeout=30, **extra):
        p = subprocess.run([CLI] + args, env=self.env(**extra), capture_output=True, text=True, timeout=timeout)
        if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
            SANITIZER_REPORTS.append((args, p.stderr))
        return p.returncode, p.stdout.strip(), p.stderr.strip()

    def repo_dir(self, repo_id):
        return os.path.join(self.cache, "models--" + repo_id.replace("/", "--"))

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)
