"""The reference for the Jinja engine's tests: jinja2 (PyPI, test-only) configured exactly as transformers'
apply_chat_template configures it (chat_template_utils._compile_jinja_template), and a runner for
tests/jinja/jj_driver, the engine behind a JSON-lines pipe."""
import json
import os
import subprocess
import sys
from datetime import datetime

try:
    import jinja2
    import jinja2.ext
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("jinja2 is missing from the test venv: run scripts/setup.sh (it installs jinja2)")

BUILD = os.environ.get("XPI_BUILD_DIR", "build")
DRIVER = next((p for p in (os.path.join(BUILD, "tests", "jj_driver"), os.path.join(BUILD, "jj_driver"))
               if os.path.exists(p)), os.path.join(BUILD, "tests", "jj_driver"))


class AssistantTracker(Extension):
    """transformers' {% generation %} tag (its body renders as is)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now=None):
    """ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks) + loopcontrols + generation, with transformers'
    tojson, raise_exception and strftime_now (at `now`, a datetime; the current time when None)."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return (now or datetime.now()).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render_ref(env, src, variables):
    """jinja2's render, or ("error", "ExceptionClass: message")."""
    try:
        key = (id(env), src)
        if key not in _compiled:
            _compiled[key] = env.from_string(src)
        return _compiled[key].render(**variables)
    except Exception as e:  # the template refuses: the engine must refuse too
        return ("error", f"{type(e).__name__}: {e}")


def sanitized():
    return subprocess.run([DRIVER, "--sanitized"], capture_output=True).stdout.strip() == b"1"


def run_driver(reqs):
    """Renders each request ({"t", "v": JSON text, "now", "limits"} or {"chat_template", "conversation", "now"})
    with the engine: the output text, or ("error", message)."""
    inp = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reqs)
    p = subprocess.run([DRIVER], input=inp.encode(), capture_output=True, timeout=600)
    if p.returncode:
        sys.exit(f"jj_driver failed ({p.returncode}): {p.stderr.decode(errors='replace')[-4000:]}")
    out = []
    for line in p.stdout.decode().split("\n")[:-1]:
        o = json.loads(line)
        out.append(bytes.fromhex(o["out"]).decode() if "out" in o else ("error", o["error"]))
    if len(out) != len(reqs):
        sys.exit(f"jj_driver answered {len(out)} of {len(reqs)} requests")
    return out


def norm_error(msg):
    """The engine's error message as jinja2's "Class: text" (position prefixes and raise_exception's suffix
    removed; syntax errors get the class "Template*Error")."""
    import re
    m = re.match(r"(?:chat template: )?template syntax error at line \d+, column \d+: (.*)$", msg, re.S)
    if m:
        return "Template*Error: " + m.group(1)
    m = re.match(r"(?:chat template: )?line \d+, column \d+: (.*)$", msg, re.S)
    if m:
        return m.group(1)
    m = re.match(r"(?:chat template: )?(.*) \(raised by the template at line \d+, column \d+\)$", msg, re.S)
    if m:
        return "TemplateError: " + m.group(1)
    return msg


def same_error(ours, theirs):
    """Same failure: same exception class and message (jinja2's messages are cut at 200 characters in goldens)."""
    o = norm_error(ours)
    if o.startswith("Template*Error: "):
        return theirs.startswith(("TemplateSyntaxError", "TemplateAssertionError")) and \
            theirs.split(": ", 1)[-1] == o.split(": ", 1)[1]
    return o == theirs
