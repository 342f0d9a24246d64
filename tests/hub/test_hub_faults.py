"""Fault injection against `xpuinfer download`: interrupted transfers resume with Range (within a run and
across runs) without refetching finished bytes; 500s and stalls are retried; wrong sizes and wrong sha256
are rejected and never reach snapshots/; every error (401/403, 404 repo/file/revision, bad shard names,
disk full, unreachable Hub) exits non-zero with a message a person can act on."""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubserver import Checker, HubServer, HubState, Repo, Sandbox, closed_port, tiny_files  # noqa: E402

check = Checker()
FILES = tiny_files()
WEIGHTS = FILES["model.safetensors"]
SHA = hashlib.sha256(WEIGHTS).hexdigest()
CUT = 3_000_000  # where dropped connections cut the weights


def weights_state(sb, repo, label):
    """(blob exists, .incomplete size or None, snapshot link exists)"""
    rd = sb.repo_dir(repo.repo_id)
    part = os.path.join(rd, "blobs", SHA + ".incomplete")
    return (os.path.exists(os.path.join(rd, "blobs", SHA)),
            os.path.getsize(part) if os.path.exists(part) else None,
            os.path.lexists(os.path.join(rd, "snapshots", repo.commit, "model.safetensors")))


def good_weights(sb, repo):
    p = os.path.join(sb.repo_dir(repo.repo_id), "snapshots", repo.commit, "model.safetensors")
    with open(p, "rb") as f:
        return f.read() == WEIGHTS


