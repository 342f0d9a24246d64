"""Downloads through `xpuinfer download` from a local Hub look-alike: the cache layout huggingface_hub uses,
offline use, sharded checkpoints, optional files, pinned commits, a hand-made huggingface_hub cache, two
processes at once, the progress bar, and `xpuinfer generate -m org/name` once generation exists."""
import hashlib
import os
import pty
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubserver import (CLI, TINY, Checker, HubServer, HubState, Repo, Sandbox, closed_port,  # noqa: E402
                       git_blob_sha1, split_safetensors, tiny_files)

check = Checker()
FILES = tiny_files()
GEN = ["generate", "-p", "The fortune", "-n", "8", "--greedy"]
WEIGHTS = FILES["model.safetensors"]


def expected_etag(name, data):
    return hashlib.sha256(data).hexdigest() if name.endswith(".safetensors") else git_blob_sha1(data)


def check_layout(sb, repo, label):
    """The cache exactly as huggingface_hub lays it out."""
    rd = sb.repo_dir(repo.repo_id)
    check(sorted(os.listdir(rd)) in (["blobs", "refs", "snapshots"], [".no_exist", "blobs", "refs", "snapshots"]),
          "%s: repo folder holds %s" % (label, sorted(os.listdir(rd))))
    with open(os.path.join(rd, "refs", "main"), "rb") as f:
        check(f.read() == repo.commit.encode(), "%s: refs/main is the bare commit hash" % label)
    check(os.listdir(os.path.join(rd, "snapshots")) == [repo.commit], "%s: one snapshot named by the commit" % label)
    snap = os.path.join(rd, "snapshots", repo.commit)
    etags = set()
    for name, data in repo.files.items():
        p = os.path.join(snap, name)
        etag = expected_etag(name, data)
        etags.add(etag)
        if not check(os.path.islink(p), "%s: snapshots/<commit>/%s is a symlink" % (label, name)):
            continue
        check(os.readlink(p) == "../../blobs/" + etag, "%s: %s -> %s (relative, by etag)" % (label, name, os.readlink(p)))
        with open(p, "rb") as f:
            check(f.read() == data, "%s: %s has the served bytes" % (label, name))
    blobs = sorted(os.listdir(os.path.join(rd, "blobs")))
    check(blobs == sorted(etags), "%s: blobs are exactly the etags (no .incomplete left): %s" % (label, blobs))
    check(os.path.isdir(os.path.join(sb.cache, ".locks", "models--" + repo.repo_id.replace("/", "--"))),
          "%s: blob locks live in .locks/<repo folder> as huggingface_hub's" % label)
    return snap


