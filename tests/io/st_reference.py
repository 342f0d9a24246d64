"""Reference dump of a safetensors file, parsed by the Python `safetensors` library (not by our code).

Prints one line per tensor, sorted by name:
  name dtype dims checksum first mid last
dims is "d0,d1,.." ("-" for a scalar); checksum = sum(byte[i] * (i % 65521 + 1)) mod 2**64 over the raw bytes;
first/mid/last are the elements at 0, n//2, n-1 converted to float32 and printed with 9 significant digits
("-" for an empty tensor). Used by test_safetensors.c.

With --verdicts FILE..., prints "ACCEPT FILE" or "REJECT FILE" per file instead: whether the library accepts it
(test_bad_safetensors.c checks that the files it rejects as malformed are malformed for the reference too).
"""
import sys

import numpy as np
from safetensors import deserialize

M = 65521


def checksum(raw):
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.uint64)
    w = (np.arange(b.size, dtype=np.uint64) % np.uint64(M)) + np.uint64(1)
    return int(np.sum(b * w, dtype=np.uint64))


def values(raw, dtype):
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4")
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    if dtype == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    raise SystemExit(f"unexpected dtype {dtype}")


def main(path):
    with open(path, "rb") as f:
        tensors = deserialize(f.read())
    for name, t in sorted(tensors, key=lambda x: x[0]):
        raw = bytes(t["data"])
        v = values(raw, t["dtype"])
        dims = ",".join(str(d) for d in t["shape"]) or "-"
        if v.size:
            picks = " ".join("%.9g" % float(v[i]) for i in (0, v.size // 2, v.size - 1))
        else:
            picks = "- - -"
        print(name, t["dtype"], dims, checksum(raw), picks)


def verdicts(paths):
    for path in paths:
        try:
            with open(path, "rb") as f:
                deserialize(f.read())
            print("ACCEPT", path)
        except Exception:  # the library raises SafetensorError, and also other errors for some malformed input
            print("REJECT", path)


if __name__ == "__main__":
    if sys.argv[1] == "--verdicts":
        verdicts(sys.argv[2:])
    else:
        main(sys.argv[1])
