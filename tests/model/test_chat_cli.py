"""`xpuinfer chat` through a pipe, on a random-weight Qwen3 model with the Qwen3 tokenizer and its chat template
(tests/data/tokenizers/qwen3, copied next to the model by the random_models fixture):
- the prompt of every turn is exactly the whole conversation rendered by the real template with jinja2 (as
  transformers' apply_chat_template does), including the --system message and the earlier answers; its ids are
  `xpuinfer tokenize` of that text;
- each answer equals a fresh `generate --no-special` of that rendered prompt (the part of the conversation
  already in the KV cache is reused, and that changes nothing);
- streaming mode prints one line per turn, the same texts; /reset forgets the conversation, /exit stops reading;
- a conversation that outgrows --n-ctx is refused with a message and an empty answer line, and the chat goes on;
- a model without a chat template fails at once with one line; bad options exit 2."""
import json
import os
import signal
import subprocess
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("jinja2 is missing from the test venv: run scripts/setup.sh (it installs jinja2)")

CLI = os.environ["XPI_CLI"]
MODEL = os.path.join(os.environ["XPI_MODELS_DIR"], "tiny-qwen3-f32")
TINY = os.path.join(os.environ["XPI_SOURCE_DIR"], "examples", "models", "tinyfortunes")
failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)
    return cond


def run(args, stdin=b""):
    p = subprocess.run([CLI] + args, input=stdin, capture_output=True, timeout=300)
    err = p.stderr.decode(errors="replace")
    check("Sanitizer" not in err and "runtime error:" not in err, f"sanitizer report from {args}: {err[-2000:]}")
    return p.returncode, p.stdout.decode(), err


def render(messages):
    """transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=True)"""
    tpl = json.load(open(os.path.join(MODEL, "tokenizer_config.json")))["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    return env.from_string(tpl).render(messages=messages, add_generation_prompt=True)


CHAT = ["chat", "-m", MODEL, "-n", "6", "--threads", "2", "-q"]
turns = b"Hello\nWhat is an XPU?\n\n/reset\nHi again\n/exit\nnot read\n"
rc, out, err = run(CHAT + ["--json", "--system", "Be brief."], turns)
objs = [json.loads(line) for line in out.splitlines()]
check(rc == 0 and len(objs) == 3, f"3 turns answered (empty line skipped, nothing after /exit): rc {rc} {out!r} {err}")
if len(objs) == 3:
    sysmsg = {"role": "system", "content": "Be brief."}
    want = [[sysmsg, {"role": "user", "content": "Hello"}],
            [sysmsg, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": objs[0]["text"]},
             {"role": "user", "content": "What is an XPU?"}],
            [sysmsg, {"role": "user", "content": "Hi again"}]]  # after /reset
    for i, (o, msgs) in enumerate(zip(objs, want)):
        check(o["prompt"] == render(msgs), f"turn {i}: prompt {o['prompt']!r} != jinja2 {render(msgs)!r}")
        rc2, ids, err2 = run(["tokenize", "-m", MODEL, "-p", o["prompt"]])
        check(rc2 == 0 and json.loads(ids) == o["prompt_ids"], f"turn {i}: prompt_ids are not the prompt's tokens")
        check(o["finish_reason"] == "length" and len(o["ids"]) == 6 and o["text"], f"turn {i}: {o}")
        rc2, g, err2 = run(["generate", "-m", MODEL, "-n", "6", "--threads", "2", "-q", "--json", "--no-special",
                            "-p", o["prompt"]])
        g = json.loads(g) if rc2 == 0 else {}
        check(g.get("prompt_ids") == o["prompt_ids"] and g.get("ids") == o["ids"] and g.get("text") == o["text"],
              f"turn {i}: the answer differs from a fresh generate of the same prompt: {g} vs {o}")

    # streaming: the same answers, one line each (the answers hold no newline)
    rc, out, err = run(CHAT + ["--system=Be brief."], turns)
    check(rc == 0 and out.splitlines() == [o["text"] for o in objs], f"streamed answers {out!r}")

# the context fills: refused with a message, an empty answer line, and the chat goes on after /reset
# (9 prompt tokens of 12: the answer gets the 4 that fit, announced; the second turn needs 25 and is refused)
rc, out, err = run(CHAT + ["--json", "--n-ctx", "12"], b"Hello\nWhat is an XPU?\n/reset\nHi\n")
lines = out.splitlines()
check(rc == 1 and len(lines) == 3 and lines[1] == "" and len(json.loads(lines[0])["ids"]) == 4 and
      json.loads(lines[2])["prompt"] == render([{"role": "user", "content": "Hi"}]),
      f"context full: rc {rc} {lines}")
check("the context holds 12" in err and "/reset" in err, f"context full message: {err!r}")
check("room for 4 more tokens" in err, f"an answer cut short by the context is announced: {err!r}")

# a turn with a NUL byte is refused (empty answer line), the next one is answered
rc, out, err = run(CHAT, b"Hel\0lo\nHello\n")
check(rc == 1 and len(out.splitlines()) == 2 and out.splitlines()[0] == "" and "NUL byte" in err,
      f"NUL turn: rc {rc} {out!r} {err!r}")

# Ctrl-C (SIGINT) while an answer streams stops that answer (finish reason cancelled), not the chat
p = subprocess.Popen([CLI, "chat", "-m", MODEL, "--threads", "2", "-n", "100000", "--ignore-eos"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
p.stdin.write(b"Hello\n")
p.stdin.flush()
first = p.stdout.read(8)  # the answer is streaming: the handler is in place
p.send_signal(signal.SIGINT)
p.stdin.write(b"/exit\n")
p.stdin.flush()
rest, err = p.communicate(timeout=300)
err = err.decode(errors="replace")
check(p.returncode == 0 and len(first) == 8 and "(answer stopped)" in err and (first + rest).endswith(b"\n"),
      f"SIGINT stops the answer: rc {p.returncode} {err!r}")

# no chat template, bad options
rc, out, err = run(["chat", "-m", TINY, "-q"], b"Hello\n")
check(rc == 1 and out == "" and err.count("\n") == 1 and "chat template" in err, f"no template: {rc} {err!r}")
for args, needle in ((["--temperature", "-1"], ">= 0"), (["--top-p=5"], "(0, 1]"), (["-p", "x"], "unknown option")):
    rc, out, err = run(["chat", "-m", MODEL] + args)
    check(rc == 2 and err.count("\n") == 1 and needle in err, f"chat {args}: {rc} {err!r}")
rc, out, err = run(["chat", "--help"])
check(rc == 0 and "/reset" in out and "--system" in out and "--temperature" in out, "chat --help")

print("failures:", failures)
sys.exit(1 if failures else 0)