def main():
    state = HubState()
    tiny = state.add(Repo("org/tiny", FILES))
    nogen = state.add(Repo("org/nogen", {k: v for k, v in FILES.items() if k != "generation_config.json"}))
    shards, index = split_safetensors(WEIGHTS)
    sharded_files = {k: v for k, v in FILES.items() if k != "model.safetensors"}
    sharded_files.update(shards)
    sharded_files["model.safetensors.index.json"] = index
    sharded = state.add(Repo("org/sharded", sharded_files))
    srv = HubServer(state)
    sb = Sandbox(srv.endpoint)
    sb_gen = Sandbox(srv.endpoint)
    gen_ref = None
    try:
        # -- first use is `xpuinfer generate -m org/name`: xpi_model_load downloads through xpi_hub_download
        rc, ref, err = sb_gen.run(GEN + ["-m", TINY], HF_HUB_OFFLINE=1)
        if rc == 2 and "not implemented" in err:
            print("note: generate is still the TEMPORARY placeholder; repo-id generation checked after integration")
        else:
            check(rc == 0 and ref, "generate from the folder: %d %s" % (rc, err))
            gen_ref = ref
            rc, txt, err = sb_gen.run(GEN + ["-m", "org/tiny"])
            check(rc == 0 and txt == gen_ref, "generate -m org/tiny downloads, then generates as from the folder: "
                  "%r vs %r %s" % (txt, gen_ref, err))
            check_layout(sb_gen, tiny, "generate")
        state.reset_counts()

        # -- first run: everything downloaded, token only sent to the Hub's own host
        rc, out, err = sb.run(["download", "org/tiny", "--quiet"], HF_TOKEN="hf_testtoken")
        check(rc == 0, "first download: rc %d, stderr %s" % (rc, err))
        check(err == "", "nothing on stderr without a terminal (the library never prints): %r" % err)
        snap = check_layout(sb, tiny, "tiny")
        check(out == snap, "download prints the snapshot folder (%r)" % out)
        resolve = [l for l in state.log if "/resolve/" in l[1]]
        cdn = [l for l in state.log if l[1].startswith("/cdn/")]
        check(resolve and all(l[3] == "Bearer hf_testtoken" for l in resolve), "Authorization sent to the Hub")
        check(cdn and all(l[3] is None for l in cdn), "Authorization dropped on the CDN host: %s" % cdn)
        check(all(l[2].startswith("localhost:") for l in cdn), "the CDN is reached by its own host name")
        check(state.bytes_served.get("model.safetensors") == len(WEIGHTS), "weights served once, whole")

        # -- second run online: nothing downloaded again
        state.reset_counts()
        rc, out2, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and out2 == snap, "second online run: rc %d out %s err %s" % (rc, out2, err))
        check(not state.gets, "second run GETs nothing: %s" % state.gets)

        # -- the token file under HF_HOME is used when HF_TOKEN is unset
        os.makedirs(sb.hf_home, exist_ok=True)
        with open(os.path.join(sb.hf_home, "token"), "w") as f:
            f.write("hf_fromfile\n")
        state.reset_counts()
        sb.run(["download", "org/tiny"])
        check(any(l[3] == "Bearer hf_fromfile" for l in state.log), "token read from $HF_HOME/token")
        os.remove(os.path.join(sb.hf_home, "token"))

        # -- optional generation_config.json absent: .no_exist marker, success
        rc, out, err = sb.run(["download", "org/nogen"])
        check(rc == 0, "repo without generation_config.json: rc %d %s" % (rc, err))
        check_layout(sb, nogen, "nogen")
        check(os.path.isfile(os.path.join(sb.repo_dir("org/nogen"), ".no_exist", nogen.commit,
                                          "generation_config.json")), ".no_exist/<commit>/generation_config.json")

        # -- sharded checkpoint: index + every shard
        rc, out, err = sb.run(["download", "org/sharded"])
        check(rc == 0, "sharded download: rc %d %s" % (rc, err))
        check_layout(sb, sharded, "sharded")
        check(os.path.isfile(os.path.join(sb.repo_dir("org/sharded"), ".no_exist", sharded.commit,
                                          "model.safetensors")), "absent model.safetensors recorded in .no_exist")

        # -- revision given as @rev and --revision (a pinned commit answers from the cache alone)
        rc, out, err = sb.run(["download", "org/tiny@" + tiny.commit])
        check(rc == 0 and out == snap, "org/tiny@<commit>: %d %s %s" % (rc, out, err))

        # -- two processes downloading the same model at once
        state.throttle = 0.02
        sb2 = Sandbox(srv.endpoint)
        state.reset_counts()
        procs = [subprocess.Popen([CLI, "download", "org/tiny"], env=sb2.env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=30) for p in procs]
        state.throttle = 0.0
        check(all(p.returncode == 0 for p in procs), "concurrent downloads succeed: %s" % [o[1] for o in outs])
        check(outs[0][0] == outs[1][0], "both print the same snapshot")
        check_layout(sb2, tiny, "concurrent")
        check(state.gets.get("model.safetensors") == 1, "the lock made one process wait and reuse the blob (%s GETs)"
              % state.gets.get("model.safetensors"))

        # -- progress bar on a terminal; none with --quiet or HF_HUB_DISABLE_PROGRESS_BARS
        def run_tty(extra_args, **env):
            sb3 = Sandbox(srv.endpoint)
            master, slave = pty.openpty()
            chunks = []
            reader = threading.Thread(target=lambda: _drain(master, chunks), daemon=True)
            reader.start()
            p = subprocess.run([CLI, "download", "org/tiny"] + extra_args, env=sb3.env(**env), stderr=slave,
                               stdout=subprocess.PIPE, timeout=30)
            os.close(slave)
            reader.join(5)
            os.close(master)
            sb3.cleanup()
            return p.returncode, b"".join(chunks).decode(errors="replace")

        rc, bar = run_tty([])
        check(rc == 0 and "model.safetensors" in bar and "ETA" in bar and "B/s" in bar,  # B/s .. GB/s: any speed
              "progress bar drawn on a terminal: %r" % bar[-300:])
        check(bar.count("ETA done") == 1, "the bar of a file is finished once: %r" % bar[-300:])
        rc, bar = run_tty(["--quiet"])
        check(rc == 0 and bar == "", "--quiet: no bar (%r)" % bar[-200:])
        rc, bar = run_tty([], HF_HUB_DISABLE_PROGRESS_BARS=1)
        check(rc == 0 and bar == "", "HF_HUB_DISABLE_PROGRESS_BARS=1: no bar (%r)" % bar[-200:])
        sb2.cleanup()
    finally:
        srv.stop()

    # -- server gone: offline by env and by flag, and the unreachable Hub falls back to the cache
    dead = "http://127.0.0.1:%d" % closed_port()
    sb.endpoint = dead
    rc, out, err = sb.run(["download", "org/tiny"], HF_HUB_OFFLINE=1)
    check(rc == 0 and out == snap, "HF_HUB_OFFLINE=1 with the server stopped: %d %s %s" % (rc, out, err))
    rc, out, err = sb.run(["download", "org/sharded", "--offline"])
    check(rc == 0 and out.endswith(sharded.commit), "--offline, sharded: %d %s" % (rc, err))
    rc, out, err = sb.run(["download", "org/tiny"])
    check(rc == 0 and out == snap, "unreachable Hub: the cached snapshot serves (%d %s)" % (rc, err))
    rc, out, err = sb.run(["download", "org/other"], HF_HUB_OFFLINE=1)
    check(rc != 0 and "not in the cache" in err and "offline" in err, "offline miss is explained: %s" % err)

    # -- a cache laid out by hand the way huggingface_hub writes it (a ref with a newline, nested blobs)
    hand = Repo("someone/handmade", FILES)
    rd = sb.repo_dir(hand.repo_id)
    os.makedirs(os.path.join(rd, "blobs"))
    os.makedirs(os.path.join(rd, "refs"))
    snapdir = os.path.join(rd, "snapshots", hand.commit)
    os.makedirs(snapdir)
    with open(os.path.join(rd, "refs", "main"), "w") as f:
        f.write(hand.commit + "\n")
    for name, data in FILES.items():
        etag = expected_etag(name, data)
        with open(os.path.join(rd, "blobs", etag), "wb") as f:
            f.write(data)
        os.symlink(os.path.join("..", "..", "blobs", etag), os.path.join(snapdir, name))
    rc, out, err = sb.run(["download", "someone/handmade"], HF_HUB_OFFLINE=1)
    check(rc == 0 and out == snapdir, "hand-made huggingface_hub cache read: %d %s %s" % (rc, out, err))
    rc, out, err = sb.run(["download", "someone/handmade", "--revision", hand.commit])
    check(rc == 0 and out == snapdir, "pinned commit with the Hub unreachable: %d %s" % (rc, err))

    # -- generation from a repo id, offline from the cache the online run below wrote
    if gen_ref is not None:
        rc, txt, err = sb_gen.run(GEN + ["-m", "org/tiny"], HF_HUB_OFFLINE=1)
        check(rc == 0 and txt == gen_ref, "generate -m org/tiny offline matches the folder: %r vs %r %s"
              % (txt, gen_ref, err))
    sb_gen.cleanup()
    sb.cleanup()
    return check.done()


def _drain(fd, chunks):
    while True:
        try:
            b = os.read(fd, 4096)
        except OSError:
            return
        if not b:
            return
        chunks.append(b)


if __name__ == "__main__":
    sys.exit(main())
