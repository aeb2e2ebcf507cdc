"""An HTTP server on 127.0.0.1 that keeps what it is sent: each POST body (un-gzipped) as a
file NNNNN.bin in OUT_DIR, in the order received. The agent's tests point an OpenTelemetry
Collector's OTLP/HTTP exporter at it, so they read what the collector handed on.

usage: http_sink.py PORT_FILE OUT_DIR [ANSWER]
Binds a free port and writes it to PORT_FILE. ANSWER is the HTTP status to answer with
(default 200; a refusal carries a reason in its body), or "hang" to never answer.
Environment: SINK_TLS_CERT and SINK_TLS_KEY (PEM files) serve HTTPS; SINK_AUTHORIZATION
refuses with 401 a request whose Authorization header is not that value.
"""
import gzip
import http.server
import itertools
import os
import ssl
import sys
import time

port_file, out = sys.argv[1], sys.argv[2]
answer = sys.argv[3] if len(sys.argv) > 3 else "200"
os.makedirs(out, exist_ok=True)
count = itertools.count()


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        want = os.environ.get("SINK_AUTHORIZATION")
        if want is not None and self.headers.get("Authorization") != want:
            reason = b"missing or wrong Authorization"
            self.send_response(401)
            self.send_header("Content-Length", str(len(reason)))
            self.end_headers()
            self.wfile.write(reason)
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        name = os.path.join(out, f"{next(count):05d}.bin")
        with open(name + ".part", "wb") as f:
            f.write(body)
        os.rename(name + ".part", name)
        if answer == "hang":
            time.sleep(3600)
        status = int(answer)
        reason = b"" if status < 300 else b"profiles are not accepted here"
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf" if status < 300 else "text/plain")
        self.send_header("Content-Length", str(len(reason)))
        self.end_headers()
        self.wfile.write(reason)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
if os.environ.get("SINK_TLS_CERT"):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["SINK_TLS_CERT"], os.environ["SINK_TLS_KEY"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
with open(port_file + ".part", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".part", port_file)
server.serve_forever()
