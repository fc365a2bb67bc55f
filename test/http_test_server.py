"""The HTTP server test-vfs-http.c starts: on 127.0.0.1, one port for plain
HTTP and, with --tls DIR, one for HTTPS with a self-signed certificate made
in DIR by openssl (which no client may trust), and one more port for plain
HTTP on the wildcard address (dual-stack "::", so every address of this
machine reaches it). It prints "PORT <http> <https or 0> <wildcard>" on one
line, serves until its stdin ends, then exits. Standard library only.

Paths are read as a lenient server does before routing (nginx decodes
escapes, merges slashes and resolves dot segments; servlet containers drop
';' parameters; Windows servers take '\\' for '/'), and "/api/<page>" is
"<page>": what a request reaches is the page of its normalised path.

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
  /store                  keeps the request's Authorization header: 200 "kept"
  /recall                 200 "recalled <what /store kept>"
  /reflect?form=F&enc=E&code=N&header=1
                          N (default 200) with a body "before <v> after",
                          <v> the request's Authorization header in form F
                          (raw, json, json-slash, json-html — the
                          inside of a JSON string —, quote,
                          quote-plus, html, hex, HEX, utf16le, utf16be,
                          b64-0, b64-1, b64-2, b64url-1, truncated,
                          truncated-json, first8), the body compressed by E
                          (gzip, deflate, gzip-gzip, te-gzip: a
                          Transfer-Encoding, xyz: an unknown one); with
                          header=1 also as the header X-Reflect
"""

import base64
import gzip
import html
import json
import os
import posixpath
import select
import socket
import ssl
import subprocess
import sys
import threading
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

stop = threading.Event()
gates_lock = threading.Lock()
gates = {}
kept = {"value": ""}


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

    def normalized(self, path):
        path = urllib.parse.unquote(path).replace("\\", "/")
        segments = [seg.split(";")[0] for seg in path.split("/")]
        path = posixpath.normpath("/" + "/".join(s for s in segments if s))
        return "/" if path == "//" else path

    def serve(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        page = self.normalized(url.path)
        if page.startswith("/api/"):
            page = page[4:]
        try:
            getattr(self, "page_" + page.strip("/").replace("-", "_"), self.page_missing)(query)
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
            "normalized": self.normalized(urllib.parse.urlsplit(self.path).path),
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

    def page_reflect(self, query):
        self.body()
        v = self.headers.get("Authorization", "")
        form = query.get("form", "raw")
        b = v.encode()
        forms = {
            "raw": lambda: b,
            "json": lambda: json.dumps(v)[1:-1].encode(),
            "json-slash": lambda: json.dumps(v)[1:-1].replace("/", "\\/").encode(),
            "json-html": lambda: json.dumps(v)[1:-1].replace("<", "\\u003c").replace(
                ">", "\\u003e").replace("&", "\\u0026").encode(),
            "quote": lambda: urllib.parse.quote(v).encode(),
            "quote-plus": lambda: urllib.parse.quote_plus(v).encode(),
            "html": lambda: html.escape(v).encode(),
            "hex": lambda: b.hex().encode(),
            "HEX": lambda: b.hex().upper().encode(),
            "utf16le": lambda: v.encode("utf-16-le"),
            "utf16be": lambda: v.encode("utf-16-be"),
            "b64-0": lambda: base64.b64encode(b),
            "b64-1": lambda: base64.b64encode(b"x" + b),
            "b64-2": lambda: base64.b64encode(b"xy" + b),
            "b64url-1": lambda: base64.urlsafe_b64encode(b"x" + b),
            "truncated": lambda: b[:-1],
            "truncated-json": lambda: json.dumps(v[:-1])[1:-1].encode(),
            "first8": lambda: b[:8],
        }
        reflected = forms[form]()
        body = b"before " + reflected + b" after"
        enc = query.get("enc", "")
        extra = []
        if enc in ("gzip", "te-gzip"):
            body = gzip.compress(body)
        elif enc == "gzip-gzip":
            body = gzip.compress(gzip.compress(body))
        elif enc == "deflate":
            body = zlib.compress(body)
        if enc in ("gzip", "deflate", "xyz"):
            extra.append(("Content-Encoding", enc))
        elif enc == "gzip-gzip":
            extra.append(("Content-Encoding", "gzip, gzip"))
        if query.get("header") == "1":
            extra.append(("X-Reflect", reflected.decode("latin-1")))
        code = int(query.get("code", "200"))
        if enc == "te-gzip":
            self.send_response(code)
            self.send_header("Transfer-Encoding", "gzip, chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            return
        self.send(code, body, "application/octet-stream", extra=extra)

    def page_store(self, query):
        self.body()
        kept["value"] = self.headers.get("Authorization", "")
        self.send(200, b"kept")

    def page_recall(self, query):
        self.body()
        self.send(200, ("recalled " + kept["value"]).encode())

    def page_status(self, query):
        code = int(query["code"])
        self.send(code, ("status %d" % code).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class WildcardServer(Server):
    """On "::" with IPV6_V6ONLY off: every address of the machine, IPv4
    ones too (as ::ffff:a.b.c.d), reaches it."""

    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


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
    tls = len(sys.argv) == 3 and sys.argv[1] == "--tls"
    if tls:
        servers.append(tls_server(sys.argv[2]))
    servers.append(WildcardServer(("::", 0), Handler))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    ports = [s.server_address[1] for s in servers]
    print("PORT %d %d %d" % (ports[0], ports[1] if tls else 0, ports[-1]), flush=True)
    sys.stdin.read()
    stop.set()
    with gates_lock:
        for gate in gates.values():
            gate.opened.set()
    for s in servers:
        s.shutdown()


main()
