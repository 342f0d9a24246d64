"""xpuinfer chat-template and generate's chat options, end to end through the CLI:
- chat-template --template FILE --input CONV.json prints exactly what jinja2 renders as transformers calls it
  (tools/documents None unless given; no newline added), for every real template of tests/data/chat_templates on
  the goldens' conversations (a subset under the sanitizers); refusals exit 1 with the template's message;
- chat-template -m DIR takes the model's template and special tokens, which the conversation's keys override;
- --var NAME=JSON, --tools FILE, --now, reading the conversation from stdin;
- generate --chat-template / --messages / --tools / --var / -p: the prompt ids are the tokenization of the render;
- usage errors exit 2 with one line."""
import datetime
import json
import os
import subprocess
import sys
import tempfile

from jinja_ref import make_env, render_ref, sanitized

CLI = os.environ["XPI_CLI"]
DATA = os.environ["XPI_TEST_DATA"]
SRC = os.environ["XPI_SOURCE_DIR"]
TDIR = os.path.join(DATA, "chat_templates")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        if failures <= 20:
            print("FAIL", what)


def run(*args, stdin=None):
    p = subprocess.run([CLI, *args], capture_output=True, timeout=120, input=stdin)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    tmp = tempfile.mkdtemp(prefix="xpi_chat_cli_")
    now_dt = datetime.datetime(2026, 7, 26, 12, 0)
    now = str(int(now_dt.timestamp()))
    env = make_env(now_dt)
    g = json.load(open(os.path.join(TDIR, "goldens.json"), encoding="utf-8"))
    convs = {c["name"]: c for c in g["conversations"]}
    step = 13 if sanitized() else 4  # every golden renders in test_jinja_goldens; here the CLI path on a spread
    n = 0
    for k, x in enumerate(g["goldens"]):
        if k % step:
            continue
        c = convs[x["conversation"]]
        conv = {"messages": c["messages"], "add_generation_prompt": x["add_generation_prompt"], **g["special"],
                **c.get("kwargs", {})}
        if "tools" in c:
            conv["tools"] = c["tools"]
        path = os.path.join(tmp, "conv.json")
        json.dump(conv, open(path, "w", encoding="utf-8"), ensure_ascii=False)
        tpath = os.path.join(TDIR, x["template"])
        want = render_ref(env, open(tpath, encoding="utf-8").read(), {"tools": None, "documents": None, **conv})
        rc, out, err = run("chat-template", "--template", tpath, "--input", path, "--now", now)
        n += 1
        if isinstance(want, tuple):
            check(rc == 1 and err.startswith("xpuinfer chat-template: applying the chat template: chat template: ") and err.count("\n") == 1,
                  f"{x['template']} / {x['conversation']}: jinja2 refuses ({want[1]}); CLI rc {rc}: {err!r}")
        else:
            check(rc == 0 and out == want, f"{x['template']} / {x['conversation']}: rc {rc} {err!r}\n{out!r}\n{want!r}")
    print(f"chat-template: {n} renders through the CLI")

    # -m DIR: the model's template and special tokens; the conversation's keys win
    qwen = os.path.join(DATA, "tokenizers", "qwen3")
    llama = os.path.join(DATA, "tokenizers", "llama3_1")
    rc, out, err = run("chat-template", "-m", llama, "--input", "-",
                       stdin=b'[{"role": "user", "content": "hi"}]')
    check(rc == 0 and out.startswith("<|begin_of_text|><|start_header_id|>user"), f"-m llama: {rc} {out!r} {err}")
    rc, out, err = run("chat-template", "-m", llama, "--input", "-",
                       stdin=b'{"messages": [{"role": "user", "content": "hi"}], "bos_token": "[B]", '
                             b'"add_generation_prompt": false}')
    check(rc == 0 and out == "[B]<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", f"-m override: {out!r} {err}")
    rc, out, err = run("chat-template", "-m", qwen, "--input", "-", "--var", "enable_thinking=false",
                       stdin=b'[{"role": "user", "content": "hi"}]')
    check(rc == 0 and out == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
          f"--var enable_thinking: {out!r} {err}")
    tools = os.path.join(tmp, "tools.json")
    json.dump([{"type": "function", "function": {"name": "f", "parameters": {}}}], open(tools, "w"))
    rc, out, err = run("chat-template", "-m", qwen, "--input", "-", "--tools", tools,
                       stdin=b'[{"role": "user", "content": "hi"}]')
    check(rc == 0 and '<tools>\n{"type": "function", "function": {"name": "f", "parameters": {}}}\n</tools>' in out,
          f"--tools: {out!r} {err}")
    dated = os.path.join(TDIR, "meta-llama-Llama-3.2-3B-Instruct.jinja")
    rc, out, err = run("chat-template", "--template", dated, "--input", "-", "--now", now,
                       stdin=b'[{"role": "user", "content": "hi"}]')
    check(rc == 0 and "Today Date: 26 Jul 2026\n" in out, f"--now: {out!r} {err}")
    # the README's examples: examples/chat/weather.json with Qwen3's template, and examples/chat.c
    qsrc = json.load(open(os.path.join(qwen, "tokenizer_config.json"), encoding="utf-8"))["chat_template"]
    weather = json.load(open(os.path.join(SRC, "examples", "chat", "weather.json"), encoding="utf-8"))
    rc, out, err = run("chat-template", "-m", qwen, "--input", os.path.join(SRC, "examples", "chat", "weather.json"))
    want = render_ref(env, qsrc, {"tools": None, "documents": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                                  **weather})
    check(rc == 0 and out == want, f"README weather example: {rc} {err} {out!r} {want!r}")
    example = os.path.join(os.environ.get("XPI_BUILD_DIR", "build"), "example_chat")
    if os.path.exists(example):
        p = subprocess.run([example, qwen, "Hi!"], capture_output=True, timeout=60)
        want = render_ref(env, qsrc, {"messages": [{"role": "system", "content": "You are a concise assistant."},
                                                   {"role": "user", "content": "Hi!"}], "tools": None,
                                      "documents": None, "add_generation_prompt": True, "enable_thinking": False})
        check(p.returncode == 0 and p.stdout.decode() == want, f"examples/chat.c: {p.returncode} {p.stdout!r} {want!r}")
    else:
        check(False, f"{example} was not built")

    # usage errors and refusals: one line, exit 2 / 1
    bad_tpl = os.path.join(tmp, "bad.jinja")
    open(bad_tpl, "w").write("ok\n{% if %}")
    for args, code, needle in [
        (("chat-template", "--input", "x.json"), 2, "give --template FILE or -m DIR"),
        (("chat-template", "--template", dated), 2, "--input CONV.json is required"),
        (("chat-template", "--template", dated, "--input", "/nonexistent.json"), 1, "--input /nonexistent.json: cannot read the file"),
        (("chat-template", "--template", dated, "--input", tools, "--var", "x"), 2, "--var wants NAME=JSON"),
        (("chat-template", "--template", dated, "--input", tools, "--var", "d=26 Jul"), 2, "is not JSON"),
        (("chat-template", "-m", os.path.join(SRC, "examples/models/tinyfortunes"), "--input", tools), 1,
         "has no chat template"),
        (("chat-template", "--template", bad_tpl, "--input", tools), 1,
         "the chat template given in the options: template syntax error at line 2, column 7: Expected an expression"),
    ]:
        rc, out, err = run(*args, stdin=b'{"messages": 1}')
        check(rc == code and needle in err and err.count("\n") == 1 and not out, f"{args}: rc {rc}, {err!r}")

    # generate: the prompt is the tokenization of the render (tinyfortunes has no template: give one)
    tiny = os.path.join(SRC, "examples", "models", "tinyfortunes")
    tpl = os.path.join(tmp, "t.jinja")
    open(tpl, "w").write("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% if m.tool_calls %}"
                         "{{ m.tool_calls|tojson }}{% endif %}\n{% endfor %}{{ tools|length if tools else '' }}"
                         "{{ mood }}{% if add_generation_prompt %}<assistant>{% endif %}")
    msgs = os.path.join(tmp, "msgs.json")
    json.dump({"messages": [{"role": "user", "content": "The fortune"},
                            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}]},
              open(msgs, "w"))
    src = open(tpl).read()
    conv_p = [{"role": "system", "content": "Be kind"}, {"role": "user", "content": "Hello"}]
    conv_m = json.load(open(msgs))
    cases = [
        (["-p", "Hello", "--system", "Be kind"],
         render_ref(env, src, {"messages": conv_p, "tools": None, "documents": None, "add_generation_prompt": True,
                               "mood": "happy"})),
        (["--messages", msgs, "--tools", tools],
         render_ref(env, src, {**conv_m, "tools": json.load(open(tools)), "documents": None,
                               "add_generation_prompt": True, "mood": "happy"})),
    ]
    for extra, text in cases:
        rc, out, err = run("generate", "-m", tiny, "--chat", "--chat-template", tpl, "--var", 'mood="happy"', "-n", "2",
                           "--json", "-q", *extra)
        rc2, ids, err2 = run("tokenize", "-m", tiny, "-p", text)
        ok = rc == 0 and rc2 == 0 and json.loads(out)["prompt_ids"] == json.loads(ids)
        check(ok, f"generate {extra}: {rc} {out[:300]} {err} / {text!r} {ids} {err2}")
    # chat takes the same template options: the prompt of a turn is the render
    p = subprocess.run([CLI, "chat", "-m", tiny, "--chat-template", tpl, "--var", 'mood="calm"', "--tools", tools,
                        "--json", "-n", "2", "-q"], input=b"Hello\n", capture_output=True, timeout=120)
    want = render_ref(env, src, {"messages": [{"role": "user", "content": "Hello"}], "tools": json.load(open(tools)),
                                 "documents": None, "add_generation_prompt": True, "mood": "calm"})
    got = json.loads(p.stdout.decode().splitlines()[0]) if p.returncode == 0 and p.stdout else {}
    check(got.get("prompt") == want, f"chat --chat-template: {p.returncode} {p.stdout[:300]!r} {p.stderr!r}")
    for args, needle in [
        (["--tools", tools, "-p", "x"], "need --chat (or --messages)"),
        (["--messages", msgs, "-p", "x"], "--messages gives the whole conversation"),
        (["--chat", "-p", "x", "--var", "bad"], "--var wants NAME=JSON"),
        (["--chat", "-p", "x", "--var", "a=b"], "--var a: 'b' is not JSON"),
    ]:
        rc, out, err = run("generate", "-m", tiny, *args)
        check(rc == 2 and needle in err, f"generate {args}: rc {rc} {err!r}")
    rc, out, err = run("generate", "-m", tiny, "--chat", "-p", "x", "-q")
    check(rc == 1 and "has no chat template" in err and "--chat-template" in err, f"generate --chat without template: {err!r}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
