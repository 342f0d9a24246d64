"""`xpuinfer serve` driven by the official openai Python client on 127.0.0.1: 32 concurrent requests (chat and
completions, streaming and not) whose greedy texts equal `xpuinfer generate`'s for the same prompts (its ids
decoded by Hugging Face tokenizers without special tokens, as OpenAI servers return them), token counts in usage,
stream_options.include_usage, logprobs against generate --logprobs, stop strings (cut before the stop, also across
stream chunks), seeded sampling equal to generate's, max_completion_tokens, tools passed to the chat template
(prompt tokens counted against jinja2 + tokenizers), --chat-template, GET /v1/models, the client's errors (n = 2,
unknown model, a context overflow), and server-wide defaults from the CLI's options (-n, --stop, --no-think)."""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
import serveutil as su  # noqa: E402

import jinja2  # noqa: E402
import jinja2.ext  # noqa: E402
import openai  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

fail = su.Failures()
MODEL = su.chat_model_dir()
TOK = Tokenizer.from_file(os.path.join(su.TF, "tokenizer.json"))
N = 16
PROMPTS = ["The meaning of life is", "A computer", "Love is", "The best way", "Friends are", "Time", "Money",
           "A wise man"]
USERS = ["Tell me a fortune.", "What is love?", "Say something wise.", "Why?", "Hello", "What is time?",
         "Who are you?", "Give me advice."]


def visible(ids):
    return TOK.decode(ids, skip_special_tokens=True)


# references from the CLI: completions (prompt as text) and chats (messages through the model's template)
ref_c = su.cli_generate(MODEL, PROMPTS, ["-n", str(N), "--greedy", "--logprobs", "3"])
ref_m = su.cli_generate(MODEL, [json.dumps({"messages": [{"role": "user", "content": u}]}) for u in USERS],
                        ["-n", str(N), "--greedy", "--logprobs", "3"], suffix=".jsonl")

srv = su.Server(MODEL, ["--parallel", "16"])
client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def complete(i, stream):
    kw = dict(model="tiny", prompt=PROMPTS[i], max_tokens=N, temperature=0)
    if not stream:
        r = client.completions.create(**kw)
        return r.choices[0].text, r.choices[0].finish_reason, r.usage
    text, finish, usage = "", None, None
    for ch in client.completions.create(stream=True, stream_options={"include_usage": True}, **kw):
        if ch.choices:
            text += ch.choices[0].text
            finish = ch.choices[0].finish_reason or finish
        if ch.usage:
            usage = ch.usage
    return text, finish, usage


def chat(i, stream):
    kw = dict(model="tiny", messages=[{"role": "user", "content": USERS[i]}], max_tokens=N, temperature=0)
    if not stream:
        r = client.chat.completions.create(**kw)
        if r.choices[0].message.role != "assistant":
            fail(f"chat {i}: role {r.choices[0].message.role}")
        return r.choices[0].message.content, r.choices[0].finish_reason, r.usage
    text, finish, usage, roles = "", None, None, []
    for ch in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw):
        if ch.choices:
            d = ch.choices[0].delta
            if d.role:
                roles.append(d.role)
            text += d.content or ""
            finish = ch.choices[0].finish_reason or finish
        if ch.usage:
            usage = ch.usage
    if roles != ["assistant"]:
        fail(f"chat stream {i}: roles {roles}")
    return text, finish, usage


# 32 requests at once: 8 prompts x {completion, chat} x {stream, not}
jobs = [(f, i, s) for f in (complete, chat) for i in range(len(PROMPTS)) for s in (False, True)]
with ThreadPoolExecutor(len(jobs)) as ex:
    results = list(ex.map(lambda j: j[0](j[1], j[2]), jobs))
