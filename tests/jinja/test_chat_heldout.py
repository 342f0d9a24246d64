"""Real chat templates, differential, through the public API: xpi_apply_chat_template_json (jj_driver's chat mode,
the template given as options.chat_template, no tokenizer) against jinja2 rendering as transformers'
apply_chat_template does (tools=None and documents=None unless given, the special tokens and extra keywords as
variables). Templates: the 19 of tests/data/chat_templates/heldout that the engine was never developed against,
plus the 44 others and the templates of tests/data/tokenizers (SmolLM2, Llama 3, Qwen3), each on generated conversations that go beyond goldens.json: several tools with nested
parameters, parallel tool calls with arguments as objects or JSON strings, tool results, reasoning_content,
content parts, enable_thinking / reasoning_effort, assistant prefill, Unicode and whitespace edge cases. Identical
text wherever jinja2 renders; where jinja2 raises, the same failure (class and message)."""
import datetime
import glob
import json
import os
import random
import string
import sys

from jinja_ref import make_env, render_ref, run_driver, same_error, sanitized

SRC = os.environ.get("XPI_SOURCE_DIR", ".")
TDIR = os.path.join(SRC, "tests", "data", "chat_templates")

TEXTS = ["Hello!", "What is an XPU?", "  leading and trailing  ", "line one\nline two\n\n", "Ünïcödé ✓ 日本語 🚀",
         "tabs\tand\u00a0nbsp", "{{ not a tag }} {% nor this %}", "<think>inner</think>", "", "\"quotes\" and 'apostrophes'",
         "a\\backslash", "👩\u200d💻 e\u0301", "x" * 300]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "description": "City name"},
                                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                                          "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web",
                                      "parameters": {"type": "object", "properties": {
                                          "query": {"type": "string"},
                                          "max_results": {"type": "integer", "description": "At most this many"},
                                          "filters": {"type": "object", "properties": {
                                              "site": {"type": "string"}, "recent": {"type": "boolean"}}},
                                          "tags": {"type": "array", "items": {"type": "string"}}},
                                          "required": ["query"]}}},
    {"type": "function", "function": {"name": "noop", "description": "Does nothing",
                                      "parameters": {"type": "object", "properties": {}}}},
]


def call_id(rng):
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(9))


def conversation(rng):
    """A conversation transformers users send, with the template variables it implies."""
    conv = {"messages": []}
    msgs = conv["messages"]
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": rng.choice(TEXTS[:6])})
    use_tools = rng.random() < 0.45
    if use_tools:
        conv["tools"] = rng.sample(TOOLS, rng.randint(1, 3))
    for turn in range(rng.randint(1, 3)):
        if rng.random() < 0.12:
            msgs.append({"role": "user", "content": [{"type": "text", "text": rng.choice(TEXTS)},
                                                     {"type": "text", "text": "second part"}]})
        else:
            msgs.append({"role": "user", "content": rng.choice(TEXTS)})
        last = turn == 2 or rng.random() < 0.4
        if last and rng.random() < 0.7:
            break
        a = {"role": "assistant", "content": rng.choice(TEXTS[:8])}
        if rng.random() < 0.3:
            a["reasoning_content"] = rng.choice(["Let me think.", "step 1\nstep 2", ""])
        if use_tools and rng.random() < 0.6:
            calls = []
            for _ in range(rng.randint(1, 2)):
                args = {"city": rng.choice(["Tokyo", "Zürich", "a \"quoted\" town"]), "unit": "celsius"}
                if rng.random() < 0.3:
                    args = {"query": "xpu", "max_results": rng.randint(1, 9), "filters": {"recent": True}}
                calls.append({"id": call_id(rng), "type": "function",
                              "function": {"name": "get_weather" if "city" in args else "search",
                                           "arguments": args if rng.random() < 0.7 else json.dumps(args)}})
            a["tool_calls"] = calls
            if rng.random() < 0.5:
                a["content"] = ""
            msgs.append(a)
            for c in calls:
                msgs.append({"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                             "content": rng.choice(['{"temperature": 21, "sky": "clear"}', "no results", "[1, 2]"])})
            if rng.random() < 0.5:
                msgs.append({"role": "assistant", "content": "It is 21 degrees."})
                break
        else:
            msgs.append(a)
    gen = not (msgs[-1]["role"] == "assistant" and rng.random() < 0.6)
    conv["add_generation_prompt"] = gen
    if rng.random() < 0.3:
        conv["enable_thinking"] = rng.random() < 0.5
    if rng.random() < 0.15:
        conv["reasoning_effort"] = rng.choice(["low", "medium", "high"])
    if rng.random() < 0.2:
        conv["date_string"] = "26 Jul 2026"
    conv.update({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    return conv


def main():
    now_dt = datetime.datetime(2026, 7, 26, 12, 0)
    env = make_env(now_dt)
    now = int(now_dt.timestamp())
    per = 6 if sanitized() else 30
    files = sorted(glob.glob(os.path.join(TDIR, "heldout", "*.jinja"))) + sorted(glob.glob(os.path.join(TDIR, "*.jinja")))
    sources = [(p, open(p, encoding="utf-8").read()) for p in files]
    # and the templates of the tokenizers in tests/data (SmolLM2's, Llama 3's, Qwen3's tokenizer_config.json)
    for cfg in sorted(glob.glob(os.path.join(SRC, "tests", "data", "tokenizers", "*", "tokenizer_config.json"))):
        tpl = json.load(open(cfg, encoding="utf-8")).get("chat_template")
        if isinstance(tpl, str):
            sources.append((os.path.join(TDIR, "heldout", "..", "tokenizers", os.path.basename(os.path.dirname(cfg))), tpl))
    reqs, wants, labels = [], [], []
    for path, src in sources:
        rng = random.Random("xpi-heldout-" + os.path.basename(path))
        for _ in range(per):
            conv = conversation(rng)
            variables = {"tools": None, "documents": None, **conv}  # transformers' call
            wants.append(render_ref(env, src, variables))
            reqs.append({"chat_template": src, "conversation": json.dumps(conv, ensure_ascii=False), "gen": True,
                         "now": now})
            labels.append((os.path.relpath(path, TDIR), conv))
    got = run_driver(reqs)
    failures, rendered, refused = 0, 0, 0
    for (name, conv), g, w in zip(labels, got, wants):
        if isinstance(w, tuple):
            refused += 1
            ok = isinstance(g, tuple) and same_error(g[1], w[1])
        else:
            rendered += 1
            ok = g == w
        if not ok:
            failures += 1
            if failures <= 12:
                print("MISMATCH", name, json.dumps(conv, ensure_ascii=False)[:600])
                if isinstance(g, str) and isinstance(w, str):
                    i = next((k for k in range(min(len(g), len(w))) if g[k] != w[k]), min(len(g), len(w)))
                    print("   engine", repr(g[max(0, i - 120):i + 120]), "\n   jinja2", repr(w[max(0, i - 120):i + 120]))
                else:
                    print("   engine", repr(g)[:500], "\n   jinja2", repr(w)[:500])
    heldout = sum(1 for (n, _) in labels if n.startswith("heldout"))
    print(f"{len(sources)} templates ({len({n for n, _ in labels if n.startswith('heldout')})} held out), {len(labels)} "
          f"renders ({heldout} on held-out templates): {rendered} rendered by jinja2, {refused} refused; "
          f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
