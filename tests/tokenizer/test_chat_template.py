"""Chat templates, differential: xpi_apply_chat_template (the Jinja engine, through tests/tokenizer/tok_driver) against the
real Jinja templates of tokenizer_config.json rendered with jinja2 the way transformers' apply_chat_template
does (sandboxed environment, trim_blocks, lstrip_blocks, loopcontrols), on generated conversations: system
prompts, multi-turn, assistant turns with <think> reasoning before or after the last user turn, tool
responses, contents with leading/trailing whitespace of all kinds (Llama 3 trims), add_generation_prompt
and enable_thinking both ways. The texts must be identical.

The official Llama 3.1 / 3.3 Instruct templates (tests/data/chat_templates/*.jinja, saved from the Hub by
llama.cpp's scripts/get_chat_template.py; 3.1 and 3.3 are byte-identical) are compared the same way on
system/user/assistant conversations and on tool calls with their results; an empty conversation fails under
jinja2 (the template reads messages[0]) and must fail here. The Llama 3.2 one dates its system block with
strftime_now: rendered at a fixed instant on both sides, and with the current date when the clock is not fixed."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("jinja2 is missing from the test venv: run scripts/setup.sh --test (it installs jinja2)")

SRC = os.environ["XPI_SOURCE_DIR"]
BUILD = os.environ["XPI_BUILD_DIR"]
DRIVER = next((p for p in (os.path.join(BUILD, "tests", "tok_driver"), os.path.join(BUILD, "tok_driver"))
               if os.path.exists(p)), os.path.join(BUILD, "tests", "tok_driver"))
# Under the sanitizers (about 10x slower) the same generators run on a tenth of the inputs.
SCALE = 10 if subprocess.run([DRIVER, "--sanitized"], capture_output=True).stdout.strip() == b"1" else 1
N = 400 // SCALE  # conversations per tokenizer

PIECES = ["Hi", "What is an XPU?", "日本語で", "😀", "a\nb", "\n", "\n\n", " ", "\t", "\u3000", "\u00a0", "\x1c",
          "\u0085", "<think>", "</think>", "reasoning step", "<tool_response>", "</tool_response>", "42", "é",
          "<|im_end|>", "{{ x }}", "'quote'", "\"dq\""]


def content(rng):
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 7)))


def conversation(rng):
    msgs = []
    if rng.random() < 0.4:
        msgs.append({"role": "system", "content": content(rng)})
    for _ in range(rng.randint(0, 5)):
        role = rng.choices(["user", "assistant", "tool", "system"], [5, 4, 1, 1])[0]
        c = content(rng)
        if role == "assistant" and rng.random() < 0.4:
            c = "<think>" + rng.choice(["\n", "", "\n\n"]) + content(rng) + "\n</think>" + rng.choice(["\n\n", "", "\n"]) + c
        if role == "user" and rng.random() < 0.15:
            c = "<tool_response>" + c + "</tool_response>"
        msgs.append({"role": role, "content": c})
    return msgs


# Qwen2 and Qwen2.5 instruct templates (not in tests/data): rendered from these texts by jinja2 and by us.
QWEN2_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                  "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
                  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
                  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


# Llama 3.1 trims message contents with Python's str.strip(): every character isspace() knows, and some it does not.
LLAMA_PIECES = PIECES + ["\r\n", "\x0b", "\x0c", "\x1f", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f",
                         "\u200b", "\ufeff", "<|eot_id|>", "<|start_header_id|>", "Today Date: 1 Jan 2000", "Ω",
                         "👩\u200d💻", "e\u0301", "\U0001d11e"]
LLAMA31_TEMPLATES = ("meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja")
LLAMA32_TEMPLATE = "meta-llama-Llama-3.2-3B-Instruct.jinja"


def llama_content(rng):
    return "".join(rng.choice(LLAMA_PIECES) for _ in range(rng.randint(0, 8)))


def llama_conversation(rng):
    """At least one message (the template reads messages[0]); an optional leading system message (the one the
    template moves into its dated system block), then turns that mostly alternate, now and then a later system."""
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": llama_content(rng)})
    role = "user"
    for _ in range(rng.randint(0 if msgs else 1, 7)):
        r = "system" if rng.random() < 0.05 else role
        msgs.append({"role": r, "content": llama_content(rng)})
        role = "assistant" if role == "user" else "user"
    return msgs


def make_env(now):
    """jinja2 configured as transformers' chat_template_utils does, with strftime_now at a chosen instant."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)
    return env