for (f, i, s), (text, finish, usage) in zip(jobs, results):
    ref = (ref_c if f is complete else ref_m)[i]
    what = f"{f.__name__} {i} stream={s}"
    fail.check(text == visible(ref["ids"]), f"{what}: text {text!r} != generate's {visible(ref['ids'])!r}")
    fail.check(finish == ref["finish_reason"], f"{what}: finish_reason {finish} != {ref['finish_reason']}")
    if fail.check(usage is not None, f"{what}: no usage"):
        fail.check((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) ==
                   (ref["prompt_tokens"], ref["completion_tokens"], ref["prompt_tokens"] + ref["completion_tokens"]),
                   f"{what}: usage {usage} vs generate {ref['prompt_tokens']}/{ref['completion_tokens']}")

# logprobs: the CLI's top-3 log-softmax values (1e-3: batched vs batched, both fp32 logits of the same engine)
r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": USERS[0]}], max_tokens=N,
                                   temperature=0, logprobs=True, top_logprobs=3)
lp = r.choices[0].logprobs.content
ref = ref_m[0]["logprobs"]
if fail.check(len(lp) == len(ref), f"chat logprobs: {len(lp)} entries, generate has {len(ref)}"):
    for k, (a, b) in enumerate(zip(lp, ref)):
        got = [t.logprob for t in a.top_logprobs]
        want = [t["logprob"] for t in b]
        fail.check(len(got) == 3 and all(abs(x - y) < 1e-3 for x, y in zip(got, want)),
                   f"chat logprobs token {k}: {got} vs {want}")
        fail.check(abs(a.logprob - want[0]) < 1e-3, f"chat logprob of the greedy token {k}: {a.logprob} vs {want[0]}")
        fail.check(a.top_logprobs[0].token == TOK.decode([b[0]["id"]], skip_special_tokens=False)
                   and bytes(a.bytes) == a.token.encode(), f"chat logprobs token {k}: {a.token!r} / {a.bytes}")
r = client.completions.create(model="tiny", prompt=PROMPTS[1], max_tokens=N, temperature=0, logprobs=2)
lp = r.choices[0].logprobs
ref = ref_c[1]["logprobs"]
fail.check(len(lp.tokens) == len(ref) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset),
           f"completion logprobs lengths {len(lp.tokens)} / {len(ref)}")
for k in range(min(len(ref), len(lp.tokens))):
    fail.check(abs(lp.token_logprobs[k] - ref[k][0]["logprob"]) < 1e-3, f"completion token_logprobs[{k}]")
    fail.check(len(lp.top_logprobs[k]) >= 1 and abs(max(lp.top_logprobs[k].values()) - ref[k][0]["logprob"]) < 1e-3,
               f"completion top_logprobs[{k}] {lp.top_logprobs[k]}")
fail.check(lp.text_offset[0] == 0 and all(b >= a for a, b in zip(lp.text_offset, lp.text_offset[1:])),
           f"text_offset {lp.text_offset}")

# sampling with logprobs: the sampled token's own logprob (xpi_token_event.logprob) is the log-softmax of the raw
# logits, so where it is among the alternatives it has their value, and never more than the best one
r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": USERS[2]}], max_tokens=N,
                                   temperature=1.5, seed=3, logprobs=True, top_logprobs=5)
seen = 0
for k, t in enumerate(r.choices[0].logprobs.content):
    alts = {a.token: a.logprob for a in t.top_logprobs}
    fail.check(t.logprob <= max(alts.values()) + 1e-6 and t.logprob <= 0, f"sampled logprob {k}: {t.logprob} vs {alts}")
    if t.token in alts and list(alts).count(t.token) == 1:
        seen += 1
        fail.check(abs(alts[t.token] - t.logprob) < 1e-5, f"sampled token {k} {t.token!r}: {t.logprob} vs {alts[t.token]}")
