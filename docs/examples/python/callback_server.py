"""A callback endpoint that verifies each callback before using it: python3 callback_server.py [port]

Reads the merchant's callback secret (whsec_…) from PAYMENTS_CALLBACK_SECRET. Answers 200 to a verified
callback (and prints its type and id), 400 to anything else. Deliveries are at least once: use the event id
to handle each event once.
"""

import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from payments import CallbackVerificationError, verify_callback

SECRET = os.environ["PAYMENTS_CALLBACK_SECRET"]
MAX_BODY = 1024 * 1024
seen = set()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            return self._answer(413, "too large")
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            event = verify_callback(body, headers, SECRET)
        except (CallbackVerificationError, ValueError) as error:
            print("refused: %s" % error, flush=True)
            return self._answer(400, "invalid signature")
        if event["id"] not in seen:
            seen.add(event["id"])
            print("verified %s %s" % (event["type"], event["id"]), flush=True)
        self._answer(200, "ok")

    def _answer(self, status, text):
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    server = HTTPServer(("127.0.0.1", port), Handler)
    print("listening on http://127.0.0.1:%d/" % port, flush=True)
    server.serve_forever()
