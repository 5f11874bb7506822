"""fault_server.py — a misbehaving S3 endpoint on 127.0.0.1 for the
client's retry paths. Serves one object (BODY_BYTES of a fixed pattern)
at any path; writes its port to PORT_FILE, then answers until killed.

usage: fault_server.py PORT_FILE MODE
  slowdown:N   the first N requests get 503 SlowDown, then the object
  status:S     every request gets HTTP S with an InternalError body
  truncate     a whole-object or Range GET sends half of what it promised
               and drops the connection, once; a Range GET after it is
               served whole (the client resumes from where it stopped)
  deny-part:N  an S3 that takes multipart uploads, but answers part N of
               any with 403 AccessDenied (PUTs, aborts and completes succeed)
  complete-error:CODE:N   the same S3 (no part denied), whose first N
               CompleteMultipartUploads answer 200 with an <Error> body of
               that Code (S3 does so when it fails after sending 200)
Every request is logged to stdout: "METHOD PATH RANGE".
"""
import http.server
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from loopback_server import serve  # noqa: E402

BODY_BYTES = 1 << 20
BODY = bytes((i * 7 + 3) & 0xFF for i in range(BODY_BYTES))
lock = threading.Lock()
state = {"n": 0, "truncated": False}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def error(self, status, code):
        body = ("<?xml version=\"1.0\"?><Error><Code>%s</Code><Message>injected</Message>"
                "</Error>" % code).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        rng = self.headers.get("Range", "")
        print(self.command, self.path, rng, flush=True)
        mode = sys.argv[2]
        with lock:
            state["n"] += 1
            count = state["n"]
        if mode.startswith("slowdown:") and count <= int(mode.split(":")[1]):
            return self.error(503, "SlowDown")
        if mode.startswith("status:"):
            return self.error(int(mode.split(":")[1]), "InternalError")
        if mode.startswith("deny-part:"):
            return self.store(int(mode.split(":")[1]))
        if mode.startswith("complete-error:"):
            _, code, n = mode.split(":")
            return self.store(0, code, int(n))
        start, end = 0, BODY_BYTES - 1
        if rng.startswith("bytes="):
            a, b = rng[6:].split("-")
            start, end = int(a), min(int(b), BODY_BYTES - 1)
        part = BODY[start:end + 1]
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(part)))
        if rng:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, BODY_BYTES))
        self.send_header("ETag", '"x"')
        self.end_headers()
        if self.command == "HEAD":
            return
        if mode == "truncate" and not state["truncated"]:
            state["truncated"] = True
            self.wfile.write(part[:len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(part)

    def store(self, deny, complete_error=None, failing=0):
        q = self.path.split("?", 1)[1] if "?" in self.path else ""
        if self.command == "POST" and q.startswith("uploadId="):
            with lock:
                state["completes"] = state.get("completes", 0) + 1
                fail = state["completes"] <= failing
            if fail:
                out = ("<Error><Code>%s</Code></Error>" % complete_error).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                return
        if self.command == "PUT" and q.startswith("partNumber=%d&" % deny):
            return self.error(403, "AccessDenied")
        out = b""
        if self.command == "POST" and q == "uploads=":
            out = (b"<InitiateMultipartUploadResult><UploadId>u-1</UploadId>"
                   b"</InitiateMultipartUploadResult>")
        elif self.command == "POST":
            out = b"<CompleteMultipartUploadResult></CompleteMultipartUploadResult>"
        self.send_response(204 if self.command == "DELETE" else 200)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("ETag", '"e"')
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = answer


def main():
    serve(Handler, sys.argv[1])


if __name__ == "__main__":
    main()
