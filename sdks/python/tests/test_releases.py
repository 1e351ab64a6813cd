"""list_releases, check_for_update and download_artifact against the local stub of the release API, with the file
served by a second stub (another host, as a presigned object-store link is). The scenario against the real server
is ``releases`` in sdks/conformance/scenarios.json."""
import hashlib
import os
from typing import Any, Dict, Iterator, Tuple

import pytest

from keyforge import KeyforgeClient, KeyforgeError, LicenseRejectedError, RetryPolicy, current_platform
from stub_server import Signer, StubServer

PRODUCT = "Acme Studio"
ISSUER = "https://licenses.acme.test"
KEY = "ACME-RELS-TEST-KEY1-0001"
FILE = b"installer bytes\n" * 4096
QUERY = "product=Acme+Studio&platform=linux&arch=x64"


@pytest.fixture()
def setup() -> Iterator[Tuple[StubServer, StubServer, Signer]]:
    api, files, signer = StubServer(), StubServer(), Signer("release-key")
    api.routes["GET /.well-known/jwks.json"] = lambda request: (200, {}, {"keys": [signer.jwk()]})
    yield api, files, signer
    api.close()
    files.close()


def artifact(signer: Signer, **changes: Any) -> Dict[str, Any]:
    facts = {"id": "art-1", "filename": "acme-2.0.0-linux-x64.tar.gz", "platform": "linux", "arch": "x64", "filetype": "tar.gz", "size": len(FILE), "sha256": hashlib.sha256(FILE).hexdigest(), "sha512": hashlib.sha512(FILE).hexdigest()}
    claims = {"typ": "keyforge.artifact", "iss": ISSUER, "product": PRODUCT, "productId": "prod-1", "release": "rel-1", "version": "2.0.0", "artifact": "art-1", "filename": facts["filename"], "platform": "linux", "arch": "x64", "size": facts["size"], "sha256": facts["sha256"], "sha512": facts["sha512"], "iat": 1780315200}
    claims.update(changes)
    return {**facts, "signature": signer.token(claims)}


def client(api: StubServer) -> KeyforgeClient:
    return KeyforgeClient(api.url, PRODUCT, issuer=ISSUER, retry=RetryPolicy(base_delay=0.001, max_delay=0.002))


def serve_link(api: StubServer, files: StubServer) -> None:
    api.routes["GET /api/v1/artifacts/art-1/download?product=Acme+Studio"] = lambda request: (200, {}, {"url": f"{files.url}/blob/art-1?token=short", "expiresAt": "2030-01-01T00:00:00Z"})


def test_list_and_check_send_the_key_in_the_header_and_the_filters_in_the_query(setup: Any) -> None:
    api, _files, signer = setup
    release = {"id": "rel-1", "version": "2.0.0", "artifacts": [artifact(signer)]}
    api.routes["GET /api/v1/releases?product=Acme+Studio&channel=beta&platform=linux&arch=x64&deviceId=dev-1"] = lambda request: (200, {}, {"releases": [release]})
    assert client(api).list_releases(KEY, channel="beta", platform="linux", arch="x64", device_id="dev-1") == [release]
    sent = api.requests[-1]
    assert sent.headers["authorization"] == f"License {KEY}" and KEY not in sent.path
    api.routes["GET /api/v1/releases/upgrade?product=Acme+Studio&version=1.0.0&platform=linux&arch=x64"] = lambda request: (200, {}, {"available": False, "reason": "FeatureMissing", "release": release})
    check = client(api).check_for_update(KEY, "1.0.0", platform="linux", arch="x64")
    assert (check.available, check.reason, check.release) == (False, "FeatureMissing", release)