def main():
    state = HubState()
    tiny = state.add(Repo("org/tiny", FILES))
    state.add(Repo("org/gated", FILES, token="hf_granted"))
    state.add(Repo("org/notok", {k: v for k, v in FILES.items() if k != "tokenizer.json"}))
    state.add(Repo("org/noweights", {k: v for k, v in FILES.items() if k != "model.safetensors"}))
    evil = dict(FILES)
    del evil["model.safetensors"]
    evil["model.safetensors.index.json"] = b'{"weight_map": {"a": "../../../escape.safetensors"}}'
    state.add(Repo("org/evil", evil))
    srv = HubServer(state)
    try:
        def fresh():
            state.reset_counts()
            state.faults.clear()
            state.size_delta.clear()
            return Sandbox(srv.endpoint)

        # -- connection dropped mid-file: resumed with Range in the same run, finished bytes not refetched
        sb = fresh()
        state.faults["model.safetensors"] = ["drop:%d" % CUT]
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and good_weights(sb, tiny), "drop mid-file then resume: %d %s" % (rc, err))
        check(state.bytes_served["model.safetensors"] == len(WEIGHTS),
              "served %d bytes for a %d-byte file" % (state.bytes_served["model.safetensors"], len(WEIGHTS)))
        ranges = [l[4] for l in state.log if l[1].startswith("/cdn/") and l[0] == "GET"]
        check(ranges == [None, "bytes=%d-" % CUT], "second request asks for the rest: %s" % ranges)
        sb.cleanup()

        # -- across runs: no retries left, the partial file stays in blobs/ only, the next run resumes it
        sb = fresh()
        state.faults["model.safetensors"] = ["drop:%d" % CUT]
        rc, out, err = sb.run(["download", "org/tiny"], XPI_HUB_MAX_RETRIES=0)
        check(rc != 0 and "run again to resume" in err, "interrupted run fails clearly: %s" % err)
        check(weights_state(sb, tiny, "") == (False, CUT, False),
              "only blobs/<sha>.incomplete holds the part: %s" % (weights_state(sb, tiny, ""),))
        state.reset_counts()
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and good_weights(sb, tiny), "next run completes: %s" % err)
        check(state.bytes_served.get("model.safetensors") == len(WEIGHTS) - CUT,
              "next run fetched only the rest (%s bytes)" % state.bytes_served.get("model.safetensors"))
        sb.cleanup()

        # -- a server that ignores Range (200, whole file) or answers the wrong part: start over, never append
        for fault in ("norange", "badrange"):
            sb = fresh()
            state.faults["model.safetensors"] = ["drop:%d" % CUT]
            sb.run(["download", "org/tiny"], XPI_HUB_MAX_RETRIES=0)
            state.faults["model.safetensors"] = [fault]
            rc, out, err = sb.run(["download", "org/tiny"])
            check(rc == 0 and good_weights(sb, tiny), "%s after a partial download: %d %s" % (fault, rc, err))
            sb.cleanup()

        # -- 500 then success; a stalled transfer times out and resumes
        sb = fresh()
        state.faults["model.safetensors"] = ["500", "500"]
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and good_weights(sb, tiny) and state.gets["model.safetensors"] == 3,
              "two 500s retried: %d %s %s" % (rc, state.gets, err))
        sb.cleanup()
        sb = fresh()
        state.faults["model.safetensors"] = ["stall:%d" % CUT]
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and good_weights(sb, tiny), "stall timed out and resumed: %d %s" % (rc, err))
        check(state.bytes_served["model.safetensors"] == len(WEIGHTS), "stall: no byte fetched twice")
        sb.cleanup()
        # a server that drips 2 bytes/s after CUT bytes is never stalled (the per-attempt timeout never fires):
        # the overall low-speed limit (here 1024 bytes/s over 2 s) ends the attempt, which resumes; -v shows it
        sb = fresh()
        state.faults["model.safetensors"] = ["drip:%d" % CUT]
        t0 = time.time()
        rc, out, err = sb.run(["download", "-v", "org/tiny"], XPI_HUB_LOW_SPEED_TIME=2)
        took = time.time() - t0
        check(rc == 0 and good_weights(sb, tiny), "drip: low-speed limit, then resumed: %d %s" % (rc, err))
        check(took < 20, "drip: done in %.1f s" % took)
        check("slower than 1024 bytes/s for 2 s; retrying" in err and "warning" in err, "-v shows the retry: %s" % err)
        ranges = [l[4] for l in state.log if l[1].startswith("/cdn/") and l[0] == "GET"]
        check(len(ranges) == 2 and ranges[1] and int(ranges[1][6:-1]) >= CUT, "drip: resumed after CUT: %s" % ranges)
        sb.cleanup()
        sb = fresh()
        state.faults["model.safetensors"] = ["drip:%d*" % CUT]
        rc, out, err = sb.run(["download", "org/tiny"], XPI_HUB_LOW_SPEED_TIME=1, XPI_HUB_MAX_RETRIES=1)
        check(rc != 0 and "slower than 1024 bytes/s for 1 s" in err and "2 attempts" in err and "resume" in err,
              "persistent drip gives up with a clear error: %d %s" % (rc, err))
        check(len(err.splitlines()) == 1, "without -v the error is one line: %r" % err)
        sb.cleanup()
        sb = fresh()
        state.faults["model.safetensors"] = ["500*"]
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc != 0 and "HTTP 500" in err and "4 attempts" in err, "persistent 500 gives up: %s" % err)
        check(state.gets["model.safetensors"] == 4, "XPI_HUB_MAX_RETRIES=3 means 4 attempts")
        sb.cleanup()

        # -- the metadata request: 503s retried; a renamed repo answered by a relative redirect is followed
        sb = fresh()
        state.head_faults = [503, 502]
        state.renames["old/tiny"] = "org/tiny"
        rc, out, err = sb.run(["download", "old/tiny"])
        check(rc == 0 and out.endswith("models--old--tiny/snapshots/" + tiny.commit),
              "HEAD 503/502 retried, relative 307 followed, cached under the name asked for: %d %s %s" % (rc, out, err))
        check(state.head_faults == [], "both injected HEAD failures were met")
        # a Hub that does not answer in HF_HUB_ETAG_TIMEOUT: the cached snapshot serves, else a clear error
        state.head_faults = ["stall"]
        rc, out2, err = sb.run(["download", "old/tiny"], HF_HUB_ETAG_TIMEOUT=1)
        check(rc == 0 and out2 == out, "metadata timeout falls back to the cache: %d %s" % (rc, err))
        state.head_faults = [503] * 4
        rc, out2, err = sb.run(["download", "old/tiny"])
        check(rc == 0 and out2 == out and not state.head_faults, "Hub outage (503 x4) falls back to the cache: %s" % err)
        check(err == "", "without -v the fallback is silent: %r" % err)
        state.head_faults = [503] * 4
        rc, out2, err = sb.run(["download", "old/tiny", "--verbose"])
        check(rc == 0 and "warning:" in err and "retrying" in err and "using the cached snapshot" in err,
              "-v shows the retries and the cached-snapshot fallback: %r" % err)
        state.head_faults = ["stall"]
        rc, out2, err = sb.run(["download", "org/tiny"], HF_HUB_ETAG_TIMEOUT=1)
        check(rc != 0 and "timed out" in err and "not in the cache" in err, "metadata timeout, no cache: %s" % err)
        sb.cleanup()

        # -- wrong size (short and long) and wrong sha256: rejected, nothing in snapshots/ or blobs/
        for delta, words in ((100, "incomplete"), (-100, "more than")):
            sb = fresh()
            state.size_delta["model.safetensors"] = delta
            rc, out, err = sb.run(["download", "org/tiny"])
            check(rc != 0 and words in err and "X-Linked-Size" in err, "size %+d rejected: %s" % (delta, err))
            check(weights_state(sb, tiny, "") == (False, None, False), "size %+d: nothing kept" % delta)
            sb.cleanup()
        sb = fresh()
        state.faults["model.safetensors"] = ["corrupt*"]
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc != 0 and "sha256" in err and SHA in err and "corrupted" in err, "bad sha256 rejected: %s" % err)
        check(weights_state(sb, tiny, "") == (False, None, False), "bad sha256: nothing kept")
        state.faults.clear()
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc == 0 and good_weights(sb, tiny), "after a corrupted attempt a clean one succeeds")

        # -- access and existence errors
        rc, out, err = sb.run(["download", "org/gated"])
        check(rc != 0 and "HF_TOKEN" in err and "gated or private" in err and "401" in err, "401: %s" % err)
        rc, out, err = sb.run(["download", "org/gated"], HF_TOKEN="hf_wrong")
        check(rc != 0 and "403" in err and "no access" in err, "403 with a token: %s" % err)
        rc, out, err = sb.run(["download", "org/gated"], HF_TOKEN="hf_granted")
        check(rc == 0, "gated repo with its token: %s" % err)
        rc, out, err = sb.run(["download", "org/missing"])
        check(rc != 0 and "repository 'org/missing' not found" in err, "unknown repo: %s" % err)
        rc, out, err = sb.run(["download", "org/tiny", "--revision", "v9"])
        check(rc != 0 and "revision 'v9' not found" in err, "unknown revision: %s" % err)
        rc, out, err = sb.run(["download", "org/notok"])
        check(rc != 0 and "file 'tokenizer.json' not found" in err, "missing file: %s" % err)
        rc, out, err = sb.run(["download", "org/noweights"])
        check(rc != 0 and "neither model.safetensors nor model.safetensors.index.json" in err, "no weights: %s" % err)
        rc, out, err = sb.run(["download", "org/evil"])
        check(rc != 0 and "escape.safetensors" in err and "not a relative path" in err, "bad shard name: %s" % err)
        check(not os.path.exists(os.path.join(sb.cache, "escape.safetensors")), "nothing written outside")
        rc, out, err = sb.run(["download", "not a repo!"])
        check(rc != 0 and "neither an existing folder nor" in err, "bad repo id: %s" % err)
        rc, out, err = sb.run(["download", "org/tiny"], HF_ENDPOINT="http://127.0.0.1:%d" % closed_port(),
                              HF_HOME=os.path.join(sb.dir, "empty"))
        check(rc != 0 and "cannot reach the Hub" in err and "not in the cache" in err, "unreachable: %s" % err)
        rc, out, err = sb.run(["download"])
        check(rc == 2 and "missing REPO" in err, "usage error: %s" % err)
        sb.cleanup()

        # -- disk full: the partial file is (a link to) /dev/full, every write fails with ENOSPC
        sb = fresh()
        blobs = os.path.join(sb.repo_dir("org/tiny"), "blobs")
        os.makedirs(blobs)
        os.symlink("/dev/full", os.path.join(blobs, SHA + ".incomplete"))
        rc, out, err = sb.run(["download", "org/tiny"])
        check(rc != 0 and "disk full" in err and "HF_HUB_CACHE" in err, "disk full: %s" % err)
        check(weights_state(sb, tiny, "")[0::2] == (False, False), "disk full: nothing in snapshots/")
        sb.cleanup()
    finally:
        srv.stop()
    return check.done()


if __name__ == "__main__":
    sys.exit(main())