fail.check(seen >= N // 2, f"only {seen} sampled tokens among their top 5")

# stop strings: the text ends before the first occurrence, finish_reason stop, in both modes; a multi-token stop
# string exercises the held-back tail of the stream
for i in range(len(PROMPTS)):
    full = visible(ref_c[i]["ids"])
    words = full.split()
    if len(words) < 4:
        continue
    stop = " ".join(words[2:4])  # likely spans tokens
    want = full[:full.index(stop)]
    r = client.completions.create(model="tiny", prompt=PROMPTS[i], max_tokens=N, temperature=0, stop=[stop, "@@@"])
    fail.check((r.choices[0].text, r.choices[0].finish_reason) == (want, "stop"),
               f"stop {stop!r}: {r.choices[0].text!r} {r.choices[0].finish_reason} (want {want!r})")
    text, finish = "", None
    for ch in client.completions.create(model="tiny", prompt=PROMPTS[i], max_tokens=N, temperature=0, stop=stop,
                                        stream=True):
        text += ch.choices[0].text
        finish = ch.choices[0].finish_reason or finish
    fail.check((text, finish) == (want, "stop"), f"stream stop {stop!r}: {text!r} {finish} (want {want!r})")
    break

# seeded sampling: the same text as generate with the same options, and the same text twice
samp = su.cli_generate(MODEL, [PROMPTS[0]], ["-n", str(N), "--temperature", "0.9", "--seed", "7"])[0]
texts = [client.completions.create(model="tiny", prompt=PROMPTS[0], max_tokens=N, temperature=0.9,
                                   seed=7).choices[0].text for _ in range(2)]
fail.check(texts[0] == texts[1] == visible(samp["ids"]), f"seeded sampling {texts} vs generate {visible(samp['ids'])!r}")

# max_completion_tokens (the chat API's newer name)
r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": USERS[1]}],
                                   max_completion_tokens=3, temperature=0, extra_body={"ignore_eos": True})
fail.check(r.usage.completion_tokens == 3 and r.choices[0].finish_reason == "length", f"max_completion_tokens: {r.usage}")

# tools reach the template: prompt tokens equal jinja2's rendering (as transformers') tokenized by tokenizers
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]
r = client.chat.completions.create(model="tiny", messages=msgs, tools=tools, max_tokens=2, temperature=0)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
text = env.from_string(su.QWEN3_TEMPLATE).render(messages=msgs, tools=tools, add_generation_prompt=True,
                                                 bos_token=None, eos_token="<|endoftext|>")
want = len(TOK.encode(text, add_special_tokens=False).ids)
fail.check("get_weather" in text and r.usage.prompt_tokens == want,
           f"tools: {r.usage.prompt_tokens} prompt tokens, jinja2 + tokenizers give {want}")

# models, and the client's view of errors
models = client.models.list()
fail.check([m.id for m in models.data] == ["tiny"], f"models {models}")
fail.check(client.models.retrieve("tiny").id == "tiny", "models.retrieve")
for what, call, exc, code in [
    ("n=2", lambda: client.completions.create(model="tiny", prompt="x", n=2, max_tokens=2), openai.BadRequestError, None),
    ("unknown model", lambda: client.completions.create(model="gpt-4", prompt="x", max_tokens=2),
     openai.NotFoundError, "model_not_found"),
    ("context", lambda: client.completions.create(model="tiny", prompt="x", max_tokens=5000),
     openai.BadRequestError, "context_length_exceeded"),
    ("top_logprobs", lambda: client.chat.completions.create(model="tiny", messages=msgs, top_logprobs=30, logprobs=True),
     openai.BadRequestError, None),
]:
    try:
        call()
        fail(f"{what}: no error")
    except exc as e:
        fail.check(code is None or e.code == code, f"{what}: code {e.code}")
        fail.check(isinstance(e.body, dict) and "message" in e.body, f"{what}: body {e.body}")
    except Exception as e:  # noqa: BLE001
        fail(f"{what}: {type(e).__name__}: {e}")