def test_the_platform_defaults_to_this_processs() -> None:
    platform, arch = current_platform()
    assert platform == {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(__import__("sys").platform)
    assert arch in ("x64", "arm64", None)


def test_a_refusal_is_the_error_of_its_code(setup: Any) -> None:
    api, _files, _signer = setup
    api.routes[f"GET /api/v1/releases?{QUERY}"] = lambda request: (200, {}, {"isValid": False, "errorCode": "ProductMismatch", "message": "another product"})
    with pytest.raises(LicenseRejectedError) as caught:
        client(api).list_releases(KEY, platform="linux", arch="x64")
    assert caught.value.code == "ProductMismatch"


def test_download_returns_the_verified_bytes_fetched_without_the_key(setup: Any, tmp_path: Any) -> None:
    api, files, signer = setup
    serve_link(api, files)
    files.routes["GET /blob/art-1?token=short"] = lambda request: (200, {"content-type": "application/octet-stream"}, FILE)
    item = artifact(signer)
    assert client(api).download_artifact(KEY, item) == FILE
    assert [request.headers.get("authorization") for request in files.requests] == [None]
    target = tmp_path / "acme.tar.gz"
    assert client(api).download_artifact(KEY, item, str(target)) == str(target)
    assert target.read_bytes() == FILE and os.listdir(tmp_path) == ["acme.tar.gz"]


@pytest.mark.parametrize("served", ["altered", "longer", "shorter"])
def test_bytes_that_do_not_match_are_refused_and_leave_nothing(setup: Any, tmp_path: Any, served: str) -> None:
    api, files, signer = setup
    serve_link(api, files)
    body = {"altered": FILE[:100] + b"X" + FILE[101:], "longer": FILE + b"!", "shorter": FILE[:-1]}[served]
    files.routes["GET /blob/art-1?token=short"] = lambda request: (200, {"content-type": "application/octet-stream"}, body)
    for path in (None, str(tmp_path / "acme.tar.gz")):
        with pytest.raises(KeyforgeError) as caught:
            client(api).download_artifact(KEY, artifact(signer), path)
        assert caught.value.code == "ArtifactIntegrity"
    assert os.listdir(tmp_path) == []


def test_the_signature_is_checked_before_anything_is_fetched(setup: Any) -> None:
    api, files, signer = setup
    serve_link(api, files)
    good = artifact(signer)
    for candidate in (artifact(signer, product="Other App"), {**good, "size": good["size"] + 1}, {**good, "signature": ("B" if good["signature"][0] == "A" else "A") + good["signature"][1:]}, artifact(Signer("rogue"))):
        with pytest.raises(KeyforgeError) as caught:
            client(api).download_artifact(KEY, candidate)
        assert caught.value.code == "ArtifactIntegrity"
    assert files.requests == [] and not any("/download" in request.path for request in api.requests)


def test_a_redirect_from_the_link_is_not_followed(setup: Any) -> None:
    api, files, signer = setup
    serve_link(api, files)
    files.routes["GET /blob/art-1?token=short"] = lambda request: (302, {"location": f"{files.url}/elsewhere"}, "")
    with pytest.raises(KeyforgeError) as caught:
        client(api).download_artifact(KEY, artifact(signer))
    assert caught.value.code == "InvalidResponse"
    assert [request.path for request in files.requests] == ["/blob/art-1?token=short"]


def test_a_transient_failure_of_the_file_host_is_retried(setup: Any) -> None:
    api, files, signer = setup
    serve_link(api, files)
    answers = [(503, {"content-type": "application/xml"}, "<Error>SlowDown</Error>"), (200, {"content-type": "application/octet-stream"}, FILE)]
    files.routes["GET /blob/art-1?token=short"] = lambda request: answers.pop(0)
    assert client(api).download_artifact(KEY, artifact(signer)) == FILE
    assert len(files.requests) == 2


def test_a_file_that_cannot_be_created_is_file_write_failed_not_retried(setup: Any, tmp_path: Any) -> None:
    api, files, signer = setup
    serve_link(api, files)
    files.routes["GET /blob/art-1?token=short"] = lambda request: (200, {"content-type": "application/octet-stream"}, FILE)
    # A folder that is a file: refused to every user, root included (a read-only folder is not).
    (tmp_path / "plain-file").write_bytes(b"")
    with pytest.raises(KeyforgeError) as caught:
        client(api).download_artifact(KEY, artifact(signer), str(tmp_path / "plain-file" / "acme.tar.gz"))
    assert type(caught.value) is KeyforgeError and caught.value.code == "FileWriteFailed"
    assert files.requests == [] and len([request for request in api.requests if "/download" in request.path]) == 1
    assert os.listdir(tmp_path) == ["plain-file"]


def test_a_write_failing_mid_download_is_file_write_failed_not_retried(setup: Any, tmp_path: Any) -> None:
    resource = pytest.importorskip("resource")
    api, files, signer = setup
    serve_link(api, files)
    files.routes["GET /blob/art-1?token=short"] = lambda request: (200, {"content-type": "application/octet-stream"}, FILE)
    target = tmp_path / "acme.tar.gz"
    target.write_bytes(b"the previous version")
    # A cap on the size of files this process writes: a write past it fails (EFBIG) as on a full disk (Python ignores
    # SIGXFSZ, so the write raises instead of the signal ending the process).
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        with pytest.raises(KeyforgeError) as caught:
            client(api).download_artifact(KEY, artifact(signer), str(target))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert type(caught.value) is KeyforgeError and caught.value.code == "FileWriteFailed"
    assert len(files.requests) == 1
    assert os.listdir(tmp_path) == ["acme.tar.gz"] and target.read_bytes() == b"the previous version"
