"""The HTTP server test-vfs-http.c starts: on 127.0.0.1, one port for plain
HTTP and, with --tls DIR, one for HTTPS with a self-signed certificate made
in DIR by openssl (which no client may trust). It prints "PORT <http>
<https or 0>" on one line, serves until its stdin ends, then exits.
Standard library only.

  /hello                  200 "hello\\n", text/plain
  /echo                   200, JSON of the request: method, path, headers,
                          body (text), and each header value again
                          base64- and URL-encoded; each request header
                          also comes back as a response header X-Echo-<name>
  /redirect?to=U&code=N   N (default 302) with Location U
  /leak?to=U              302 with Location U followed by the request's
                          Authorization header, URL-encoded
  /bytes?n=N&length=0|1   N bytes of 'a', with or without Content-Length
  /binary                 the 256 byte values, application/octet-stream
  /never                  reads the request and never answers
  /gate?name=G&open_at=N  waits until gate G opens: when /release?name=G
                          is asked, or when N requests wait at it; then 200
                          "open" (a client that closes its connection stops
                          waiting)
  /release?name=G&expect=N
                          waits (up to a minute) until N requests wait at
                          gate G, then 200 with how many wait, and opens it
  /peak?name=G            200 with the most requests that waited at G at
                          once
  /status?code=N          N with a body "status N"
"""

import base64
import json
import os
import select
import socket
import ssl
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

stop = threading.Event()
gates_lock = threading.Lock()
gates = {}


class Gate:
    def __init__(self):
        self.opened = threading.Event()
        self.waiting = []  # the connections waiting
        self.peak = 0


def client_gone(connection):
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def gate_named(query):
    with gates_lock:
        return gates.setdefault(query.get("name", ""), Gate())


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, code, body, ctype="text/plain", length=True, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for name, value in extra:
            self.send_header(name, value)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n > 0 else b""

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def serve(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        try:
            getattr(self, "page_" + url.path.strip("/").replace("-", "_"), self.page_missing)(
                query
            )
        except (BrokenPipeError, ConnectionResetError):
            pass

    def page_missing(self, query):
        self.send(404, b"no such page")

    def page_hello(self, query):
        self.body()
        self.send(200, b"hello\n")

    def page_echo(self, query):
        raw = self.body()
        headers = {k: v for k, v in self.headers.items()}
        reply = {
            "method": self.command,
            "path": self.path,
            "headers": headers,
            "body": raw.decode("utf-8", "replace"),
            "base64": {k: base64.b64encode(v.encode()).decode() for k, v in headers.items()},
            "urlencoded": {k: urllib.parse.quote(v, safe="") for k, v in headers.items()},
        }
        extra = [("X-Echo-" + k, v) for k, v in headers.items()]
        self.send(200, json.dumps(reply).encode(), "application/json", extra=extra)

    def page_redirect(self, query):
        self.body()
        self.send(int(query.get("code", "302")), b"", extra=[("Location", query["to"])])

    def page_leak(self, query):
        self.body()
        auth = urllib.parse.quote(self.headers.get("Authorization", ""), safe="")
        self.send(302, b"", extra=[("Location", query["to"] + auth)])

    def page_bytes(self, query):
        n = int(query["n"])
        length = query.get("length", "1") == "1"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if length:
            self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = b"a" * 65536
        while n > 0:
            self.wfile.write(chunk[: min(n, len(chunk))])
            n -= min(n, len(chunk))

    def page_binary(self, query):
        self.send(200, bytes(range(256)), "application/octet-stream")

    def page_never(self, query):
        stop.wait(120)

    def page_gate(self, query):
        gate = gate_named(query)
        with gates_lock:
            # Those whose client gave up (closed its connection) no longer
            # count: checked as each request arrives.
            gate.waiting = [c for c in gate.waiting if not client_gone(c)]
            gate.waiting.append(self.connection)
            gate.peak = max(gate.peak, len(gate.waiting))
            if len(gate.waiting) >= int(query.get("open_at", "0") or "0") > 0:
                gate.opened.set()
        while not gate.opened.wait(0.02) and not stop.is_set():
            if client_gone(self.connection):
                break
        with gates_lock:
            if self.connection in gate.waiting:
                gate.waiting.remove(self.connection)
        if gate.opened.is_set():
            self.send(200, b"open")

    def page_release(self, query):
        gate = gate_named(query)
        expect = int(query.get("expect", "0"))
        # Requests the client has started may still be on their way here.
        for _ in range(3000):
            with gates_lock:
                count = len([c for c in gate.waiting if not client_gone(c)])
            if count >= expect or stop.is_set():
                break
            stop.wait(0.02)
        gate.opened.set()
        self.send(200, ("%d waiting" % count).encode())

    def page_peak(self, query):
        gate = gate_named(query)
        with gates_lock:
            peak = gate.peak
        self.send(200, ("%d" % peak).encode())

    def page_status(self, query):
        code = int(query["code"])
        self.send(code, ("status %d" % code).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def tls_server(directory):
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    server = Server(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def main():
    servers = [Server(("127.0.0.1", 0), Handler)]
    if len(sys.argv) == 3 and sys.argv[1] == "--tls":
        servers.append(tls_server(sys.argv[2]))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    ports = [s.server_address[1] for s in servers] + [0]
    print("PORT %d %d" % (ports[0], ports[1]), flush=True)
    sys.stdin.read()
    stop.set()
    with gates_lock:
        for gate in gates.values():
            gate.opened.set()
    for s in servers:
        s.shutdown()


main()
