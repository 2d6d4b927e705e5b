#!/usr/bin/env python3
"""Stdlib-only NEFF loader baseline: what a Python loader does with the bytes.

For each iteration: md5 of the payload window, gzip inflate, tar walk reading
every member, json.loads of every .json member. Prints one line per
iteration: the wall time in seconds.

usage: py_baseline.py FILE [ITERATIONS]
"""
import gzip
import hashlib
import io
import json
import struct
import sys
import tarfile
import time


def load(data):
    header_size, data_size = struct.unpack_from("<QQ", data, 8)
    payload = data[header_size:header_size + data_size]
    digest = hashlib.md5(payload).digest()
    tar_bytes = gzip.decompress(payload) if payload[:2] == b"\x1f\x8b" else payload
    members = {}
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tf:
        for m in tf:
            if not m.isfile():
                continue
            body = tf.extractfile(m).read()
            if m.name.endswith(".json"):
                members[m.name] = json.loads(body)
            else:
                members[m.name] = body
    return digest, members


def main():
    path = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with open(path, "rb") as f:
        data = f.read()
    for _ in range(iterations):
        t = time.perf_counter()
        load(data)
        print(f"{time.perf_counter() - t:.9f}", flush=True)


if __name__ == "__main__":
    main()
