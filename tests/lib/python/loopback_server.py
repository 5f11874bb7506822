"""loopback_server.py — the test servers' start: a threaded HTTP server on
127.0.0.1 at a free port, the port written to a file once it listens
(through a rename, so a reader never sees half of it), then serving until
killed. Used by tests/store/fault_server.py and tests/remote/s3_proxy.py.
"""
import http.server
import os


def serve(handler, port_file):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()