def run_driver(tok_dir, reqs, env=None):
    inp = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reqs)
    p = subprocess.run([DRIVER, tok_dir], input=inp.encode(), capture_output=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    if p.returncode:
        sys.exit(f"tok_driver failed: {p.stderr.decode(errors='replace')}")
    lines = p.stdout.decode().split("\n")[:-1]
    assert len(lines) == len(reqs)
    return [json.loads(line) for line in lines]


def llama_dir(tmp, template_file):
    """The Llama 3 tokenizer of tests/data with the template as chat_template.jinja (transformers 5 layout, which
    wins over the older template inside its tokenizer_config.json)."""
    d = os.path.join(tmp, template_file)
    shutil.copytree(os.path.join(SRC, "tests/data/tokenizers/llama3_1"), d)
    shutil.copy(os.path.join(SRC, "tests/data/chat_templates", template_file), os.path.join(d, "chat_template.jinja"))
    return d


def check_llama31(tmp, failures):
    import datetime
    env = make_env(datetime.datetime(2031, 2, 3))  # unused by 3.1/3.3: they never call strftime_now
    compared = 0
    for name in LLAMA31_TEMPLATES:
        d = llama_dir(tmp, name)
        with open(os.path.join(d, "chat_template.jinja"), encoding="utf-8") as f:
            tpl = env.from_string(f.read())
        bos = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))["bos_token"]
        rng = random.Random(f"xpi-chat-{name}")
        reqs = [{"chat": llama_conversation(rng), "gen": rng.random() < 0.7, "think": rng.random() < 0.5}
                for _ in range(N)]
        for r, got in zip(reqs, run_driver(d, reqs)):
            # transformers passes no date_string, tools=None, documents=None
            want = tpl.render(messages=r["chat"], tools=None, documents=None, add_generation_prompt=r["gen"],
                              bos_token=bos, eos_token="<|eot_id|>")
            compared += 1
            text = bytes.fromhex(got["text"]).decode() if "text" in got else got
            if text != want:
                failures.append((name, r, text, want))
        # tool calls and their results (arguments as objects or JSON strings), then the ipython turn
        tool_reqs = []
        for k in range(N // 4 + 1):
            args = {"city": rng.choice(["Oslo", "東京", "a\"b"]), "days": rng.randint(1, 9)}
            call = {"type": "function", "function": {"name": "get_weather",
                                                      "arguments": args if k % 2 else json.dumps(args)}}
            msgs = [{"role": "user", "content": llama_content(rng)},
                    {"role": "assistant", "tool_calls": [call]},
                    {"role": rng.choice(["tool", "ipython"]), "content": rng.choice(['{"t": 21}', "sunny", ""])}]
            tool_reqs.append({"chat": msgs, "gen": True})
        for r, got in zip(tool_reqs, run_driver(d, tool_reqs)):
            try:
                want = tpl.render(messages=r["chat"], tools=None, documents=None, add_generation_prompt=True,
                                  bos_token=bos, eos_token="<|eot_id|>")
            except jinja2.exceptions.TemplateError as e:
                want = "error"
            compared += 1
            text = bytes.fromhex(got["text"]).decode() if "text" in got else "error"
            if text != want:
                failures.append((name, r, text, want))
        empty = run_driver(d, [{"chat": [], "gen": True}])[0]
        if "UndefinedError" not in empty.get("error", ""):
            failures.append((name, [], empty, "an UndefinedError, as jinja2 gives"))
        try:  # the template itself fails on an empty conversation, as we do
            tpl.render(messages=[], add_generation_prompt=True, bos_token=bos)
            failures.append((name, [], "rendered", "jinja2 fails on an empty conversation"))
        except jinja2.exceptions.UndefinedError:
            pass
    return compared


def check_llama32(tmp, failures, rng):
    """Llama 3.2 dates its system block with strftime_now (transformers: the current local date). With the clock
    fixed (the request's "now"), every conversation must render as jinja2 does at that instant; without it, the
    render carries today's date."""
    import datetime
    d = llama_dir(tmp, LLAMA32_TEMPLATE)
    with open(os.path.join(d, "chat_template.jinja"), encoding="utf-8") as f:
        tpl = make_env(datetime.datetime(2026, 11, 29)).from_string(f.read())
    convs = [llama_conversation(rng) for _ in range(N)]
    now = int(datetime.datetime(2026, 11, 29, 12).timestamp())  # local noon, as strftime_now renders local time
    reqs = [{"chat": c, "gen": bool(i % 2), "now": now} for i, c in enumerate(convs)]
    got = run_driver(d, reqs)
    for r, g in zip(reqs, got):
        want = tpl.render(messages=r["chat"], add_generation_prompt=r["gen"], bos_token="<|begin_of_text|>")
        text = bytes.fromhex(g["text"]).decode() if "text" in g else g
        if text != want:
            failures.append((LLAMA32_TEMPLATE, r, text, want))
    today = datetime.datetime.now().strftime("Today Date: %d %b %Y\n")
    g = run_driver(d, [{"chat": [{"role": "user", "content": "hi"}], "gen": True}])[0]
    text = bytes.fromhex(g["text"]).decode() if "text" in g else str(g)
    if today not in text:
        failures.append((LLAMA32_TEMPLATE, "hi", text, today))
    return len(reqs)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    failures, compared = [], 0
    tmp = tempfile.mkdtemp(prefix="xpi_chat_")
    dirs = {name: os.path.join(SRC, "tests/data/tokenizers", name) for name in ("qwen3", "llama3_1")}
    for name, tpl in (("qwen2", QWEN2_TEMPLATE), ("qwen2_5", QWEN25_TEMPLATE)):
        d = dirs[name] = os.path.join(tmp, name)
        os.makedirs(d)
        shutil.copy(os.path.join(SRC, "examples/models/tinyfortunes/tokenizer.json"), d)
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"chat_template": tpl, "eos_token": "<|im_end|>"}, f)
    for name, tok_dir in dirs.items():
        cfg = json.load(open(os.path.join(tok_dir, "tokenizer_config.json"), encoding="utf-8"))
        tpl = env.from_string(cfg["chat_template"])
        rng = random.Random(f"xpi-chat-{name}")
        reqs = []
        for _ in range(N):
            msgs = conversation(rng)
            if not msgs or rng.random() < 0.1:
                msgs.append({"role": "user", "content": content(rng)})
            if name.startswith("qwen2"):  # their templates index messages[0]: never empty
                msgs = msgs or [{"role": "user", "content": "x"}]
            reqs.append({"chat": msgs, "gen": rng.random() < 0.8, "think": rng.random() < 0.5})
        inp = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reqs)
        p = subprocess.run([DRIVER, tok_dir], input=inp.encode(), capture_output=True, timeout=120)
        if p.returncode:
            sys.exit(f"tok_driver failed: {p.stderr.decode(errors='replace')}")
        lines = p.stdout.decode().split("\n")[:-1]
        assert len(lines) == len(reqs)
        for r, line in zip(reqs, lines):
            got = json.loads(line)
            want = tpl.render(messages=r["chat"], tools=None, documents=None, add_generation_prompt=r["gen"],
                              enable_thinking=r["think"], bos_token=cfg.get("bos_token"), eos_token=cfg.get("eos_token"))
            compared += 1
            text = bytes.fromhex(got["text"]).decode() if "text" in got else got
            if text != want:
                failures.append((name, r, text, want))
    compared += check_llama31(tmp, failures)
    compared += check_llama32(tmp, failures, random.Random("xpi-chat-llama32"))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"compared {compared} conversations")
    for name, r, got, want in failures[:8]:
        print("MISMATCH", name, json.dumps(r, ensure_ascii=False)[:400], "\n  got ", repr(got)[:400], "\n  want",
              repr(want)[:400])
    print(f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
