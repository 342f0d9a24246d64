"""Starting `xpuinfer serve` for the tests: a free port (--port 0, read from its log), waiting until it is ready,
stopping it with a signal, and a tinyfortunes model folder with a chat template (the bundled model has none; the
Qwen3 template from tests/data/tokenizers is added to a copy of its tokenizer_config.json)."""
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

CLI = os.environ["XPI_CLI"]
SRC = os.environ["XPI_SOURCE_DIR"]
DATA = os.environ["XPI_TEST_DATA"]
TF = os.path.abspath(os.path.join(SRC, "examples", "models", "tinyfortunes"))
QWEN3_TEMPLATE = json.load(open(os.path.join(DATA, "tokenizers", "qwen3", "tokenizer_config.json")))["chat_template"]


def chat_model_dir():
    """tinyfortunes with the Qwen3 chat template in its tokenizer_config.json (weights linked, not copied)."""
    d = tempfile.mkdtemp(prefix="xpi-serve-model-")
    for f in ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json"]:
        os.symlink(os.path.join(TF, f), os.path.join(d, f))
    cfg = json.load(open(os.path.join(TF, "tokenizer_config.json")))
    cfg["chat_template"] = QWEN3_TEMPLATE
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"))
    return d


class Server:
    def __init__(self, model, args=(), name="tiny", ready=True, timeout=120):
        self.log = []
        self.port = None
        self.name = name
        self.p = subprocess.Popen([CLI, "serve", "-m", model, "--port", "0", "--threads", "2", "--model-name", name]
                                  + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, errors="replace")
        self._ready = threading.Event()
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        deadline = time.time() + timeout
        while self.port is None and time.time() < deadline and self.p.poll() is None:
            time.sleep(0.01)
        if self.port is None:
            raise RuntimeError("the server did not start: " + "".join(self.log))
        if ready and not self._ready.wait(max(0.0, deadline - time.time())):
            raise RuntimeError("the server did not get ready: " + "".join(self.log))
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for line in self.p.stderr:
            self.log.append(line)
            if "listening on http://" in line:
                self.port = int(line.split("http://", 1)[1].split()[0].rsplit(":", 1)[1])
            if "serve: ready:" in line:
                self._ready.set()

    def metrics(self, headers=None):
        req = urllib.request.Request(self.url + "/metrics", headers=headers or {})
        text = urllib.request.urlopen(req, timeout=30).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends sig and returns the exit status (None if it did not exit in time, then killed)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self._t.join(5)
        return rc


class Failures:
    def __init__(self):
        self.n = 0

    def __call__(self, msg):
        self.n += 1
        print("FAIL:", msg, flush=True)

    def check(self, cond, msg):
        if not cond:
            self(msg)
        return cond


def cli_generate(model, file_lines, args, suffix=".txt"):
    """`xpuinfer generate -f FILE --json` with the given lines; the JSON objects in input order."""
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write("\n".join(file_lines) + "\n")
    f.close()
    p = subprocess.run([CLI, "generate", "-m", model, "-q", "--threads", "2", "-f", f.name, "--json"] + args,
                       capture_output=True, text=True)
    os.unlink(f.name)
    if p.returncode != 0:
        raise RuntimeError(f"generate failed ({p.returncode}): {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()]
