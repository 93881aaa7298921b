#!/usr/bin/env python3
"""The smallest complete refresher worker, in Python with redis-py.

It follows the protocol of docs/protocol.md: pop a JSON
job from the kind's input list, GET the payload's input_url, push a JSON
result onto the kind's output list before the job's timeout_at. While a
download runs longer than a third of its lease (--lease, default the time
the job had left), it asks for the lease again, and stops when the service
answers that the attempt is over.

    pip install redis            # or: apt-get install python3-redis
    python3 examples/worker.py --kind big_tables

Environment: REFRESHER_REDIS (default redis://127.0.0.1:6379/0);
OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT), _HEADERS and
OTEL_SERVICE_NAME to export a span per job over OTLP/HTTP (class Span;
OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it off). Unlike the
reference worker (`refresher worker`) it does not refuse private addresses:
run it only where every input URL may be fetched.
"""
import argparse
import datetime
import json
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import redis

MARGIN = 2.0  # seconds kept before timeout_at to push the result

# Query parameters whose values are secrets (any case): never in a reason.
SECRET_PARAMS = {"password", "token", "key", "secret", "signature", "sig", "access_token", "api_key"}


def secrets(url):
    """The secrets in url: its user information and secret parameter values."""
    if not isinstance(url, str):
        return []
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    found = [parts.netloc.rsplit("@", 1)[0]] if "@" in parts.netloc else []
    found.append(parts.password or "")
    for part in (parts.query, parts.fragment):
        for name, value in urllib.parse.parse_qsl(part, keep_blank_values=True):
            if name.lower() in SECRET_PARAMS:
                found.append(value)
                found.append(urllib.parse.quote(value, safe=""))
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text, url):
    """text (a reason, an error) with every secret of url replaced by xxxxx:
    a reason is stored in the row and shown on the dashboard, and errors
    quote the URL, or parts of it such as "nonnumeric port: 'pw@host'"."""
    for secret in secrets(url):
        text = text.replace(secret, "xxxxx")
    return text


