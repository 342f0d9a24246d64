"""xpuinfer tokenize / detokenize: output against the tokenizer goldens, --help, and one-line errors with a
non-zero exit status."""
import json
import os
import subprocess
import sys
import tempfile

CLI = os.environ["XPI_CLI"]
DATA = os.environ["XPI_TEST_DATA"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL", what)


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


goldens = json.load(open(os.path.join(DATA, "goldens", "tokenizer.json"), encoding="utf-8"))
for name in ("qwen3", "llama3_1", "llama2"):
    d = os.path.join(DATA, "tokenizers", name)
    # one case per tokenizer keeps the test quick (each call loads the tokenizer); test_goldens has them all
    for case in (next(c for c in goldens[name] if "emoji" in c["text"]),):
        rc, out, err = run("tokenize", "-m", d, "-p", case["text"])
        check(rc == 0 and json.loads(out) == case["ids"], f"{name} tokenize {case['text']!r}: {rc} {out} {err}")
        rc, out, err = run("tokenize", "-m", d, "-p", case["text"], "--add-special")
        check(rc == 0 and json.loads(out) == case["ids_with_special"], f"{name} tokenize --add-special: {out} {err}")
        if name != "llama2":
            continue  # the big files: one load per flag is enough
        rc, out, err = run("detokenize", "-m", d, *map(str, case["ids"]))
        check(rc == 0 and out == case["decoded"] + "\n", f"{name} detokenize: {out!r} {err}")
        rc, out, err = run("detokenize", "-m", d, "--skip-special", *map(str, case["ids"]))
        check(rc == 0 and out == case["decoded_skip_special"] + "\n", f"{name} detokenize --skip-special: {out!r}")

l2 = os.path.join(DATA, "tokenizers", "llama2")  # the smallest file: quick to load, also under the sanitizers
q3 = os.path.join(DATA, "tokenizers", "qwen3")
rc, out, err = run("detokenize", "-m", q3, "151644", "872", "198", "6023", "151645")
check(rc == 0 and out == "<|im_start|>user\nhi<|im_end|>\n", f"qwen3 detokenize: {out!r} {err}")
rc, out, err = run("tokenize", "-m", l2, "-p", "", "--add-special")
check(rc == 0 and json.loads(out) == [1], f"empty text with BOS: {out} {err}")
for sub in ("tokenize", "detokenize"):
    rc, out, err = run(sub, "--help")
    check(rc == 0 and "usage: xpuinfer " + sub in out, f"{sub} --help: {rc} {out}")

# --opt=value works like --opt value; -p - reads the text from stdin (trailing newlines removed)
rc, out, err = run("tokenize", "--model=" + l2, "--prompt=Hello world", "--add-special")
rc2, out2, err2 = run("tokenize", "-m", l2, "-p", "Hello world", "--add-special")
check(rc == 0 and out == out2, f"tokenize --opt=value: {out!r} vs {out2!r} {err}")
p = subprocess.run([CLI, "tokenize", "-m", l2, "-p", "-", "--add-special"], input=b"Hello world\n", capture_output=True)
check(p.returncode == 0 and p.stdout.decode() == out2, f"tokenize -p -: {p.stdout!r} vs {out2!r} {p.stderr!r}")
p = subprocess.run([CLI, "tokenize", "-m", l2, "-p", "-"], input=b"Hel\0lo", capture_output=True)
check(p.returncode == 1 and b"NUL byte" in p.stderr and p.stderr.count(b"\n") == 1, f"tokenize NUL: {p.stderr!r}")
rc, out, err = run("detokenize", "--model=" + l2, "--skip-special", "--", "1", "15043")
rc2, out2, err2 = run("detokenize", "-m", l2, "--skip-special", "1", "15043")
check(rc == 0 and out == out2, f"detokenize --model=: {out!r} vs {out2!r} {err}")

with tempfile.TemporaryDirectory() as empty:
    bad = [
        (("tokenize", "-p", "x"), "-m DIR is required"),
        (("tokenize", "-m", l2), "-p TEXT is required"),
        (("tokenize", "-m", l2, "-p", "x", "--bogus"), "unknown option '--bogus'"),
        (("tokenize", "-m", l2, "-p", "x", "--add-special=1"), "--add-special takes no value"),
        (("detokenize", "-m", l2, "-5"), "'-5' is not a token id"),
        (("tokenize", "-m", empty, "-p", "x"), "tokenizer.json"),
        (("detokenize", "-m", l2, "12", "abc"), "'abc' is not a token id"),
        (("detokenize", "-m", l2, "999999"), "ids[0] = 999999"),
        (("detokenize", "-m", empty, "1"), "tokenizer.json"),
        (("tokenize", "-m", l2, "-p", b"caf\xe9".decode("latin-1").encode("latin-1")), "UTF-8"),
    ]
    for args, needle in bad:
        rc, out, err = run(*args)
        check(rc != 0 and needle in err and err.count("\n") == 1 and out == "",
              f"{args}: rc={rc} stderr={err!r} stdout={out!r} (want one line containing {needle!r})")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
