"""`xpuinfer generate -f` through the engine: every prompt of a file at once, JSON lines in input order with
index / prompt_tokens / completion_tokens / ttft_s / tok_s, greedy ids equal to each prompt run alone (-p),
the same with --parallel 1 and 2, a line that cannot run (invalid UTF-8, too long for the context, a bad
.jsonl field) reported on its own line while the others go on (exit status 1), text mode in input order, and
.jsonl files with "prompt" or "messages" (the chat template) and per-line max_tokens, temperature, seed, stop."""
import json
import os
import subprocess
import sys
import tempfile

CLI = os.environ["XPI_CLI"]
SRC = os.environ["XPI_SOURCE_DIR"]
TF = os.path.join(SRC, "examples", "models", "tinyfortunes")
QWEN = os.path.join(os.environ["XPI_MODELS_DIR"], "tiny-qwen3-f32")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def run(model, args, want_rc=0):
    p = subprocess.run([CLI, "generate", "-m", model, "-q", "--threads", "2"] + args, capture_output=True)
    if p.returncode != want_rc:
        fail(f"{args}: exit {p.returncode} (want {want_rc}): {p.stderr.decode(errors='replace').strip()}")
    return p


def json_lines(p):
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def tmpfile(data, suffix):
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    f.write(data)
    f.close()
    return f.name


prompts = ["A computer", "Love is", "The best way", "Friends are", "Time"]
lines = [prompts[0], "", prompts[1], "\xff\xfe broken".encode("latin-1"), prompts[2], ("word " * 1500).strip(),
         prompts[3], prompts[4]]
data = b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines) + b"\n"
path = tmpfile(data, ".txt")
alone = {}
for pr in prompts:
    out = json_lines(run(TF, ["-p", pr, "-n", "12", "--greedy", "--json"]))
    alone[pr] = out[0]["ids"] if out else None

for extra in [[], ["--parallel", "1"], ["--parallel", "2"]]:
    p = run(TF, ["-f", path, "-n", "12", "--greedy", "--json"] + extra, want_rc=1)
    out = json_lines(p)
    if [o["index"] for o in out] != list(range(7)):
        fail(f"{extra}: indexes {[o['index'] for o in out]} (want 0..6 in input order, the empty line skipped)")
        continue
    errs = {o["index"]: o["error"] for o in out if "error" in o}
    if sorted(errs) != [2, 4] or "UTF-8" not in errs[2] or "context" not in errs[4]:
        fail(f"{extra}: error lines {errs}")
    for o in out:
        if "error" in o:
            continue
        if alone.get(o["prompt"]) != o["ids"]:
            fail(f"{extra}: {o['prompt']!r}: batched ids {o['ids']} != alone {alone.get(o['prompt'])}")
        for k in ["prompt_tokens", "completion_tokens", "ttft_s", "tok_s"]:
            if k not in o:
                fail(f"{extra}: no {k!r} in {o}")
        if o.get("completion_tokens") != len(o["ids"]) or o.get("prompt_tokens") != len(o["prompt_ids"]):
            fail(f"{extra}: token counts {o.get('prompt_tokens')}/{o.get('completion_tokens')}")
        if not o.get("ttft_s", -1) > 0:
            fail(f"{extra}: ttft_s {o.get('ttft_s')}")

# text mode: the texts in input order on stdout, one per line; the bad lines on stderr
p = run(TF, ["-f", path, "-n", "6", "--greedy"], want_rc=1)
texts = p.stdout.decode().splitlines()
err = p.stderr.decode()
if len(texts) != 5 or "line 4:" not in err or "line 6:" not in err or err.count("\n") != 2:
    fail(f"text mode: {len(texts)} lines, stderr {err!r}")
os.unlink(path)

# .jsonl: per-line options, "messages" through the chat template, bad lines
jl = [{"prompt": "Hello", "max_tokens": 3},
      {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
      {"prompt": 5},
      {"prompt": "x", "temperature": 0.7, "seed": 3, "max_tokens": 5},
      {"prompt": "x", "temperature": 0.7, "seed": 3, "max_tokens": 5},
      {"prompt": "Hello", "max_tokens": "many"},
      {"prompt": "Hello", "max_tokens": 6, "stop": ["\u00e9", "the"]}]
path = tmpfile(("\n".join(json.dumps(x) for x in jl) + "\nnot json\n").encode(), ".jsonl")
out = json_lines(run(QWEN, ["-f", path, "--json", "--greedy", "--ignore-eos"], want_rc=1))
os.unlink(path)
if len(out) != 8:
    fail(f"jsonl: {len(out)} lines")
else:
    errs = sorted(o["index"] for o in out if "error" in o)
    if errs != [2, 5, 7]:
        fail(f"jsonl: error lines {errs}: {[o.get('error') for o in out]}")
    if out[0].get("completion_tokens") != 3 or out[1].get("completion_tokens") != 4:
        fail(f"jsonl: max_tokens per line: {out[0].get('completion_tokens')}, {out[1].get('completion_tokens')}")
    if out[3].get("ids") != out[4].get("ids"):
        fail("jsonl: same seed, different ids")
    if out[6].get("completion_tokens", 99) > 6:
        fail("jsonl: stop line")
    chat = json_lines(run(QWEN, ["-p", "Hi", "--chat", "-n", "4", "--json", "--greedy", "--ignore-eos"]))
    if chat and chat[0]["ids"] != out[1].get("ids"):
        fail(f"jsonl messages {out[1].get('ids')} != --chat -p {chat[0]['ids']}")
    if '"Hi"' not in (out[1].get("prompt") or ""):
        fail(f"jsonl messages: prompt should be the messages' JSON: {out[1].get('prompt')!r}")

print("failures:", failures)
sys.exit(1 if failures else 0)
