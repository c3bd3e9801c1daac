"""The REST catalog's AWS SigV4 signatures (floe.catalog.rest.sigv4_headers) equal botocore's
for the same request, key and time: GET and POST, paths with encoded namespace separators,
queries, a session token, the ``s3`` service (path encoded once) and others (twice). The
signatures passing a real server's check: tests/floe/test_rest_catalog.py (SeaweedFS)."""

from __future__ import annotations

import hashlib

import pytest

from floe.catalog.rest import sigv4_headers

AMZ_DATE = "20260102T030405Z"
ACCESS, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def _botocore(method: str, url: str, body: bytes | None, service: str,
              token: str | None) -> str:
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = (S3SigV4Auth if service == "s3" else SigV4Auth)(
        Credentials(ACCESS, SECRET, token), service, "eu-west-1")
    headers = {"X-Amz-Date": AMZ_DATE,
               "X-Amz-Content-SHA256": hashlib.sha256(body or b"").hexdigest()}
    if token:
        headers["X-Amz-Security-Token"] = token
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    request.context["timestamp"] = AMZ_DATE
    canonical = auth.canonical_request(request)
    return str(auth.signature(auth.string_to_sign(request, canonical), request))


@pytest.mark.parametrize("service", ["execute-api", "s3", "glue"])
@pytest.mark.parametrize(("method", "url", "body"), [
    ("GET", "https://catalog.example.com/v1/config?warehouse=s3%3A%2F%2Fbucket", None),
    ("GET", "http://127.0.0.1:8181/v1/wh/namespaces?parent=a%1Fb&pageSize=2&pageToken=x%20y",
     None),
    ("HEAD", "https://catalog.example.com:8443/v1/wh/namespaces/a%1Fb%1Fc/tables/t", None),
    ("POST", "https://glue.eu-west-1.amazonaws.com/iceberg/v1/catalogs/123/namespaces/db/"
             "tables/t", b'{"requirements": [], "updates": []}'),
    ("DELETE", "https://catalog.example.com/v1/wh/namespaces/db/tables/t?purgeRequested=true",
     None),
])
@pytest.mark.parametrize("token", [None, "FQoGZXIvYXdzEJr//////////wEaDEXAMPLETOKEN"])
def test_the_signature_is_botocores(method: str, url: str, body: bytes | None, service: str,
                                    token: str | None) -> None:
    headers = sigv4_headers(method, url, body, access_key=ACCESS, secret_key=SECRET,
                            region="eu-west-1", service=service, session_token=token,
                            amz_date=AMZ_DATE)
    auth = headers["Authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS}/20260102/eu-west-1/"
                           f"{service}/aws4_request, SignedHeaders=host;x-amz-content-sha256;"
                           f"x-amz-date{';x-amz-security-token' if token else ''}, ")
    assert auth.rsplit("Signature=", 1)[1] == _botocore(method, url, body, service, token)
    assert headers["X-Amz-Content-SHA256"] == hashlib.sha256(body or b"").hexdigest()
    assert SECRET not in str(headers)
    assert ("X-Amz-Security-Token" in headers) == (token is not None)
