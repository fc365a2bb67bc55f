"""A provider replay server for test_llm_agent.py: on 127.0.0.1, it answers
each POST with the next recorded response of a script, after the script's
check of the request has passed, and keeps every request for the test.

A script is a list of (check, response): check(request) raises
AssertionError when the request is not what the provider's API expects;
the server then answers 400 with the assertion's text (a provider rejects a
malformed request too), so the agent fails at once and the test reports
the first difference. A response is the JSON body of a 200, a Reply (a
status, a JSON body and headers: the provider's errors, with their
retry-after), or HANGUP (the connection closed without a reply).
Standard library only.
"""

import http.server
import json
import threading
import traceback


class Request:
    """One request the agent sent: its path, headers, raw body and JSON body."""

    def __init__(self, path, headers, raw, body):
        self.path = path
        self.headers = headers
        self.raw = raw
        self.body = body


class Reply:
    """A reply other than a plain 200: `status`, the JSON `body`, and
    `headers` ((name, value) pairs; a callable value is called as the reply
    is sent, for a date relative to then)."""

    def __init__(self, status, body, headers=()):
        self.status = status
        self.body = body
        self.headers = list(headers)


# The connection closed before any reply: a transport error for the agent.
HANGUP = object()


class ReplayServer:
    def __init__(self, path, script):
        self.path = path
        self.script = script
        self.requests = []
        self.failures = []
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                reply = server._answer(self.path, dict(self.headers), raw)
                if reply is HANGUP:
                    self.close_connection = True
                    return
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value() if callable(value) else value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base(self):
        host, port = self._http.server_address[:2]
        return "http://%s:%d" % (host, port)

    def _fail(self, text):
        self.failures.append(text)
        return Reply(400, {"error": {"type": "invalid_request_error", "message": text}})

    def _answer(self, path, headers, raw):
        with self._lock:
            n = len(self.requests)
            if path != self.path:
                return self._fail("request %d went to %s, not %s" % (n, path, self.path))
            try:
                body = json.loads(raw)
            except ValueError as e:
                return self._fail("request %d is not JSON: %s" % (n, e))
            request = Request(path, {k.lower(): v for k, v in headers.items()}, raw, body)
            self.requests.append(request)
            if n >= len(self.script):
                return self._fail("request %d: the script has only %d" % (n, len(self.script)))
            check, response = self.script[n]
            try:
                check(request)
            except Exception:  # a check that breaks fails the request too
                return self._fail("request %d: %s" % (n, traceback.format_exc()))
            if response is HANGUP or isinstance(response, Reply):
                return response
            return Reply(200, response)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()