m = srv.metrics()
fail.check(m.get('xpuinfer_requests_total{endpoint="/v1/chat/completions",status="200"}', 0) >= 16 and
           m.get('xpuinfer_requests_total{endpoint="/v1/completions",status="400"}', 0) >= 2 and
           m.get("xpuinfer_sequences_running") == 0 and m.get("xpuinfer_kv_blocks_used") == 0 and
           m.get("xpuinfer_readback_bytes_total", 0) > 0,
           f"metrics after the run: {m}")
rc = srv.stop()
fail.check(rc == 0, f"exit status {rc} after SIGTERM")
# --chat-template (examples/chatml.jinja, the README's) for a model without a template
srv2 = su.Server(su.TF, ["--chat-template", os.path.join(su.SRC, "examples", "chatml.jinja")])
c2 = openai.OpenAI(base_url=srv2.url + "/v1", api_key="unused", max_retries=0, timeout=120)
r = c2.chat.completions.create(model="tiny", messages=msgs, max_tokens=2, temperature=0)
text = env.from_string(open(os.path.join(su.SRC, "examples", "chatml.jinja")).read()).render(
    messages=msgs, add_generation_prompt=True)
want = len(TOK.encode(text, add_special_tokens=False).ids)
fail.check(r.usage.prompt_tokens == want, f"--chat-template: {r.usage.prompt_tokens} prompt tokens, jinja2 gives {want}")
fail.check(srv2.stop() == 0, "exit status (template file)")

# server-wide defaults from the CLI's shared options: -n (max_tokens), --stop (a request's "stop", even empty,
# replaces it), --no-think (a template variable the request's chat_template_kwargs override)
full = visible(ref_c[1]["ids"])
words = full.split()
if fail.check(len(words) >= 4, f"reference too short for --stop: {full!r}"):
    STOP = " " + words[2]
    srv3 = su.Server(MODEL, ["--no-think", "-n", "5", "--stop", STOP])
    c3 = openai.OpenAI(base_url=srv3.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    r = c3.completions.create(model="tiny", prompt=PROMPTS[1], max_tokens=N, temperature=0)
    fail.check((r.choices[0].text, r.choices[0].finish_reason) == (full[:full.index(STOP)], "stop"),
               f"--stop {STOP!r} as the default: {r.choices[0].text!r} {r.choices[0].finish_reason}")
    r = c3.completions.create(model="tiny", prompt=PROMPTS[1], max_tokens=N, temperature=0, stop=[])
    fail.check(r.choices[0].text == full, f"stop [] over --stop: {r.choices[0].text!r} (want {full!r})")
    user = [{"role": "user", "content": USERS[0]}]

    def qwen3_tokens(**kw):
        text = env.from_string(su.QWEN3_TEMPLATE).render(messages=user, add_generation_prompt=True, bos_token=None,
                                                         eos_token="<|endoftext|>", **kw)
        return len(TOK.encode(text, add_special_tokens=False).ids)

    r = c3.chat.completions.create(model="tiny", messages=user, temperature=0, stop=[], extra_body={"ignore_eos": True})
    fail.check(r.usage.completion_tokens == 5 and r.choices[0].finish_reason == "length",
               f"-n 5 as the default max_tokens: {r.usage}")
    fail.check(r.usage.prompt_tokens == qwen3_tokens(enable_thinking=False),
               f"--no-think: {r.usage.prompt_tokens} prompt tokens, jinja2 gives {qwen3_tokens(enable_thinking=False)}")
    r = c3.chat.completions.create(model="tiny", messages=user, max_tokens=1, temperature=0,
                                   extra_body={"chat_template_kwargs": {"enable_thinking": True}})
    fail.check(r.usage.prompt_tokens == qwen3_tokens(enable_thinking=True) != qwen3_tokens(enable_thinking=False),
               f"chat_template_kwargs over --no-think: {r.usage.prompt_tokens} prompt tokens")
    fail.check(srv3.stop() == 0, "exit status (defaults)")

if fail.n:
    print("".join(srv.log))
print(f"{fail.n} failures")
sys.exit(1 if fail.n else 0)
