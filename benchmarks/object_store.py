"""Which library floe's FileIO uses for object stores: obstore against pyarrow.fs, on a local
S3 server (SeaweedFS from the tests' harness, started here), doing what planning and
maintenance do: read many manifest-sized objects one by one and 16 at a time, read byte
ranges, list a prefix of many keys, delete them in bulk, and a create-only write.

pyarrow.fs has no create-only write (no ``If-None-Match``) and no batched delete call of its
own (``delete_dir_contents`` lists and deletes); obstore has both. The numbers decide between
equals; those two features decided the rest (a file-system table's commit needs the first).

Usage: ``python benchmarks/object_store.py [--objects 200] [--size 200000] [--keys 5000]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--size", type=int, default=200_000, help="bytes per object (a manifest)")
    ap.add_argument("--keys", type=int, default=5000, help="keys to list and delete")
    args = ap.parse_args()

    import obstore
    import pyarrow.fs as pafs

    from floe.io import FileIO
    from tests.object_store import SeaweedFS

    with tempfile.TemporaryDirectory() as tmp:
        server = SeaweedFS.create(Path(tmp) / "sw", Path(tmp))
        server.start()
        try:
            props = server.s3_properties()
            io = FileIO(props)
            prefix = f"s3://{server.bucket}/bench-{uuid.uuid4().hex[:8]}"
            payload = os.urandom(args.size)
            paths = [f"{prefix}/m/{i:05d}.avro" for i in range(args.objects)]
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda p: io.write(p, payload, overwrite=True), paths))
            keys = [p.split("/", 3)[3] for p in paths]
            store = io.store(paths[0])._client(  # type: ignore[attr-defined]
                __import__("floe.io.objectstore", fromlist=["x"]).parse_location(paths[0]))
            fs = pafs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key,
                                   endpoint_override=server.endpoint, scheme="http",
                                   region=server.region)
            bucket = server.bucket

            def ob_serial() -> None:
                for k in keys:
                    obstore.get(store, k).bytes()

            def pa_serial() -> None:
                for k in keys:
                    with fs.open_input_stream(f"{bucket}/{k}") as f:
                        f.read()

            def ob_parallel() -> None:
                list(io.read_many(paths))

            def pa_parallel() -> None:
                def one(k: str) -> bytes:
                    with fs.open_input_stream(f"{bucket}/{k}") as f:
                        return bytes(f.read())
                with ThreadPoolExecutor(16) as pool:
                    list(pool.map(one, keys))

            def ob_ranges() -> None:
                for k in keys:
                    obstore.get_range(store, k, start=args.size - 8, length=8)

            def pa_ranges() -> None:
                for k in keys:
                    with fs.open_input_file(f"{bucket}/{k}") as f:
                        f.read_at(8, args.size - 8)

            many = [f"{prefix}/l/{i:06d}" for i in range(args.keys)]
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda p: io.write(p, b"x", overwrite=True), many))
            lkeys = [p.split("/", 3)[3] for p in many]

            def ob_list() -> None:
                n = sum(len(c) for c in obstore.list(store, lkeys[0].rsplit("/", 1)[0] + "/",
                                                     chunk_size=1000))
                assert n == args.keys

            def pa_list() -> None:
                n = len(fs.get_file_info(pafs.FileSelector(
                    f"{bucket}/{lkeys[0].rsplit('/', 1)[0]}", recursive=True)))
                assert n == args.keys

            rows = [
                (f"read {args.objects} x {args.size // 1000} KB, one by one", ob_serial,
                 pa_serial),
                (f"read {args.objects} x {args.size // 1000} KB, 16 at a time", ob_parallel,
                 pa_parallel),
                (f"read the last 8 bytes of {args.objects} objects", ob_ranges, pa_ranges),
                (f"list {args.keys} keys", ob_list, pa_list),
            ]
            print(f"SeaweedFS {server.endpoint} (loopback); best of 3, seconds")
            print(f"{'operation':<44}{'obstore':>10}{'pyarrow.fs':>12}")
            for label, ob, pa_fn in rows:
                print(f"{label:<44}{_best(ob):>10.3f}{_best(pa_fn):>12.3f}")

            def ob_delete() -> None:
                assert io.delete_many(many) == []

            def pa_delete() -> None:
                fs.delete_dir_contents(f"{bucket}/{lkeys[0].rsplit('/', 1)[0]}")

            t_ob = _best(ob_delete, repeat=1)
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda p: io.write(p, b"x", overwrite=True), many))
            t_pa = _best(pa_delete, repeat=1)
            print(f"{f'delete {args.keys} keys':<44}{t_ob:>10.3f}{t_pa:>12.3f}")
            t0 = time.perf_counter()
            target = f"{prefix}/v1.metadata.json"
            io.write(target, b"{}")
            try:
                io.write(target, b"{}")
            except FileExistsError:
                pass
            print(f"{'create-only write (If-None-Match), twice':<44}"
                  f"{time.perf_counter() - t0:>10.3f}{'n/a':>12}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
