"""Apache HttpClient 5 relocated the way Iceberg's runtime jar shades it, for Iceberg Java's
``RESTCatalog`` in the oracle's Spark.

The iceberg-spark-runtime-3.5_2.12-1.10.2 jar the oracle installs from PyPI has every class
under ``org/apache/iceberg/shaded/org/apache/hc/`` (``client5`` and ``core5``) removed. Only
the REST client uses them: without them the first request of ``RESTCatalog`` fails with
``NoClassDefFoundError: org/apache/iceberg/shaded/org/apache/hc/client5/http/impl/classic/
HttpClientBuilder`` (the class :data:`PROBE` names). This module writes a small jar holding
Debian's HttpClient 5 (packages ``libhttpclient5-java`` and ``libhttpcore5-java``:
httpclient5, httpcore5, httpcore5-h2) with ``org/apache/hc/`` renamed to
``org/apache/iceberg/shaded/org/apache/hc/``: in entry names and in the CONSTANT_Utf8 entries
of each class file's constant pool (JVMS 4.4), every other byte copied as is (the pool keeps
its entry count, so every index into it stays valid).

Debian has HttpClient 5.2.1; Iceberg 1.10.2 is built against 5.5. Checked against every
reference of the runtime jar to the shaded names, one is unresolved:
``PoolingHttpClientConnectionManagerBuilder.setTlsSocketStrategy(TlsSocketStrategy)`` (5.4+),
called by ``HTTPClient.configureConnectionManager`` only when a TLS configurer is set (never
for plain ``http://``). The JVM's verifier still loads the interface ``TlsSocketStrategy``
when it verifies that method, so the jar also holds that interface as 5.4 declares it,
compiled here by ``javac`` (its one method is never called: nothing implements it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import zipfile
from pathlib import Path

__all__ = ["PROBE", "SOURCE_JARS", "build", "missing_sources"]

#: Debian's jars (libhttpclient5-java, libhttpcore5-java).
SOURCE_JARS = tuple(Path("/usr/share/java") / n
                    for n in ("httpclient5.jar", "httpcore5.jar", "httpcore5-h2.jar"))
#: The first class Iceberg's HTTPClient loads that the stripped runtime jar lacks.
PROBE = "org/apache/iceberg/shaded/org/apache/hc/client5/http/impl/classic/HttpClientBuilder"

#: The 5.4 interface that 5.2.1 lacks (see above), under the shaded name.
_TLS_SOCKET_STRATEGY = """\
package org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl;

public interface TlsSocketStrategy {
    javax.net.ssl.SSLSocket upgrade(java.net.Socket socket, String target, int port,
            Object attachment,
            org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpContext context)
            throws java.io.IOException;
}
"""

_FROM, _TO = b"org/apache/hc/", b"org/apache/iceberg/shaded/org/apache/hc/"
_FROM_DOT, _TO_DOT = _FROM.replace(b"/", b"."), _TO.replace(b"/", b".")
# constant-pool tag -> bytes after the tag (Utf8, tag 1, is length-prefixed)
_FIXED = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
          17: 4, 18: 4, 19: 2, 20: 2}


def missing_sources() -> list[Path]:
    """What the build needs and this machine lacks."""
    missing = [p for p in SOURCE_JARS if not p.is_file()]
    if shutil.which("javac") is None:
        missing.append(Path("javac"))
    return missing


def _relocate_text(b: bytes) -> bytes:
    if b"apache" not in b:
        return b
    return b.replace(_FROM, _TO).replace(_FROM_DOT, _TO_DOT)


def _relocate_class(data: bytes) -> bytes:
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    out = bytearray(data[:10])
    off, i = 10, 1
    while i < count:
        tag = data[off]
        if tag == 1:
            n = struct.unpack_from(">H", data, off + 1)[0]
            text = _relocate_text(data[off + 3:off + 3 + n])
            out += bytes([1]) + struct.pack(">H", len(text)) + text
            off += 3 + n
        elif tag in _FIXED:
            out += data[off:off + 1 + _FIXED[tag]]
            off += 1 + _FIXED[tag]
            i += 1 if tag in (5, 6) else 0  # a long or double takes two slots
        else:
            raise ValueError(f"unknown constant-pool tag {tag} at offset {off}")
        i += 1
    return bytes(out + data[off:])


def _key() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for jar in SOURCE_JARS:
        digest.update(jar.read_bytes())
    return digest.hexdigest()[:16]


def build(directory: Path) -> Path:
    """The relocated jar in ``directory`` (built once per source version: its name carries
    a hash of the sources and of this module)."""
    missing = missing_sources()
    if missing:
        raise FileNotFoundError(
            f"{', '.join(map(str, missing))} missing: apt-get install libhttpclient5-java "
            "libhttpcore5-java (and a JDK)")
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"iceberg-relocated-httpclient5-{_key()}.jar"
    if out.is_file():
        return out
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    seen: set[str] = set()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for jar in SOURCE_JARS:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if (info.is_dir() or name.startswith("META-INF/")
                            or name.endswith("module-info.class")):
                        continue
                    data = src.read(name)
                    if name.endswith(".class"):
                        data = _relocate_class(data)
                    name = _relocate_text(name.encode()).decode()
                    if name not in seen:
                        seen.add(name)
                        z.writestr(name, data)
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "TlsSocketStrategy.java"
        source.write_text(_TLS_SOCKET_STRATEGY)
        subprocess.run(["javac", "--release", "8", "-nowarn", "-cp", str(tmp), "-d", work,
                        str(source)], check=True, capture_output=True, timeout=300)
        name = "org/apache/iceberg/shaded/org/apache/hc/client5/http/ssl/TlsSocketStrategy.class"
        with zipfile.ZipFile(tmp, "a") as z:
            z.write(Path(work) / name, name)
    os.replace(tmp, out)
    return out
