"""The public C API of the Hub client through ctypes on the shared library: the size query on the path, the
progress callback (monotonic bytes of each file, ending at its total), cancellation from the callback
(XPI_ERR_CANCELLED, the partial file kept and resumed by the next call), folders returned as is."""
import ctypes
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubserver import TINY, Checker, HubServer, HubState, Repo, Sandbox, tiny_files  # noqa: E402

check = Checker()
FILES = tiny_files()
WEIGHTS = FILES["model.safetensors"]
SHA = hashlib.sha256(WEIGHTS).hexdigest()
XPI_OK, XPI_ERR_BUFFER_TOO_SMALL, XPI_ERR_NOT_FOUND, XPI_ERR_CANCELLED = 0, 6, 11, 12

PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)


class Options(ctypes.Structure):  # xpi_download_options in include/xpuinfer.h
    _fields_ = [("struct_size", ctypes.c_size_t), ("revision", ctypes.c_char_p), ("offline", ctypes.c_int),
                ("quiet", ctypes.c_int), ("progress", PROGRESS), ("progress_user", ctypes.c_void_p)]


def lib_path():
    build = os.environ.get("XPI_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    return os.path.join(build, "libxpuinfer.so")


def reexec_under_asan():
    """A sanitizer build of the library needs the ASan runtime loaded first: re-run this script with it
    preloaded (leak checking off: the Python interpreter itself would be reported)."""
    if "XPI_ASAN_REEXEC" in os.environ:
        return
    deps = subprocess.run(["ldd", lib_path()], capture_output=True, text=True).stdout
    asan = [l.split("=>")[1].split()[0] for l in deps.splitlines() if "libasan" in l and "=>" in l]
    if asan:
        env = dict(os.environ, LD_PRELOAD=asan[0], XPI_ASAN_REEXEC="1",
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=0")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def load_lib():
    lib = ctypes.CDLL(lib_path())
    lib.xpi_hub_download.argtypes = [ctypes.c_char_p, ctypes.POINTER(Options), ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t)]
    lib.xpi_hub_download.restype = ctypes.c_int
    lib.xpi_last_error.restype = ctypes.c_char_p
    lib.xpi_download_options_default.argtypes = [ctypes.POINTER(Options)]
    return lib


def main():
    reexec_under_asan()
    lib = load_lib()
    state = HubState()
    tiny = state.add(Repo("org/tiny", FILES))
    srv = HubServer(state)
    sb = Sandbox(srv.endpoint)
    os.environ.update(sb.env())

    def download(repo, opts=None, cap=4096):
        n = ctypes.c_size_t(0)
        buf = ctypes.create_string_buffer(cap) if cap else None
        s = lib.xpi_hub_download(repo.encode(), ctypes.byref(opts) if opts else None, buf, cap, ctypes.byref(n))
        return s, (buf.value.decode() if buf is not None and s == XPI_OK else None), n.value

    try:
        o = Options()
        lib.xpi_download_options_default(ctypes.byref(o))
        check(o.struct_size == ctypes.sizeof(Options), "options struct_size %d" % o.struct_size)

        # -- progress callback on a first download
        calls = []

        @PROGRESS
        def record(what, done, total, user):
            calls.append((what.decode(), done, total))
            return 0

        o.progress = record
        s, path, n = download("org/tiny", o)
        snap = os.path.join(sb.repo_dir("org/tiny"), "snapshots", tiny.commit)
        check(s == XPI_OK and path == snap and n == len(snap), "download via the API: %d %s" % (s, lib.xpi_last_error()))
        w = [(d, t) for f, d, t in calls if f == "model.safetensors"]
        check(w and all(t == len(WEIGHTS) for _, t in w), "progress total is the file size")
        check(all(a[0] <= b[0] for a, b in zip(w, w[1:])), "progress bytes never go back")
        check(w and w[-1] == (len(WEIGHTS), len(WEIGHTS)), "progress ends at the total: %s" % (w[-1:],))

        # -- size query: NULL buffer gives the length and XPI_ERR_BUFFER_TOO_SMALL
        s, _, n = download("org/tiny", None, cap=0)
        check(s == XPI_ERR_BUFFER_TOO_SMALL and n == len(snap), "size query: %d %d" % (s, n))
        s, _, n = download("org/tiny", None, cap=len(snap))
        check(s == XPI_ERR_BUFFER_TOO_SMALL and n == len(snap), "one byte short (no room for the NUL)")

        # -- a folder is returned as is
        s, path, n = download(TINY)
        check(s == XPI_OK and path == TINY, "folder as is: %s" % path)

        # -- cancel from the callback mid-file; the next call resumes the partial file
        sb2 = Sandbox(srv.endpoint)
        os.environ.update(sb2.env())
        state.throttle = 0.01
        state.reset_counts()

        @PROGRESS
        def cancel(what, done, total, user):
            return 1 if what == b"model.safetensors" and done >= 1_000_000 else 0

        o.progress = cancel
        s, _, _ = download("org/tiny", o)
        err = lib.xpi_last_error().decode()
        check(s == XPI_ERR_CANCELLED and "cancelled" in err, "cancel: %d %s" % (s, err))
        part = os.path.join(sb2.repo_dir("org/tiny"), "blobs", SHA + ".incomplete")
        kept = os.path.getsize(part) if os.path.exists(part) else 0
        check(kept >= 1_000_000, "partial file kept after cancel (%d bytes)" % kept)
        check(not os.path.lexists(os.path.join(sb2.repo_dir("org/tiny"), "snapshots", tiny.commit,
                                               "model.safetensors")), "cancelled weights not in snapshots/")
        state.throttle = 0.0
        state.reset_counts()
        s, path, _ = download("org/tiny", None)
        check(s == XPI_OK, "resume after cancel: %s" % lib.xpi_last_error())
        # The cancelled connection's server thread may still count a chunk after the reset, so the proof is the
        # resumed request itself: it asks for exactly the bytes after the kept part.
        ranges = [l[4] for l in state.log if l[1].startswith("/cdn/") and l[0] == "GET"]
        check(ranges == ["bytes=%d-" % kept], "resume asks only for the rest: %s (kept %d)" % (ranges, kept))
        sb2.cleanup()

        # -- offline option and a miss
        o.progress = PROGRESS()
        o.offline = 1
        s, path, _ = download("org/tiny", o)
        check(s == XPI_OK and path == os.path.join(sb2.repo_dir("org/tiny"), "snapshots", tiny.commit) or
              s == XPI_ERR_NOT_FOUND, "offline option honoured")
        s, _, _ = download("org/absent", o)
        check(s == XPI_ERR_NOT_FOUND and b"offline mode is on" in lib.xpi_last_error(), "offline miss")
    finally:
        srv.stop()
        sb.cleanup()
    return check.done()


if __name__ == "__main__":
    sys.exit(main())
