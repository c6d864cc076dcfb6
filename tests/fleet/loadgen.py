"""Bounded load generator: chat completions through the SGLang router while a rollout runs (stdlib only).

    python3 loadgen.py --url http://127.0.0.1:30000 --out /root/loadgen.json
        [--concurrency 2] [--max-requests 5000] [--max-seconds 900] [--stop-file /tmp/loadgen.stop]
        [--timeout 60] [--pause 0.05] [--cafile /etc/sglang/tls/ca.pem]

    LOADGEN_API_KEY=... python3 loadgen.py --url https://127.0.0.1:30000 --cafile ca.pem --out ...

A router with --api-key requires "Authorization: Bearer <key>": give the key in the environment variable
LOADGEN_API_KEY (preferred; it stays off the command line, which every local user can read with ps) or with
--api-key. --cafile is the CA (PEM) that verifies an https --url; without it the system's store does.

The request names the model the router lists first at GET /v1/models (an OpenAI client's way; smg, the router
from 0.4 on, routes by model and answers 404 model_not_found to any other name), "default" where that list cannot
be read; --model names it.

Each worker thread sends one request at a time (POST /v1/chat/completions, max_tokens 8) until the stop file
appears, --max-requests were sent in all, or --max-seconds passed: it always stops by itself. A request counts
as failed on any answer but 200 with a non-empty completion (connection errors and timeouts included).
Writes JSON to --out while running (every second) and at the end: sent, ok, failed, the first failures,
latency percentiles (ms), started/finished (epoch s), finished_reason, running (false at the end). The key is
never written to --out.
"""
import argparse
import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.request


def one_request(url, model, timeout, api_key="", context=None):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Say hello."}],
                       "max_tokens": 8, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return False, mask("HTTP %d: %s" % (exc.code, exc.read()[:200].decode("utf-8", "replace")), api_key)
    except Exception as exc:  # noqa: BLE001 - every error is a failed request
        return False, mask("%s: %s" % (type(exc).__name__, exc), api_key)
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return False, "HTTP %d with an unreadable body: %r" % (status, raw[:200])
    return (status == 200 and bool(content)), ("" if content else "empty completion")


def listed_model(url, timeout, api_key="", context=None):
    """The first model id of GET /v1/models, or "default" where the list cannot be read or names no model."""
    try:
        req = urllib.request.Request(url + "/v1/models", headers={"Authorization": "Bearer " + api_key} if api_key else {})
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            model = json.loads(resp.read())["data"][0]["id"]
    except Exception:  # noqa: BLE001 - any failure leaves the name SGLang itself accepts
        return "default"
    return model if isinstance(model, str) and model else "default"


def mask(text, api_key):
    """The text with the key replaced, should an answer echo it."""
    return text.replace(api_key, "********") if api_key else text


def percentile(values, pct):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(len(values) * pct / 100.0))], 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="", help="default: the first model of GET /v1/models, else 'default'")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--max-requests", type=int, default=5000)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--stop-file", default="")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--pause", type=float, default=0.05)
    ap.add_argument("--api-key", default=os.environ.get("LOADGEN_API_KEY", ""),
                    help="sent as Authorization: Bearer; default the environment variable LOADGEN_API_KEY (preferred)")
    ap.add_argument("--cafile", default="", help="CA file (PEM) that verifies an https --url")
    args = ap.parse_args()
    context = ssl.create_default_context(cafile=args.cafile) if args.cafile else None
    args.model = args.model or listed_model(args.url.rstrip("/"), args.timeout, args.api_key, context)

    lock = threading.Lock()
    state = {"sent": 0, "ok": 0, "failed": 0, "failures": [], "latencies_ms": []}
    started = time.time()
    deadline = started + args.max_seconds
    reason = {"why": ""}

    def should_stop():
        if args.stop_file and os.path.exists(args.stop_file):
            return "stop file"
        if time.time() >= deadline:
            return "max seconds"
        if state["sent"] >= args.max_requests:
            return "max requests"
        return ""

    def worker():
        while True:
            with lock:
                why = should_stop()
                if why:
                    reason["why"] = reason["why"] or why
                    return
                state["sent"] += 1
            t0 = time.time()
            ok, err = one_request(args.url.rstrip("/"), args.model, args.timeout, args.api_key, context)
            with lock:
                if ok:
                    state["ok"] += 1
                    state["latencies_ms"].append((time.time() - t0) * 1000.0)
                else:
                    state["failed"] += 1
                    if len(state["failures"]) < 20:
                        state["failures"].append({"at": round(time.time(), 3), "error": err})
            time.sleep(args.pause)

    def report(running):
        with lock:
            lat = list(state["latencies_ms"])
            data = {"url": args.url, "model": args.model, "concurrency": args.concurrency, "api_key_set": bool(args.api_key),
                    "sent": state["sent"], "ok": state["ok"],
                    "failed": state["failed"], "failures": list(state["failures"]),
                    "latency_ms": {"p50": percentile(lat, 50), "p99": percentile(lat, 99),
                                   "max": round(max(lat), 1) if lat else None},
                    "started": round(started, 3), "finished": None if running else round(time.time(), 3),
                    "finished_reason": reason["why"] or None, "running": running, "pid": os.getpid()}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=2)
        os.replace(tmp, args.out)

    threads = [threading.Thread(target=worker, daemon=True) for dummy in range(args.concurrency)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        report(True)
        for t in threads:
            t.join(timeout=1.0 / max(len(threads), 1))
    report(False)


if __name__ == "__main__":
    main()
