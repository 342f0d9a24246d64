"""The CLI's shell habits, on the bundled tinyfortunes model:
- stop tokens and stop strings are not in the text (streamed or --json), --include-stop keeps a stop string,
  finish_reason says length or stop, streamed text equals the --json text (hold-back never withdraws text);
- -p - and -f - read stdin; -f DIR and an unreadable file are errors, a prompt line with a NUL byte that line's
  error (the other lines run);
- out-of-range values of every numeric option of every command exit 2 before the model loads, naming the range;
- --opt=value works like --opt value (every option goes through one parser);
- -v shows the library's warnings (unused checkpoint tensors, a CPU kernel fallback), --strict makes unused
  tensors an error, errors stay one line;
- a NaN weight fails generation with the layer and step named, on the CPU and on xpu:0 (zesim), and --json
  --logprobs never prints a bare nan (stdout stays valid JSON)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

CLI = os.environ["XPI_CLI"]
SRC = os.environ["XPI_SOURCE_DIR"]
MODEL = os.path.join(SRC, "examples", "models", "tinyfortunes")
ZESIM = os.environ.get("XPI_ZESIM")
failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)
    return cond


def run(args, stdin=None, env=None, timeout=120):
    p = subprocess.run([CLI] + args, input=stdin, capture_output=True, timeout=timeout,
                       env=env if env is not None else os.environ)
    err = p.stderr.decode(errors="replace")
    check("Sanitizer" not in err and "runtime error:" not in err, f"sanitizer report from {args}: {err[-2000:]}")
    return p.returncode, p.stdout.decode(errors="replace"), err


def gen(*args, stdin=None, env=None):
    return run(["generate", "-m", MODEL, "-q", "--threads", "2", *args], stdin=stdin, env=env)


def one_line_error(rc, out, err, want_rc, needle, what):
    check(rc == want_rc and out == "" and err.count("\n") == 1 and needle in err,
          f"{what}: rc {rc} (want {want_rc}), stdout {out!r}, stderr {err!r} (want one line with {needle!r})")


# ---- stop tokens, stop strings, finish_reason
rc, out, err = gen("-p", "Hello", "-n", "8")
check(rc == 0 and out == "!\n", f"eos text never printed: {out!r} {err}")
rc, out, err = gen("-p", "A computer", "-n", "40", "--json")
o = json.loads(out)
check(o["text"] == " is like a raisin, not a stain you can." and o["ids"][-1] == 4093 and
      o["finish_reason"] == "stop", f"--json: eos id kept in ids, not in text: {o}")
rc, out, err = gen("-p", "A computer", "-n", "3", "--json")
check(json.loads(out)["finish_reason"] == "length", f"finish_reason length: {out}")
for extra, want in ((["--stop", "rais"], " is like a "), (["--stop=rais"], " is like a "),
                    (["--stop", "rais", "--include-stop"], " is like a rais"),
                    (["--stop", "zzz", "--stop", "a st"], " is like a raisin, not "),
                    (["--stop", "raisin!"], " is like a raisin, not a stain you can.")):  # "rais..." held, then released
    rc, out, err = gen("-p", "A computer", "-n", "40", "--json", *extra)
    o = json.loads(out) if rc == 0 else {}
    check(o.get("text") == want and o.get("finish_reason") == "stop", f"{extra}: {o} {err}")
    rc, out, err = gen("-p", "A computer", "-n", "40", *extra)
    check(rc == 0 and out == want + "\n", f"{extra} streamed: {out!r} (want {want!r})")

# ---- stdin and prompt files
def untimed(line):  # a --json line without its timings (ttft_s, tok_s differ from run to run)
    o = json.loads(line)
    o.pop("ttft_s", None), o.pop("tok_s", None)
    return o


rc, ref, err = gen("-p", "A computer", "-n", "6", "--json")
rc, out, err = gen("-p", "-", "-n", "6", "--json", stdin=b"A computer\n\n")
check(rc == 0 and untimed(out) == untimed(ref), f"-p - reads the prompt from stdin: {out!r} vs {ref!r} {err}")
rc, out, err = gen("-f", "-", "-n", "6", "--json", stdin=b"A computer\n\nLove is\n")
lines = out.splitlines()
check(rc == 0 and len(lines) == 2 and untimed(lines[0]) == untimed(ref) and json.loads(lines[1])["prompt"] == "Love is",
      f"-f - reads prompt lines from stdin: {out!r} {err}")
tmp = tempfile.mkdtemp(prefix="xpi-cli-")
one_line_error(*gen("-f", tmp), 1, "is a directory", "-f DIR")
one_line_error(*gen("-f", os.path.join(tmp, "missing.txt")), 1, "cannot read the file", "-f missing")
one_line_error(*gen("-p", "-", stdin=b"A com\0puter"), 1, "NUL byte", "-p - with a NUL byte")
# a line that cannot run is that prompt's error; the others run (the batch goes on), exit status 1
rc, out, err = gen("-f", "-", "-n", "2", stdin=b"A computer\nLo\0ve is\nNever\n")
check(rc == 1 and out.count("\n") == 2 and err.count("\n") == 1 and "line 2 holds a NUL byte" in err,
      f"a prompt line with a NUL byte: rc {rc} {out!r} {err!r}")
if os.geteuid() != 0:  # root reads anything
    unreadable = os.path.join(tmp, "secret.txt")
    open(unreadable, "w").write("hi\n")
    os.chmod(unreadable, 0)
    one_line_error(*gen("-f", unreadable), 1, "cannot read the file", "-f unreadable")

# ---- out-of-range values: usage errors (exit 2) before the model loads (the model path does not exist)
NOMODEL = os.path.join(tmp, "no-such-model")
gen_bad = [("--temperature", "-1", ">= 0"), ("--temperature", "nan", "not a number"), ("--temperature", "x", "not a number"),
           ("--top-p", "5", "in (0, 1]"), ("--top-p", "0", "in (0, 1]"), ("--top-p", "-0.5", "in (0, 1]"),
           ("--min-p", "-1", "in [0, 1]"), ("--min-p", "1.5", "in [0, 1]"), ("--repeat-penalty", "-1", "> 0"),
           ("--repeat-penalty", "0", "> 0"), ("-n", "-1", "[0, "), ("--max-new-tokens", "1e3", "not an integer"),
           ("--top-k", "-1", "[0, "), ("--seed", "-1", "[0, "), ("--threads", "-1", "[0, 1024]"),
           ("--threads", "5000", "[0, 1024]"), ("--n-ctx", "0", "[1, ")]
for opt, val, needle in gen_bad:
    for cmd in ("generate", "chat"):
        args = [cmd, "-m", NOMODEL, opt, val] + (["-p", "x"] if cmd == "generate" else [])
        rc, out, err = run(args)
        one_line_error(rc, out, err, 2, needle, f"{cmd} {opt} {val}")
        check("model" not in err.split(":", 2)[-1] or "no-such-model" not in err, f"{cmd} {opt}: loaded first: {err}")
        if opt.startswith("--"):  # short options take their value as the next argument only
            rc, out, err = run(args[:3] + [opt + "=" + val] + args[5:])
            one_line_error(rc, out, err, 2, needle, f"{cmd} {opt}={val}")
one_line_error(*run(["generate", "-m", NOMODEL, "-p", "x", "--json", "--logprobs", "0"]), 2, "[1, 1000]", "--logprobs 0")
one_line_error(*run(["generate", "-m", NOMODEL, "-p", "x", "--json=yes"]), 2, "--json takes no value", "--json=yes")
one_line_error(*run(["generate", "-m", NOMODEL, "-p", "x", "--temperature"]), 2, "needs a value", "missing value")
for args, needle in ((["-r", "0"], "[1, 1000]"), (["--reps=1001"], "[1, 1000]"), (["-n", "-1"], "[0, "),
                     (["-t", "-1"], "[0, 4096]"), (["--n-prompt=8,-2"], "'-2' is not an integer"),
                     (["-d", "x"], "'x' is not an integer"), (["--quant", "q3"], "'q3' is not one of")):
    one_line_error(*run(["bench", "-m", NOMODEL] + args), 2, needle, f"bench {args}")
one_line_error(*run(["detokenize", "-m", MODEL, "-1"]), 2, "not a token id", "detokenize -1")
one_line_error(*run(["devices", "--json=1"]), 2, "takes no value", "devices --json=1")
one_line_error(*run(["download", "--revision"]), 2, "needs a value", "download --revision")

# ---- --opt=value equals --opt value, for every option of generate (and the shared table of chat)
spaced = ["--max-new-tokens", "5", "--temperature", "0.7", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.01",
          "--repeat-penalty", "1.1", "--seed", "3", "--stop", "zzz", "--attn", "eager", "--threads", "2",
          "--device", "cpu", "--dtype", "bf16", "--kv-dtype", "f16", "--n-ctx", "64", "--logprobs", "2"]
joined = [spaced[i] + "=" + spaced[i + 1] for i in range(0, len(spaced), 2)]
rc, a, err = run(["generate", "-m", MODEL, "-p", "Love is", "-q", "--json"] + spaced)
rc2, b, err2 = run(["generate", "--model=" + MODEL, "--prompt=Love is", "-q", "--json"] + joined)
check(rc == 0 and rc2 == 0 and untimed(a) == untimed(b) and json.loads(a)["ids"],
      f"--opt=value differs: {a!r} vs {b!r} {err} {err2}")
rc, a, err = run(["bench", "-m", MODEL, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "--json"])
rc2, b, err2 = run(["bench", "--model=" + MODEL, "--n-prompt=8", "--n-gen=2", "--reps=1", "--threads=1", "--json",
                    "--depth=0", "--device=cpu"])
check(rc == 0 and rc2 == 0 and [json.loads(x)["test"] for x in a.splitlines()] ==
      [json.loads(x)["test"] for x in b.splitlines()], f"bench --opt=value: {a} {b} {err2}")

# ---- -v: the library's warnings on stderr; --strict; errors stay one line
three = os.path.join(tmp, "three-layers")
os.makedirs(three)
for f in ("tokenizer.json", "tokenizer_config.json", "model.safetensors", "generation_config.json"):
    os.symlink(os.path.join(MODEL, f), os.path.join(three, f))
cfg = json.load(open(os.path.join(MODEL, "config.json")))
cfg["num_hidden_layers"] = 3
del cfg["layer_types"]
json.dump(cfg, open(os.path.join(three, "config.json"), "w"))
rc, out, err = run(["generate", "-m", three, "-p", "Hi", "-n", "2", "-q"])
check(rc == 0 and err == "", f"without -v the library's warnings stay silent: {err!r}")
rc, out, err = run(["generate", "-m", three, "-p", "Hi", "-n", "2", "-q", "-v"])
check(rc == 0 and "warning: " in err and "11 checkpoint tensors the model never reads" in err and
      "model.layers.3.mlp.up_proj.weight" in err, f"-v shows unused tensors: {err!r}")
rc, out, err = run(["generate", "-m", three, "-p", "Hi", "-n", "2", "-q", "--strict"])
one_line_error(rc, out, err, 1, "never reads (strict)", "--strict")
env = dict(os.environ, XPI_CPU_ISA="avx1024")
rc, out, err = run(["generate", "-m", MODEL, "-p", "Hi", "-n", "2", "-q", "--verbose"], env=env)
check(rc == 0 and "XPI_CPU_ISA='avx1024'" in err, f"-v shows a kernel-table warning: {err!r}")
one_line_error(*run(["generate", "-m", MODEL, "-p", "Hi", "-q", "-v", "--device", "gpu"]), 1, "unknown device 'gpu'",
               "-v keeps errors on one line")


# ---- a NaN weight: XPI_ERR_NUMERIC naming the layer and the step; stdout stays valid JSON
def nan_model(dst, tensor, index):
    os.makedirs(dst)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json"):
        os.symlink(os.path.join(MODEL, f), os.path.join(dst, f))
    data = bytearray(open(os.path.join(MODEL, "model.safetensors"), "rb").read())
    (hlen,) = struct.unpack("<Q", data[:8])
    h = json.loads(data[8:8 + hlen])
    at = 8 + hlen + h[tensor]["data_offsets"][0] + 2 * index
    data[at:at + 2] = struct.pack("<H", 0x7FC0)  # bf16 NaN
    open(os.path.join(dst, "model.safetensors"), "wb").write(data)


nan = os.path.join(tmp, "nan")
nan_model(nan, "model.layers.2.mlp.down_proj.weight", 0)
devices = [("cpu", None)]
if ZESIM:
    zenv = {k: v for k, v in os.environ.items() if not k.startswith(("ZE_", "ZESIM_"))}
    zenv.update({"ZE_ENABLE_ALT_DRIVERS": ZESIM, "ZESIM_DEVICES": "0000:3a:00.0=512M"})
    devices.append(("xpu:0", zenv))
for dev, env in devices:
    for extra in ([], ["--json"], ["--json", "--logprobs", "3"]):
        rc, out, err = run(["generate", "-m", nan, "-p", "A computer", "-q", "--device", dev] + extra, env=env)
        check(rc == 1 and err.count("\n") == 1 and "generation step 0" in err and
              "output of layer 2 (model.layers.2.*)" in err, f"{dev} {extra}: NaN weight: rc {rc} {err!r}")
        for line in out.splitlines() if "--json" in extra else []:
            try:
                json.loads(line)
            except ValueError:
                check(False, f"{dev} {extra}: stdout is not JSON: {line!r}")
        check("nan" not in out.lower(), f"{dev} {extra}: a bare nan on stdout: {out!r}")
if not ZESIM:
    print("xpu:0 part skipped: zesim is not in this tree")

shutil.rmtree(tmp, ignore_errors=True)
print("failures:", failures)
sys.exit(1 if failures else 0)