def seconds_left(job):
    """Seconds until the job's timeout_at (None when it has none)."""
    at = job.get("timeout_at")
    if not at:
        return None
    # timeout_at is RFC 3339 in UTC; Python < 3.11 reads neither "Z" nor
    # more than 6 fraction digits.
    at = at.replace("Z", "+00:00")
    if "." in at:
        head, rest = at.split(".", 1)
        digits = rest[: len(rest) - 6]
        at = head + "." + digits[:6].ljust(6, "0") + rest[-6:]
    deadline = datetime.datetime.fromisoformat(at)
    return (deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()


class Lease:
    """Keeps a job's attempt alive while its download makes progress
    (docs/protocol.md, "Leases"): every third of the lease it reads the
    service's answer to its last request and asks for the lease again."""

    def __init__(self, r, out, job, seconds, traceparent=""):
        self.r, self.out, self.job, self.traceparent = r, out, job, traceparent
        self.seconds = min(max(1, math.ceil(seconds)), 31536000)
        self.last, self.asked = time.monotonic(), False

    def keep(self):
        """False when the service answered that the attempt is over."""
        if time.monotonic() - self.last < self.seconds / 3:
            return True
        self.last = time.monotonic()
        if self.asked:
            answer = self.r.get("%s:lease:%s" % (self.out, self.job["attempt_uid"]))
            if answer is not None and not json.loads(answer)["running"]:
                return False  # it timed out, or the row was enabled again
        ask = {"uid": self.job["uid"], "attempt_uid": self.job["attempt_uid"], "type": "extend", "seconds": self.seconds}
        if self.traceparent:
            ask["traceparent"] = self.traceparent  # its apply span joins the job's trace
        self.r.rpush(self.out, json.dumps(ask))
        self.asked = True
        return True


def otlp_url(env):
    """The OTLP/HTTP URL spans are posted to, "" for none. The variables
    turn it on and off as they do `refresher worker` (docs/configuration.md,
    "Tracing"), so that one environment serves both; this worker posts JSON,
    so with the gRPC protocol it exports nothing and says what to set."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return ""
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if exporter == "none":
        return ""
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
        env["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces" if env.get("OTEL_EXPORTER_OTLP_ENDPOINT") else "")
    if not url and exporter == "otlp":
        url = "http://localhost:4318/v1/traces"  # the OTLP/HTTP default
    proto = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    if url and proto == "grpc":
        print("exporting no spans: this worker sends OTLP over HTTP only; set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json "
              "and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT to the collector's HTTP port (http://<host>:4318/v1/traces)", flush=True)
        return ""
    return url


OTLP = otlp_url(os.environ)


class Span:
    """This worker's span of one job, in the job's trace (docs/protocol.md,
    "Traces"): the child of the job's W3C traceparent. self.traceparent goes
    back with the result. Without an OTLP endpoint, or when the job's trace
    is not sampled, it exports nothing and passes the job's traceparent on
    as it is, so that the service's trace stays whole. A collector that
    fails is not asked again for a minute: a trace is never worth a job, nor
    the wait for a collector that does not answer."""

    resume_at = 0.0  # time.monotonic() before which no span is sent

    def __init__(self, job):
        self.job, self.start = job, time.time_ns()
        parent = job.get("traceparent") or ""
        m = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})", parent)
        if m and m[1] != "0" * 32 and m[2] != "0" * 16:
            self.trace_id, self.parent_id, flags = m[1], m[2], m[3]
        else:  # no trace, or not one we read: a trace of our own
            self.trace_id, self.parent_id, flags = os.urandom(16).hex(), "", "01"
        self.export = bool(OTLP) and int(flags, 16) & 1 == 1
        self.span_id = os.urandom(8).hex()
        self.traceparent = "00-%s-%s-%s" % (self.trace_id, self.span_id, flags) if self.export else parent

    def end(self, result):
        """Posts the span as OTLP/HTTP JSON; result is None for a dropped job."""
        if not self.export or time.monotonic() < Span.resume_at:
            return
        attrs = {"refresher.kind": self.job.get("kind", ""), "refresher.key": self.job["uid"],
                 "refresher.attempt_uid": self.job["attempt_uid"]}
        status = {}
        if result is not None:
            attrs["refresher.result.type"] = result["type"]
            if result["type"] == "failure":
                status = {"code": 2, "message": result.get("reason", "")}  # 2: error
        def kv(k, v):
            return {"key": k, "value": {"stringValue": v}}
        attempt_no = {"key": "refresher.attempt_no", "value": {"intValue": str(int(self.job.get("attempt_no", 0)))}}
        span = {"traceId": self.trace_id, "spanId": self.span_id, "parentSpanId": self.parent_id,
                "name": "refresh %s" % self.job.get("kind", ""), "kind": 5,  # 5: consumer
                "startTimeUnixNano": str(self.start), "endTimeUnixNano": str(time.time_ns()),
                "attributes": [kv(k, v) for k, v in attrs.items()] + [attempt_no], "status": status}
        body = {"resourceSpans": [{
            "resource": {"attributes": [kv("service.name", os.environ.get("OTEL_SERVICE_NAME", "refresher-example-worker"))]},
            "scopeSpans": [{"scope": {"name": "examples/worker.py"}, "spans": [span]}]}]}
        headers = {"Content-Type": "application/json"}
        for pair in os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "").split(","):
            if "=" in pair:
                k, v = pair.split("=", 1)
                headers[k.strip()] = urllib.parse.unquote(v.strip())
        try:
            urllib.request.urlopen(urllib.request.Request(OTLP, json.dumps(body).encode(), headers), timeout=5).close()
        except Exception as e:
            Span.resume_at = time.monotonic() + 60
            print("cannot export the span (none sent for a minute):", e, flush=True)


def do_job(job, timeout, lease):
    """GETs the job's input_url and returns the result to push, without the
    URL's secrets; None when its attempt is over."""
    url = (job.get("payload") or {}).get("input_url")
    result = fetch(job, url, timeout, lease)
    if result is None:
        return None
    for field in ("reason", "user_friendly_reason", "status"):
        if field in result:
            result[field] = scrub(result[field], url)
    return result


def fetch(job, url, timeout, lease):
    """GETs url and returns the result to push, or None when the lease
    says the attempt is over. timeout bounds each read, not the download."""
    result = {"uid": job["uid"], "attempt_uid": job["attempt_uid"]}
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return {**result, "type": "failure", "permanent": True,
                "reason": "malformed URL %r" % url,
                "user_friendly_reason": "Provided URL is invalid: %s" % (url or "")}
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            size = 0
            while chunk := resp.read1(65536):  # what has arrived, up to 64 KiB
                size += len(chunk)
                if not lease.keep():
                    return None
        return {**result, "type": "success", "status": "fetched %d bytes" % size}
    except urllib.error.HTTPError as e:
        reason = "GET %s: HTTP %d %s" % (url, e.code, e.reason)
        if e.code in (404, 410):
            return {**result, "type": "failure", "permanent": True, "reason": reason,
                    "user_friendly_reason": "Provided URL is invalid: %s" % url}
        retry = e.headers.get("Retry-After", "")
        if e.code in (429, 503) and retry.isdigit():
            return {**result, "type": "failure", "reason": reason, "retry_after_seconds": int(retry)}
        return {**result, "type": "failure", "reason": reason}
    except Exception as e:  # timeout, connection refused, DNS, ...
        return {**result, "type": "failure", "reason": "GET %s: %s" % (url, e)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", required=True)
    ap.add_argument("--input", help="default <kind>-input")
    ap.add_argument("--lanes", default="",
                    help="the kind's priority lanes, most urgent first, e.g. 0 or 0,10: their lists "
                         "<input>:p<N> are popped before the input list (default none)")
    ap.add_argument("--output", help="default <kind>-output")
    ap.add_argument("--redis", default=os.environ.get("REFRESHER_REDIS", "redis://127.0.0.1:6379/0"))
    ap.add_argument("--max-jobs", type=int, default=0, help="stop after this many jobs (0: never)")
    ap.add_argument("--lease", type=float, default=0,
                    help="seconds to ask for while a download runs: the kind's timeout (default: the time the job has left)")
    args = ap.parse_args()
    inp, out = args.input or args.kind + "-input", args.output or args.kind + "-output"
    # One BLPOP on every list: Redis pops from the first one that holds a
    # job, so a "refresh now" at a high priority does not wait for the jobs
    # queued on the input list before it.
    lists = ["%s:p%d" % (inp, int(n)) for n in args.lanes.split(",") if n.strip()] + [inp]
    r = redis.Redis.from_url(args.redis)

    done = 0
    while not args.max_jobs or done < args.max_jobs:
        popped = r.blpop(lists, timeout=1)
        if popped is None:
            continue
        try:
            job = json.loads(popped[1])
        except ValueError:
            print("skip a message that is not JSON:", popped[1][:200])
            continue
        left = seconds_left(job)
        if left is not None and left <= MARGIN:
            print("drop expired job", job.get("uid"))  # the service counts it as timed out
            continue
        timeout = 30.0 if left is None else min(30.0, left - MARGIN)
        span = Span(job)
        result = do_job(job, timeout, Lease(r, out, job, args.lease or left or 3600, span.traceparent))
        done += 1
        if result is None:
            print("drop job whose attempt is over", job["uid"], flush=True)
            span.end(None)
            continue
        if span.traceparent:
            result["traceparent"] = span.traceparent
        r.rpush(out, json.dumps(result))
        print(job["uid"], result["type"], result.get("status") or result.get("reason"), flush=True)
        span.end(result)


if __name__ == "__main__":
    main()
