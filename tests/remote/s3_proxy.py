"""s3_proxy.py — a fault-injecting HTTP/1.1 proxy on 127.0.0.1 in front of a
real S3 server (moto), for the remote-dataset fault tests: every request is
forwarded unchanged (method, path, query, every header including Host: the
request is SigV4-signed), and the answer comes back unchanged unless a rule
says otherwise.

usage: s3_proxy.py PORT_FILE UPSTREAM_PORT RULES_FILE LOG_FILE

PORT_FILE gets the proxy's port once it listens. RULES_FILE (absent: no
faults) is JSON, a list of rules, read again whenever its text changes
(the test writes a new one with a rename; the counts start over):

  {"method": "GET", "path": "REGEX", "action": ACTION, "times": N, ...}

method (default any) and path (re.search on the path with its query;
default any) select the requests; times is how many of them the rule
spoils (default 1; -1: every one). The first rule that matches and has
times left acts:

  status   answer "status" (default 503) with an S3 error XML whose Code
           is "code" (default by status: 500 InternalError, 503
           ServiceUnavailable; "SlowDown" for throttling); not forwarded
  reset    forward, send the answer's headers and "after" bytes of its body
           (default half), then reset the connection (RST)
  flip     forward, flip the bits of the body's byte "at" (default the
           middle): the size is right, the CRC is not
  short    forward, serve the body without its last "cut" bytes (default
           half of it), Content-Length saying so (a wrong size)

LOG_FILE gets one line per request, tab-separated: METHOD PATH RANGE
ACTION, RANGE "-" without a Range header, ACTION "pass" or the rule's
("status:503:SlowDown", "reset:1234", "flip:5678", "short:100"). A request
moto cannot be reached for is logged "upstream-down" and its connection
closed.
"""
import http.client
import http.server
import json
import os
import re
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from loopback_server import serve  # noqa: E402

lock = threading.Lock()
rules = {"text": None, "list": [], "left": []}

DEFAULT_CODES = {500: "InternalError", 503: "ServiceUnavailable"}
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection"}


def load_rules(path):
    """The rules in force (reloaded when the file's text changed)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if text != rules["text"]:
        rules["text"] = text
        rules["list"] = json.loads(text) if text.strip() else []
        rules["left"] = [r.get("times", 1) for r in rules["list"]]


def pick_rule(method, path):
    """The rule that acts on this request (its count taken), or None."""
    with lock:
        load_rules(sys.argv[3])
        for i, r in enumerate(rules["list"]):
            if r.get("method", method) != method:
                continue
            if not re.search(r.get("path", ""), path):
                continue
            if rules["left"][i] == 0:
                continue
            if rules["left"][i] > 0:
                rules["left"][i] -= 1
            return r
    return None


def log(method, path, rng, action):
    with lock:
        with open(sys.argv[4], "a") as f:
            f.write("%s\t%s\t%s\t%s\n" % (method, path, rng or "-", action))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out, True
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return (self.rfile.read(n) if n else b""), False

    def reply(self, status, reason, headers, body, send=None):
        """Status line, headers (Content-Length from len(body) unless a
        HEAD) and send bytes of body (all by default)."""
        self.send_response_only(status, reason)
        for k, v in headers:
            if k.lower() not in HOP_HEADERS and k.lower() != "content-length":
                self.send_header(k, v)
        length = headers_length(headers) if self.command == "HEAD" else len(body)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body if send is None else body[:send])
        self.wfile.flush()

    def error_xml(self, status, code):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                "<Message>injected by s3_proxy.py</Message><Resource>%s</Resource>"
                "<RequestId>proxy</RequestId></Error>" % (code, self.path)).encode()
        self.reply(status, None, [("Content-Type", "application/xml")], body)

    def reset(self):
        """Drop the connection with a RST, not a FIN."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.rfile.close()
            self.wfile.close()
            self.connection.close()
        except OSError:
            pass

    def answer(self):
        body, chunked = self.read_body()
        rng = self.headers.get("Range", "")
        rule = pick_rule(self.command, self.path)
        action = rule.get("action") if rule else "pass"
        if action == "status":
            status = int(rule.get("status", 503))
            code = rule.get("code", DEFAULT_CODES.get(status, "InternalError"))
            log(self.command, self.path, rng, "status:%d:%s" % (status, code))
            return self.error_xml(status, code)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_HEADERS]
        if chunked:
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        try:
            up = http.client.HTTPConnection("127.0.0.1", int(sys.argv[2]), timeout=30)
            up.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                up.putheader(k, v)
            up.endheaders(body if body or self.command in ("PUT", "POST") else None)
            resp = up.getresponse()
            data = resp.read()
            rheaders = resp.getheaders()
            status, reason = resp.status, resp.reason
            up.close()
        except (OSError, http.client.HTTPException):
            log(self.command, self.path, rng, "upstream-down")
            return self.reset()
        if action == "reset" and data:
            after = int(rule.get("after", len(data) // 2))
            log(self.command, self.path, rng, "reset:%d" % after)
            self.reply(status, reason, rheaders, data, send=after)
            return self.reset()
        if action == "flip" and data:
            at = int(rule.get("at", len(data) // 2))
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
            log(self.command, self.path, rng, "flip:%d" % at)
        elif action == "short" and data:
            cut = int(rule.get("cut", len(data) // 2))
            data = data[:len(data) - cut]
            log(self.command, self.path, rng, "short:%d" % cut)
            # a ranged answer's Content-Range no longer matches: S3 never
            # sends such, and the client must notice the size anyway
        else:
            log(self.command, self.path, rng, "pass")
        self.reply(status, reason, rheaders, data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = answer


def headers_length(headers):
    for k, v in headers:
        if k.lower() == "content-length":
            return int(v)
    return None


def main():
    serve(Handler, sys.argv[1])


if __name__ == "__main__":
    main()
