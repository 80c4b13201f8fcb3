#!/usr/bin/env python3
"""Serve a real trained text classifier on 127.0.0.1 as emotionbench's `local` scorer (#18):
alt-profanity-check's linear SVM (its wheel ships the trained model; scikit-learn runs it), with
no key and no network.

    .scorer/bin/python scripts/local_scorer.py --port 8091
    # then, in the config: [[scorers]] name = "local" kind = "local"
    #                      base_url = "http://127.0.0.1:8091"

What it measures: the probability that a text is profane or offensive, as alt-profanity-check
defines it (trained on labelled offensive and non-offensive comments). It is a proxy for
toxicity, not Google's Perspective model; reports name the scorer and its version.

POST /v1/score  {"texts": ["...", ...]}
  -> 200 {"model": "alt-profanity-check", "version": "1.9.1", "scores": [0.07, ...]}
GET  /health    -> 200 {"status": "ok"}
Needs the venv that .ci/run creates (.scorer/, git-ignored). Serves until SIGINT/SIGTERM.
"""

import argparse
import importlib.metadata
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "alt-profanity-check"
# A request larger than this is refused (413): texts are one model answer each.
MAX_BODY = 1 << 20


def load():
    try:
        from profanity_check import predict_prob
    except ImportError:
        sys.exit("alt-profanity-check is not installed (pip install alt-profanity-check==1.9.1)")
    return predict_prob, importlib.metadata.version(MODEL)


def handler(predict_prob, version):
    class Handler(BaseHTTPRequestHandler):
        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {"status": "ok", "model": MODEL, "version": version})
            else:
                self.reply(404, {"error": "not found"})

        def do_POST(self):
            if self.path != "/v1/score":
                return self.reply(404, {"error": "not found"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self.reply(413, {"error": "request too large"})
            try:
                texts = json.loads(self.rfile.read(length))["texts"]
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    raise ValueError("texts must be a list of strings")
            except (ValueError, KeyError, TypeError) as e:
                return self.reply(400, {"error": f"bad request: {e}"})
            scores = [float(p) for p in predict_prob(texts)] if texts else []
            self.reply(200, {"model": MODEL, "version": version, "scores": scores})

        def log_message(self, *args):
            # The texts are model answers: nothing of them goes to the log.
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8091)
    args = parser.parse_args()
    predict_prob, version = load()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(predict_prob, version))
    print(f"serving {MODEL} {version} on 127.0.0.1:{args.port}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop.wait()
    server.shutdown()


if __name__ == "__main__":
    main()
