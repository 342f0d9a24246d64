"""The cache is shared with huggingface_hub (the reference, installed with `tokenizers` in the venv): a model
that Python downloaded is used by xpuinfer without a byte fetched again, a model that xpuinfer downloaded is
found by huggingface_hub offline and passes its cache scan, and both write the same tree."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubserver import Checker, HubServer, HubState, Repo, Sandbox, closed_port, split_safetensors, tiny_files  # noqa

check = Checker()


def tree(root):
    """{relative path: link target or 'file'/'dir'} without huggingface_hub's CACHEDIR.TAG and lock files."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            if name == "CACHEDIR.TAG" or rel.startswith(".locks"):
                continue
            out[rel] = os.readlink(p) if os.path.islink(p) else ("dir" if os.path.isdir(p) else "file")
    return out


def main():
    state = HubState()
    files = tiny_files()
    state.add(Repo("org/tiny", files))
    shards, index = split_safetensors(files["model.safetensors"])
    sharded = {k: v for k, v in files.items() if k != "model.safetensors"}
    sharded.update(shards)
    sharded["model.safetensors.index.json"] = index
    state.add(Repo("org/sharded", sharded))
    srv = HubServer(state)
    ours, theirs = Sandbox(srv.endpoint), Sandbox(srv.endpoint)
    os.environ.update({"HF_ENDPOINT": srv.endpoint, "HF_HOME": theirs.hf_home, "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                       "HF_HUB_DISABLE_TELEMETRY": "1"})
    os.environ.pop("HF_TOKEN", None)
    try:
        import huggingface_hub as hfh
    except ImportError:
        print("note: huggingface_hub is not installed; interoperability not checked")
        srv.stop()
        return check.done()
    try:
        for repo, names in (("org/tiny", files), ("org/sharded", sharded)):
            # Python first: then xpuinfer must reuse every blob
            for name in names:
                hfh.hf_hub_download(repo, name, cache_dir=theirs.cache)
            state.reset_counts()
            rc, out, err = theirs.run(["download", repo])
            check(rc == 0 and out.startswith(theirs.repo_dir(repo)), "%s: xpuinfer on Python's cache: %s" % (repo, err))
            check(not state.gets, "%s: nothing fetched again (%s)" % (repo, state.gets))

            # xpuinfer first: then huggingface_hub finds everything offline
            rc, out, err = ours.run(["download", repo])
            check(rc == 0, "%s: xpuinfer download: %s" % (repo, err))
            for name in names:
                try:
                    p = hfh.hf_hub_download(repo, name, cache_dir=ours.cache, local_files_only=True)
                    with open(p, "rb") as f:
                        ok = f.read() == names[name]
                except Exception as e:  # noqa: BLE001 - any failure is the finding
                    ok, p = False, repr(e)
                check(ok, "%s: huggingface_hub finds %s offline in xpuinfer's cache (%s)" % (repo, name, p))
            # same tree, byte for byte in names and link targets
            a, b = tree(ours.repo_dir(repo)), tree(theirs.repo_dir(repo))
            check(a == b, "%s: identical cache trees:\n ours %s\n theirs %s" % (
                repo, sorted(set(a.items()) - set(b.items())), sorted(set(b.items()) - set(a.items()))))
        info = hfh.scan_cache_dir(ours.cache)
        check(not info.warnings, "huggingface_hub's scan_cache_dir finds no problem: %s" % info.warnings)
        check(sorted(r.repo_id for r in info.repos) == ["org/sharded", "org/tiny"], "scan lists both repos")
    finally:
        srv.stop()
    ours.endpoint = "http://127.0.0.1:%d" % closed_port()
    rc, out, err = ours.run(["download", "org/sharded"], HF_HUB_OFFLINE=1)
    check(rc == 0, "offline after both: %s" % err)
    ours.cleanup()
    theirs.cleanup()
    return check.done()


if __name__ == "__main__":
    sys.exit(main())
