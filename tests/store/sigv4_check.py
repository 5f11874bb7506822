"""sigv4_check.py — does the C client sign as AWS does? A capture server
on 127.0.0.1 records one request of `s3_tool ARGS...` (method, path,
query, headers, the body's hash), answers it, and botocore's signer
(S3SigV4Auth, the one boto3 uses for S3) signs the same request with the
same credentials, region and x-amz-date; the two Authorization headers
must match byte for byte. Prints what it compared; exit 0 match, 1 not.

usage: sigv4_check.py S3_TOOL ARGS...   (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION from the environment; AWS_ENDPOINT_URL is
set here to the capture server)
"""
import datetime
import hashlib
import http.server
import os
import subprocess
import sys
import threading
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

captured = []


class Capture(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        captured.append((self.command, self.path, list(self.headers.items()), body))
        out = b"captured"
        if self.command == "POST" and self.path.endswith("?uploads="):
            # An upload id that needs escaping in the parts' queries.
            out = (b"<InitiateMultipartUploadResult><UploadId>up+id/with=chars"
                   b"</UploadId></InitiateMultipartUploadResult>")
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("ETag", '"e"')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = answer

    def log_message(self, *args):
        pass


def main(argv):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = dict(os.environ, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % srv.server_address[1])
    r = subprocess.run(argv[1:], env=env, capture_output=True, text=True, timeout=30)
    srv.shutdown()
    if not captured:
        sys.exit("sigv4_check: no request captured (%s exited %d: %s)"
                 % (argv[1], r.returncode, r.stderr.strip()))
    bad = 0
    for method, path, headers, body in captured:
        bad += not check(env, method, path, headers, body)
    if bad:
        sys.exit("sigv4_check: %d of %d Authorization headers differ" % (bad, len(captured)))
    print("sigv4_check: identical (%d requests)" % len(captured))


def check(env, method, path, headers, body):
    hdrs = {k.lower(): v for k, v in headers}
    got = hdrs.get("authorization", "")
    signed = got.split("SignedHeaders=")[1].split(",")[0].split(";") if "SignedHeaders=" in got else []
    amz_date = hdrs["x-amz-date"]
    url = env["AWS_ENDPOINT_URL"] + path
    req = AWSRequest(method=method, url=url, data=body,
                     headers={k: hdrs[k] for k in signed if k in hdrs})
    # A body sent unsigned (x-amz-content-sha256: UNSIGNED-PAYLOAD) is what
    # botocore sends too when told not to sign the payload.
    if hdrs.get("x-amz-content-sha256") == "UNSIGNED-PAYLOAD":
        req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    creds = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"],
                        os.environ.get("AWS_SESSION_TOKEN"))
    signer = S3SigV4Auth(creds, "s3", os.environ.get("AWS_REGION", "us-east-1"))
    # botocore stamps the time itself: give it the request's.
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")

    class Frozen(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return when

        @classmethod
        def now(cls, tz=None):
            return when.replace(tzinfo=tz) if tz else when

    import botocore.auth
    saved = botocore.auth.datetime.datetime
    botocore.auth.datetime.datetime = Frozen
    try:
        signer.add_auth(req)
    finally:
        botocore.auth.datetime.datetime = saved
    want = req.headers["Authorization"]
    print("request:", method, urllib.parse.unquote(path.split("?")[0]), "query:",
          path.split("?")[1] if "?" in path else "", "signed headers:", ";".join(signed),
          "body sha256:", hashlib.sha256(body).hexdigest()[:16])
    print("curl:     ", got)
    print("botocore: ", want)
    if got != want:
        print("canonical request (botocore):\n" + signer.canonical_request(req))
        return False
    return True


if __name__ == "__main__":
    main(sys.argv)
