"""Seeded demo banks: an engineering bank, a business-process bank and large synthetic banks.

Pure: every function returns frames and a JSON-serialisable ground-truth dict and writes
nothing; the store writes what they return. All randomness comes from one seeded numpy
generator and every timestamp lies before the fixed :data:`REFERENCE_DATE`, so a seed gives
byte-for-byte the same bank on every machine and every day.

>>> bank = engineering_bank(seed=3, entries=400, topics=8)
>>> bank.entries.height, bank.truth["generator"]
(400, 'kbtools.demo')
>>> engineering_bank(seed=3, entries=400, topics=8).entries.equals(bank.entries)
True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.schema import conform, empty

__all__ = ["DemoBank", "REFERENCE_DATE", "engineering_bank", "business_bank", "synthetic_bank"]

#: Every demo timestamp lies within the year before this instant (never ``datetime.now()``).
REFERENCE_DATE = datetime(2026, 11, 1, tzinfo=timezone.utc)
_REF_US = int(REFERENCE_DATE.timestamp()) * 1_000_000
_DAY_US = 86_400 * 1_000_000
_GENERATOR = "kbtools.demo"


@dataclass(frozen=True)
class DemoBank:
    """A generated bank: its three keyed tables and the ground truth that goes beside it.

    >>> b = business_bank()
    >>> b.name, sorted(b.truth)[:3]
    ('business', ['bank', 'generator', 'holes'])
    """

    name: str
    entries: pl.DataFrame
    edges: pl.DataFrame
    triples: pl.DataFrame
    truth: dict


# --------------------------------------------------------------------------- shared helpers


def _hex_ids(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct 8-lowercase-hex ids, in draw order."""
    values = np.empty(0, dtype=np.uint64)
    for _ in range(64):  # bounded: each round keeps all but a vanishing share of the draws
        if values.size >= n:
            break
        draw = rng.integers(0, 2**32, size=n - values.size + 16, dtype=np.uint64)
        values = np.concatenate([values, draw])
        _, first = np.unique(values, return_index=True)
        values = values[np.sort(first)]
    return [f"{v:08x}" for v in values[:n].tolist()]


def _times(rng: np.random.Generator, n: int, *, days: float = 365.0) -> np.ndarray:
    """``n`` creation instants (int64 microseconds) spread over ``days`` before the reference date."""
    back = rng.uniform(1.0, days, size=n) * _DAY_US
    return (_REF_US - back).astype(np.int64)


def _time_series(name: str, values) -> pl.Series:
    return pl.Series(name, values, dtype=pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Rows:
    """Accumulates entry and edge rows; ids come from a pre-drawn list, times from ``rng``."""

    def __init__(self, rng: np.random.Generator, ids: list[str]):
        self.rng = rng
        self._ids = iter(ids)
        self.entries: list[dict] = []
        self.edges: list[dict] = []
        self.at: dict[str, int] = {}
        self.row: dict[str, dict] = {}
        self._keys: set[tuple[str, str, str]] = set()

    def entry(self, *, kind, title, summary, content, useful_for, systems=(), tasks=(), steps=(),
              metadata=None, session="", at=None, status="active") -> str:
        id_ = next(self._ids)
        at = int(_times(self.rng, 1)[0]) if at is None else int(at)
        self.at[id_] = at
        self.entries.append(dict(
            id=id_, kind=kind, title=title, summary=summary, content=content, useful_for=useful_for,
            systems=list(systems), tasks=list(tasks), steps=list(steps),
            metadata=json.dumps(metadata or {}, sort_keys=True), session_id=session,
            created_at=at, status=status,
        ))
        self.row[id_] = self.entries[-1]
        return id_

    def edge(self, src, dst, type_, *, note=None, by="agent-1", source="author", evidence="{}") -> bool:
        """Adds ``src type_ dst`` unless it would be a self-loop or a duplicate key."""
        key = (src, dst, type_)
        if src == dst or key in self._keys:
            return False
        self._keys.add(key)
        at = max(self.at[src], self.at[dst]) + int(self.rng.integers(60, 36_000)) * 1_000_000
        self.edges.append(dict(src=src, dst=dst, type=type_, source=source, note=note, evidence=evidence,
                               weight=1.0, created_by=by, created_at=at, seen_at=at))
        return True

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        return _entries_frame(self.entries, self.rng), _edges_frame(self.edges)


def _entries_frame(rows: list[dict], rng: np.random.Generator) -> pl.DataFrame:
    created = np.array([r["created_at"] for r in rows], dtype=np.int64)
    rewritten = rng.random(created.size) < 1 / 3  # dedup rewrites: updated well after creation
    updated = created + (rewritten * rng.uniform(0.0, 0.6, created.size) * (_REF_US - created)).astype(np.int64)
    frame = pl.DataFrame(
        {k: [r[k] for r in rows] for k in rows[0] if k != "created_at"} if rows else {},
        schema_overrides={"systems": pl.List(pl.String), "tasks": pl.List(pl.String), "steps": pl.List(pl.String)},
    ).with_columns(
        _time_series("created_at", created),
        _time_series("updated_at", updated),
        pl.lit(0, dtype=pl.Int64).alias("usage_count"),
    )
    return conform(frame, "entries").sort("created_at", "id")


def _edges_frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return empty("edges")
    frame = pl.DataFrame(rows, schema_overrides={"note": pl.String}).with_columns(
        pl.col("created_at", "seen_at").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    )
    return conform(frame, "edges").sort("created_at", "src", "dst", "type")


def _triples_frame(rows: list[tuple[str, str, str, str, int]]) -> pl.DataFrame:
    if not rows:
        return empty("triples")
    subject, relation, object_, by, at = zip(*rows)
    frame = pl.DataFrame({"subject": subject, "relation": relation, "object": object_, "created_by": by})
    frame = frame.with_columns(_time_series("created_at", list(at)))
    return conform(frame, "triples").unique(["subject", "relation", "object"], keep="first", maintain_order=True)


# --------------------------------------------------------------------------- engineering catalogs

# system -> four topics: (aspect, task, six terms). Terms give each topic its own vocabulary.
_TOPICS: dict[str, list[tuple[str, str, list[str]]]] = {
    "ci": [
        ("cache restore", "build", ["cache key", "lockfile hash", "runner image", "restore step", "artifact upload", "cache eviction"]),
        ("test sharding", "e2e-test", ["shard index", "junit timing", "test matrix", "split strategy", "slow spec", "retry budget"]),
        ("secret masking", "debug", ["masked variable", "log redaction", "env dump", "base64 secret", "debug flag", "job log"]),
        ("pipeline retries", "deploy", ["retry policy", "exit code", "manual gate", "deploy stage", "concurrency group", "stuck job"]),
    ],
    "k8s": [
        ("pod evictions", "deploy", ["memory limit", "OOMKilled", "node pressure", "resource requests", "eviction threshold", "priority class"]),
        ("rolling updates", "deploy", ["maxSurge", "readiness probe", "rollout status", "replica set", "maxUnavailable", "rollout undo"]),
        ("ingress routing", "debug", ["ingress class", "path rewrite", "backend service", "TLS secret", "host rule", "ingress annotation"]),
        ("cronjob scheduling", "schedule", ["concurrencyPolicy", "startingDeadlineSeconds", "job history", "suspend flag", "cron expression", "missed run"]),
    ],
    "postgres": [
        ("migration locks", "migrate", ["ALTER TABLE", "lock_timeout", "long transaction", "pg_locks", "statement_timeout", "access exclusive lock"]),
        ("connection pool exhaustion", "debug", ["pgbouncer", "max_connections", "idle in transaction", "pool size", "transaction mode", "prepared statement"]),
        ("vacuum and bloat", "maintain", ["autovacuum", "dead tuples", "table bloat", "vacuum freeze", "wraparound", "fillfactor"]),
        ("replica lag", "debug", ["streaming replica", "replay lag", "hot standby", "WAL sender", "read routing", "replication slot"]),
    ],
    "auth": [
        ("token refresh", "login", ["refresh token", "access token", "expiry skew", "token endpoint", "refresh rotation", "revocation list"]),
        ("session cookies", "login", ["SameSite", "cookie domain", "secure flag", "session store", "cookie jar", "logout"]),
        ("OAuth callbacks", "integrate", ["redirect URI", "state parameter", "PKCE verifier", "consent screen", "client secret", "callback route"]),
        ("role permissions", "configure", ["role binding", "permission set", "admin scope", "policy check", "service account", "audit trail"]),
    ],
    "billing": [
        ("invoice generation", "invoice", ["invoice run", "line item", "proration", "tax rate", "credit note", "draft invoice"]),
        ("payment webhooks", "integrate", ["webhook signature", "idempotency key", "event replay", "payment intent", "retry header", "dead letter"]),
        ("subscription upgrades", "upgrade", ["plan change", "prorated charge", "billing cycle", "trial end", "seat count", "downgrade"]),
        ("currency rounding", "reconcile", ["minor units", "rounding mode", "exchange rate", "ledger entry", "settlement report", "currency code"]),
    ],
    "playwright": [
        ("flaky selectors", "e2e-test", ["locator", "data-testid", "auto-wait", "strict mode", "shadow DOM", "hover action"]),
        ("browser contexts", "e2e-test", ["storage state", "browser context", "test fixture", "worker scope", "new page", "context isolation"]),
        ("trace viewer", "debug", ["trace file", "screenshot", "video capture", "trace on retry", "network tab", "action log"]),
        ("headless runs in CI", "e2e-test", ["headless mode", "xvfb", "browser install", "shared memory", "viewport", "font rendering"]),
    ],
    "redis": [
        ("key expiry", "cache", ["TTL", "EXPIRE", "eviction policy", "maxmemory", "stale key", "keyspace notification"]),
        ("distributed locks", "schedule", ["SET NX", "lock token", "lock extension", "Redlock", "lease time", "unlock script"]),
        ("pub/sub delivery", "integrate", ["channel", "subscriber", "message loss", "pattern subscribe", "reconnect", "stream consumer"]),
        ("memory fragmentation", "maintain", ["fragmentation ratio", "active defrag", "jemalloc", "RSS", "big key", "memory doctor"]),
    ],
    "kafka": [
        ("consumer lag", "debug", ["consumer group", "partition lag", "offset commit", "max.poll.records", "rebalance", "poll interval"]),
        ("topic retention", "configure", ["retention.ms", "log compaction", "segment size", "cleanup policy", "tombstone", "disk usage"]),
        ("schema evolution", "migrate", ["schema registry", "Avro schema", "compatibility mode", "field default", "subject name", "serializer"]),
        ("exactly-once delivery", "integrate", ["idempotent producer", "transactional id", "isolation level", "producer fence", "commit marker", "duplicate message"]),
    ],
    "terraform": [
        ("state locking", "provision", ["state file", "lock table", "force-unlock", "backend config", "lock ID", "remote state"]),
        ("plan drift", "provision", ["drift", "refresh-only plan", "import block", "manual change", "plan output", "ignore_changes"]),
        ("module versioning", "upgrade", ["module source", "version constraint", "module registry", "dependency lock file", "provider pin", "upgrade flag"]),
        ("workspace layout", "configure", ["workspace", "tfvars", "environment folder", "variable file", "output value", "data source"]),
    ],
    "s3": [
        ("presigned URLs", "integrate", ["presigned URL", "URL expiry", "signature version", "content type", "upload form", "query string"]),
        ("bucket policies", "configure", ["bucket policy", "public access block", "principal", "condition key", "ACL", "object ownership"]),
        ("lifecycle rules", "maintain", ["lifecycle rule", "storage class", "noncurrent version", "expiration", "transition", "prefix filter"]),
        ("multipart uploads", "upload", ["multipart upload", "part size", "abort incomplete", "ETag", "upload ID", "checksum"]),
    ],
    "dns": [
        ("record propagation", "deploy", ["record TTL", "CNAME", "A record", "propagation", "resolver cache", "zone file"]),
        ("certificate validation", "deploy", ["ACME challenge", "TXT record", "certificate chain", "validation token", "wildcard name", "auto renewal"]),
        ("split-horizon zones", "configure", ["private zone", "public zone", "VPC resolver", "forwarding rule", "internal name", "conditional forwarder"]),
        ("failover routing", "deploy", ["health check", "failover record", "weighted routing", "latency routing", "primary region", "secondary region"]),
    ],
    "grafana": [
        ("alert rules", "monitor", ["alert rule", "evaluation interval", "pending period", "contact point", "silence", "notification policy"]),
        ("dashboard variables", "monitor", ["template variable", "datasource", "repeat panel", "query variable", "interval variable", "dashboard JSON"]),
        ("PromQL queries", "monitor", ["rate()", "histogram_quantile", "label matcher", "recording rule", "scrape interval", "cardinality"]),
        ("on-call paging", "respond", ["escalation policy", "paging rule", "acknowledge", "on-call schedule", "severity", "runbook link"]),
    ],
    "nginx": [
        ("upstream timeouts", "debug", ["proxy_read_timeout", "upstream", "502 Bad Gateway", "keepalive", "proxy buffering", "error log"]),
        ("rate limiting", "configure", ["limit_req", "burst", "limit zone", "nodelay", "429 response", "client IP"]),
        ("header forwarding", "configure", ["X-Forwarded-For", "proxy_set_header", "Host header", "real_ip", "trusted proxy", "scheme"]),
        ("static asset caching", "deploy", ["cache-control", "immutable", "hashed filename", "gzip", "etag", "asset manifest"]),
    ],
    "celery": [
        ("task retries", "schedule", ["autoretry_for", "retry backoff", "max_retries", "acks_late", "visibility timeout", "task id"]),
        ("worker concurrency", "scale", ["prefork", "concurrency", "prefetch multiplier", "worker memory", "max-tasks-per-child", "autoscale"]),
        ("beat schedules", "schedule", ["celery beat", "crontab", "schedule file", "beat timezone", "periodic task", "duplicate beat"]),
        ("result backend", "configure", ["result backend", "result expiry", "chord", "task group", "AsyncResult", "ignore_result"]),
    ],
    "search": [
        ("index mappings", "migrate", ["mapping", "keyword field", "reindex API", "index alias", "dynamic mapping", "analyzer"]),
        ("relevance tuning", "tune", ["boost", "BM25", "function score", "synonym", "minimum_should_match", "explain API"]),
        ("cluster health", "monitor", ["yellow status", "unassigned shard", "replica count", "disk watermark", "heap", "shard allocation"]),
        ("bulk indexing", "import", ["bulk API", "refresh interval", "batch size", "rejected execution", "thread pool", "backpressure"]),
    ],
    "feature-flags": [
        ("flag rollout", "release", ["percentage rollout", "targeting rule", "kill switch", "flag key", "default variation", "segment"]),
        ("stale flags", "maintain", ["stale flag", "flag cleanup", "code reference", "permanent flag", "flag owner", "flag archive"]),
        ("flag evaluation in tests", "e2e-test", ["flag override", "fixture file", "local evaluation", "flag snapshot", "bootstrap", "offline mode"]),
        ("experiment assignment", "release", ["experiment", "bucketing", "assignment", "holdout", "exposure event", "sticky bucketing"]),
    ],
}
_TOPIC_LIST = [(s, a, t, terms) for k in range(4) for s, topics in _TOPICS.items() for a, t, terms in [topics[k]]]
MAX_TOPICS = len(_TOPIC_LIST)

_ENVS = ["staging", "production", "preview", "dev"]
_MONTHS = ["November", "December", "January", "February", "March", "April", "May", "June", "July",
           "August", "September", "October"]
_KINDS = ["knowledge", "procedure", "playbook", "lesson", "fact", "decision", "event", "insight", "skill"]
_KIND_P = [0.28, 0.16, 0.08, 0.14, 0.14, 0.08, 0.08, 0.02, 0.02]

_TITLES = {
    "knowledge": ["{S}: {a} and {b} during {T}", "How {a} affects {A}", "{A}: what {a} really controls",
                  "Why {a} matters for {T} on {S}"],
    "procedure": ["Recipe: {T} with {a} on {S}", "How to check {a} before {T}", "Steps to tune {a} for {A}"],
    "playbook": ["Playbook: {A} on {S}", "Playbook: recover from {a} problems during {T}"],
    "lesson": ["Lesson: {a} hides {A}", "Lesson: do not trust {a} during {T}", "What {A} taught us about {b}"],
    "fact": ["{S} {a} is set to {n} in {env}", "{S}: {a} default in {env}", "Where {a} is configured for {S}"],
    "decision": ["Decision: prefer {a} over {b} for {T}", "Decision: {a} stays at {n} on {S}"],
    "event": ["Incident: {A} on {env} in {m}", "{m} outage: {a} during {T}"],
    "insight": ["Pattern: {a} failures cluster around {T}"],
    "skill": ["Reading {a} output for {A}"],
}
_SUMMARIES = {
    "knowledge": "On {S}, {a} decides whether {A} shows up during {T}.",
    "procedure": "How to handle {a} safely when you run {T} against {S}.",
    "playbook": "Ordered steps for handling {A} on {S} when {a} misbehaves.",
    "lesson": "{a} looked healthy while {b} was the real cause of {A}.",
    "fact": "In {env}, {S} runs with {a} at {n}.",
    "decision": "We chose {a} over {b} for {T} on {S} to keep {A} under control.",
    "event": "In {m}, {A} hit {env} during {T}; {a} was the trigger.",
    "insight": "Most {A} reports we see on {S} start with {a}.",
    "skill": "How to read {a} and {b} when diagnosing {A}.",
}
_SENTENCES = [
    "{a} is the first thing to check; {b} and {c} are usually downstream symptoms.",
    "When you run {T} against {env}, look at {a} before touching {b}.",
    "Changing {a} without {b} made {A} worse twice this quarter.",
    "We keep {a} at {n} in {env}; lower values brought {A} back.",
    "The {S} logs mention {b}, but the root cause has almost always been {a}.",
    "Pin {a} explicitly: the default changed and broke {T} in {env}.",
    "{c} only matters when {a} is already under pressure.",
    "If {b} looks fine and {A} persists, compare {a} between {env} and the other environments.",
    "Agents hit this during {T}: {a} reports healthy while {c} does not.",
    "Document any change to {a} in the {S} runbook so the next {T} does not trip on it.",
    "A quick way to confirm is to watch {b} while {T} runs.",
    "{A} on {S} is rarely about {c}; start from {a}.",
    "Roll back the {a} change first, then look at {b}.",
    "Dashboards for {A} lag, so check {a} by hand after each {T}.",
]
_USEFUL = ["Useful when {A} shows up during {T} on {S}.", "Read before changing {a} on {S}.",
           "For agents running {T} who see {b} misbehave.", "When {T} on {S} stalls around {a}."]
_STEPS = ["Check {a} on {env}.", "Compare {b} with the last good {T}.", "Adjust {a} and rerun {T}.",
          "Watch {c} for ten minutes.", "Record the change in the {S} runbook."]
_SYMPTOMS = ["timeouts", "stale reads", "403 errors", "silent resets", "duplicate runs", "dropped requests",
             "hangs", "partial writes", "memory spikes", "slow starts"]
_CONDITIONS = ["is left at its default", "is shared between environments", "is changed mid-run",
               "is set per pod", "is cached by the client", "is rotated", "is empty", "is set twice"]
_CITE_PHRASES = ["See {ref} for the {p} pattern.", "This builds on {ref}, which covers {p}.",
                 "{ref} has the longer write-up on {p}.", "Same root cause as {ref} ({p})."]

# Agent-authored relation edges between ordinary entries: type -> notes (how it pertains).
_FILLER_TYPES = {
    "see_also": ["Same symptom seen from the {b} side.", "Covers {a} on the neighbouring setup."],
    "part_of": ["One step of that playbook in detail.", "Expands the {a} step there."],
    "derived_from": ["Generalised from the write-up there.", "Rewritten from that entry for {T}."],
    "split_from": [None],
    "supersedes": ["Replaces that entry after the {a} change."],
    "conflicts_with": ["Disagrees with that entry about {a}; check which applies to {env}.",
                       "Gives the opposite advice on {b}."],
    "informs": ["Background for the {a} choice made there.", "Explains the numbers that entry relies on."],
    "applies_to": ["The {S} case of that general rule.", "Where that rule bites during {T}."],
    "refines": ["Tightens the {a} threshold given there.", "Narrows that entry to {env}."],
    "learned_from": ["The incident that taught this.", "Where this lesson came from."],
    "resolves": ["The fix for that incident.", "What finally stopped that from recurring."],
    "follows": ["Do this after that recipe.", "Run once that one has finished."],
    "concerns": ["About the {a} mentioned there."],
}
_FILLER_WEIGHTS = [20, 10, 8, 8, 4, 6, 8, 8, 6, 6, 5, 5, 3]

# Hop-lab tasks: (verb, object, system, task). A is the recipe for "<verb> the <env> <object>".
_HOPS = [
    ("rotate", "signing key", "auth", "rotate-keys"), ("restore", "nightly snapshot", "postgres", "restore"),
    ("drain", "worker pool", "celery", "scale"), ("renew", "wildcard certificate", "dns", "deploy"),
    ("replay", "failed webhooks", "billing", "integrate"), ("reindex", "product catalog", "search", "migrate"),
    ("resize", "node group", "k8s", "scale"), ("purge", "CDN cache", "nginx", "deploy"),
    ("backfill", "usage ledger", "billing", "migrate"), ("promote", "read replica", "postgres", "failover"),
    ("unlock", "terraform state", "terraform", "provision"), ("seed", "demo tenant", "auth", "setup"),
    ("archive", "audit logs", "s3", "maintain"), ("reset", "consumer offsets", "kafka", "debug"),
    ("flush", "session cache", "redis", "debug"), ("pause", "beta experiment", "feature-flags", "release"),
    ("mute", "noisy alert", "grafana", "monitor"), ("rerun", "nightly e2e suite", "playwright", "e2e-test"),
    ("bump", "base image", "ci", "build"), ("revoke", "leaked API token", "auth", "respond"),
    ("export", "monthly invoices", "billing", "invoice"), ("migrate", "tenant bucket", "s3", "migrate"),
    ("roll back", "payments service", "k8s", "deploy"), ("scale down", "search cluster", "search", "scale"),
    ("recreate", "dead letter queue", "kafka", "recover"), ("warm", "page cache", "redis", "deploy"),
    ("refresh", "materialized views", "postgres", "maintain"), ("provision", "preview environment", "terraform", "provision"),
    ("upload", "release artifacts", "ci", "release"), ("record", "login trace", "playwright", "debug"),
    ("enable", "maintenance page", "nginx", "deploy"), ("schedule", "quarterly key audit", "celery", "schedule"),
    ("split", "hot partition", "kafka", "scale"), ("shorten", "retention window", "grafana", "maintain"),
    ("transfer", "domain registrar", "dns", "migrate"),
]
# B entries: low-level quirks in a vocabulary that shares no content word with any hop query.
_QUIRKS = [
    ("Clock drift rejects otherwise valid assertions", "os", "Hosts whose clocks drift more than thirty seconds apart make the verifier reject assertions that are otherwise valid; chrony on the bastion had stopped syncing."),
    ("Inode exhaustion on the scratch volume", "filesystem", "The scratch volume runs out of inodes long before it runs out of bytes, and the error surfaces as a misleading no-space-left message."),
    ("HTTP/2 connection coalescing surprises", "network", "Browsers reuse one HTTP/2 connection for hostnames that share an IP and a SAN entry, so requests land on the wrong virtual host."),
    ("Resolver prefers IPv6 answers", "network", "The container resolver prefers AAAA answers while the egress firewall silently drops IPv6, so connections hang for the full connect timeout."),
    ("Umask on mounted secret files", "os", "Secret files mounted with umask 0077 are unreadable to the unprivileged uid the process drops to after startup."),
    ("Locale changes decimal separators", "runtime", "Under the de_DE locale the CSV writer emits commas as decimal separators, which the importer parses as field breaks."),
    ("File descriptor ceiling of 1024", "os", "The systemd unit inherits a soft limit of 1024 open files; past that, accept() fails with EMFILE and nothing is written anywhere."),
    ("Daylight saving gap skips an hour", "runtime", "Jobs expressed in local time never fire during the spring-forward gap and fire twice during the autumn overlap."),
    ("Proxy strips the Expect header", "network", "The corporate proxy strips Expect: 100-continue, so large PUT bodies stall until the origin gives up waiting."),
    ("MTU mismatch on the VPN tunnel", "network", "The tunnel MTU is 1400 but hosts advertise 1500, so large TLS handshakes fragment and silently vanish."),
    ("Byte-order mark in YAML files", "runtime", "A UTF-8 byte-order mark at the top of a YAML file makes the first setting name unreadable to the parser."),
    ("Health checker sends no SNI", "network", "The balancer's health checker sends no SNI, receives the fallback chain and marks every target unhealthy."),
    ("Git LFS pointers instead of binaries", "filesystem", "A shallow checkout without the LFS filter leaves 130-byte pointer files where binaries should be."),
    ("Case-insensitive filesystem on laptops", "filesystem", "macOS laptops use a case-insensitive filesystem, so two files differing only in case collapse into one after checkout."),
    ("32-bit counter wraps negative", "runtime", "The legacy counter column is a 32-bit integer and wraps to negative values after about 2.1 billion increments."),
    ("NAT gateway port exhaustion", "network", "Each NAT gateway allows about 55,000 concurrent connections per destination; bursts beyond that see random connect resets."),
    ("Leap-second smear differs between providers", "runtime", "One provider smears leap seconds over a day and the other steps them, so timestamps from both disagree by up to a second."),
    ("Kernel OOM killer picks the sidecar", "os", "When memory runs short the kernel kills the proxy sidecar first because its oom_score_adj is highest, cutting all traffic."),
    ("Missing trailing slash downgrades redirects", "network", "A missing trailing slash makes the router answer with a 301 to plain http, which the client follows without TLS."),
    ("Unicode normalisation of names", "runtime", "Names typed on iOS arrive in NFD form while stored names are NFC, so equality checks fail for accented characters."),
    ("Third-party storage partitioning", "browser", "Storage partitioning blocks embedded frames from reading storage set by the top-level site, breaking the embedded widget."),
    ("Ingress truncates large decompressed bodies", "network", "The ingress limits decompressed bodies to 8 MB and truncates anything larger without an error status."),
    ("Collector pauses under a large heap", "runtime", "With a 30 GB heap the collector pauses for several seconds, long enough to miss heartbeats and trigger a failover."),
    ("Vendored client pins an old cipher list", "network", "The vendored HTTP client pins a cipher list that the new edge proxy no longer offers, so handshakes fail with handshake_failure."),
    ("Negative caching holds NXDOMAIN", "network", "Resolvers hold NXDOMAIN answers for the SOA minimum, here one hour, so a freshly created name stays invisible."),
    ("Host cron daemon runs in UTC", "os", "The host cron daemon runs in UTC while the containers run in local time, so jobs drift by the offset twice a year."),
    ("Sticky affinity outlives removed backends", "network", "Affinity cookies pin a client to one backend for eight hours, so a removed backend keeps receiving old clients."),
    ("Float sums depend on summation order", "runtime", "Summing the same amounts in a different order yields totals that differ in the last cent after rounding."),
    ("Sparse disk images inflate on copy", "filesystem", "Copying sparse disk images without --sparse=always writes every zero byte and fills the target disk."),
    ("SELinux denies socket access", "os", "SELinux in enforcing mode denies the daemon access to a socket under /run unless the file context is relabelled."),
    ("Mail gateway rewrites links", "network", "The mail gateway rewrites every link through its scanner, which consumes single-use links before the recipient clicks them."),
    ("Mobile app keeps the rate card offline", "browser", "The mobile app keeps its rate card offline for 24 hours, so price changes reach phones a day late."),
    ("Zero-width spaces in pasted identifiers", "runtime", "Identifiers pasted from the wiki carry zero-width spaces, so lookups fail although the strings look identical."),
    ("ARM hosts lack the prebuilt wheel", "runtime", "The ARM build hosts have no prebuilt wheel for the crypto package and compile it from source for twelve minutes."),
    ("Warehouse connection defaults to Pacific time", "runtime", "The warehouse connection defaults to America/Los_Angeles, so date boundaries in reports shift by eight or nine hours."),
]
_HOP_NOTES = [
    "The {verb} step in that {object} recipe fails on {env} without this.",
    "Read this before you {verb} the {object} on {env}.",
    "Explains why the {verb} step of the {object} recipe stalls on {env}.",
    "What breaks the {verb} step for the {object} on {env}.",
    "The {verb} step of the {object} recipe depends on this in {env}.",
]
# (type, B is the source?) for the A-B edge of a hop task.
_HOP_TYPES = [("clarifies", True), ("cites", False), ("see_also", False), ("informs", True),
              ("applies_to", True), ("corrects", True)]
_LEAKY_HOPS = 3


# --------------------------------------------------------------------------- engineering bank


def engineering_bank(*, seed: int = 7, entries: int = 2000, topics: int = 60) -> DemoBank:
    """A realistic engineering-team bank with clusters, citations, dedup metadata and a hop lab.

    ``truth`` holds a query log (``queries``: query, relevant ids, topic), the hop-lab tasks
    (``hop_tasks``: a strong match A, one trusted edge to a poor match B that alone holds the
    task's proof token; three are marked ``leaky``: their token also sits in the edge note) and
    ``holes`` (empty for this bank).

    >>> bank = engineering_bank(seed=1, entries=500, topics=12)
    >>> bank.entries.height, len(bank.truth["hop_tasks"]) >= 30
    (500, True)
    """
    if not 1 <= topics <= MAX_TOPICS:
        raise ValidationError("topics", topics, f"must be between 1 and {MAX_TOPICS}")
    catalog = _TOPIC_LIST[:topics]
    n_clusters = max(topics, 40)
    minimum = 10 + 2 * len(_HOPS) + 4 * n_clusters + 3 * topics
    if entries < minimum:
        raise ValidationError("entries", entries, f"must be at least {minimum} for {topics} topics")
    rng = np.random.default_rng(seed)
    rows = _Rows(rng, _hex_ids(rng, entries))
    sessions = [f"sess-{v:06x}" for v in rng.integers(0, 2**24, size=max(8, entries // 5)).tolist()]
    agents = [f"agent-{k}" for k in range(1, 13)]

    queries = _worked_examples(rows, sessions)
    queries += _clusters(rows, rng, catalog, n_clusters, sessions, agents)
    hop_tasks = _hop_lab(rows, rng, sessions, agents)
    filler, topic_of = _filler(rows, rng, catalog, entries - len(rows.entries), sessions)
    _filler_edges(rows, rng, catalog, filler, topic_of, agents)
    _cite_and_tag(rows, rng, catalog, filler, topic_of, entries)

    entries_frame, edges_frame = rows.frames()
    triples = _engineering_triples(rng, catalog, agents)
    for i, q in enumerate(queries, 1):
        q["id"] = f"q{i:03d}"
    truth = {"bank": "engineering", "seed": seed, "generator": _GENERATOR,
             "queries": [{"id": q["id"], "query": q["query"], "relevant": q["relevant"], "topic": q["topic"]}
                         for q in queries],
             "hop_tasks": hop_tasks, "holes": []}
    return DemoBank("engineering", entries_frame, edges_frame, triples, truth)


def _worked_examples(rows: _Rows, sessions: list[str]) -> list[dict]:
    """The seed's two worked examples ("A Fold, Concretely"), entries, edges and queries."""
    at = iter(sorted(_times(rows.rng, 10, days=200).tolist()))
    s1, s2 = sessions[0], sessions[1]
    general = rows.entry(
        kind="knowledge", title="Dated dispatch labels re-queue a card on a set date",
        summary="A dated dispatch label such as dispatch:2026-10-14 sends the card back to the dispatch queue on that date.",
        content="Adding a dated dispatch label (dispatch:YYYY-MM-DD) to a kanban card takes it out of the active "
                "columns and returns it to the dispatch queue on the named date, where the next free agent picks "
                "it up. The board's nightly sweep does the move; nothing happens on the card itself until then. "
                "Use it when an owner ruling says to come back to a card at a known time.",
        useful_for="Deciding how to park a kanban card until a specific date.",
        systems=["kanban"], tasks=["triage"], session=s1, at=next(at))
    stale = rows.entry(
        kind="lesson", title="Dated dispatch labels: caveats from the first month",
        summary="Two caveats about dated dispatch labels noticed in their first month of use.",
        content="Dated dispatch labels mostly behave, with two caveats. The sweep skips weekends, so a card dated "
                "for a Saturday only returns on Monday. A card that carries both a dated dispatch label and an "
                "assignee keeps the assignee when it comes back, so clear the assignee first.",
        useful_for="Avoiding surprises when a dated card comes back.",
        systems=["kanban"], tasks=["triage"], session=s1, at=next(at))
    correction = rows.entry(
        kind="knowledge", title="Correction: the dispatch sweep runs every day",
        summary="The nightly dispatch sweep now runs seven days a week, so dated cards return on the exact date.",
        content="Since the sweep moved to the scheduler in September it runs every night including weekends; a "
                "card dated for a Saturday returns on Saturday. The assignee caveat from the first month still holds.",
        useful_for="Predicting the day a dated card comes back.",
        systems=["kanban", "scheduler"], tasks=["triage"], session=s2, at=next(at))
    hold = rows.entry(
        kind="knowledge", title="Hold-until labels versus dated dispatch labels",
        summary="A hold-until label keeps a card in its column, hidden from pickup, until a date; a dated dispatch label moves it to the dispatch queue.",
        content="When an owner rules 'table this card for N days', the two labels do different things. "
                "hold-until:YYYY-MM-DD leaves the card where it is, with its assignee and column, and only hides it "
                "from pickup until the date. A dated dispatch label sends it back through dispatch, so whoever is "
                "free picks it up. Use hold-until when the same agent should resume and dated dispatch when anyone may.",
        useful_for="Choosing the label for an owner ruling that tables a card.",
        systems=["kanban"], tasks=["triage"], session=s2, at=next(at))
    recipe = rows.entry(
        kind="procedure", title="Recipe: table a card for N days",
        summary="Steps to table a kanban card for N days with the right label.",
        content="Work out the date, pick the label from the owner's intent, and leave a comment so the next agent "
                "knows why the card is parked.",
        useful_for="Acting on an owner ruling that says to table a card.",
        systems=["kanban"], tasks=["triage"], session=s2, at=next(at),
        steps=["Compute the date N days from today in UTC.",
               "Add hold-until:<date> if the same agent resumes, or dispatch:<date> if anyone may.",
               "Comment on the card with the owner's ruling and the date.",
               "Leave the assignee for hold-until; clear it for dispatch."])
    rows.edge(stale, general, "part_of", by="agent-4")
    rows.edge(correction, stale, "corrects", by="agent-7",
              note="The weekend caveat in that entry is stale; do not plan around it. Its assignee caveat still holds.")
    rows.edge(hold, general, "clarifies", by="agent-7",
              note="Says which of the two labels a 'table this card for N days' ruling calls for.")
    rows.edge(recipe, hold, "derived_from", by="agent-2", note="Turns the comparison there into steps.")

    cookie = rows.entry(
        kind="procedure", title="Recipe: loopback cookie jar for curl",
        summary="Keep cookies between curl calls with a cookie jar file on the loopback host.",
        content="Pass -c jar.txt on the first call and -b jar.txt on every later one; keep the jar under /tmp on "
                "the runner and delete it when the job ends. Point curl at 127.0.0.1 through the local tunnel so "
                "the cookie domain matches.",
        useful_for="Scripting several authenticated curl calls in a row.",
        systems=["curl", "auth"], tasks=["verify"], session=s1, at=next(at))
    api = rows.entry(
        kind="knowledge", title="Admin API session flow for scripted checks",
        summary="Start and stop a short-lived session through the admin API with curl, no browser involved.",
        content="POST /admin/api/sessions with the service credentials returns a session id and a cookie; "
                "DELETE /admin/api/sessions/<id> ends it. Sessions expire after 15 minutes. Keep the cookie between "
                f"calls; see {cookie} for the cookie-jar pattern.",
        useful_for="Scripted checks that need an authenticated call but no page.",
        systems=["auth", "admin-api"], tasks=["verify"], session=s1, at=next(at))
    login = rows.entry(
        kind="playbook", title="Log in to production with Playwright for post-deploy e2e tests",
        summary="Recipe for logging a Playwright test into production with the e2e service account after a deploy.",
        content="Run the login once in global setup and save the storage state, so each test starts logged in. "
                "The e2e service account's password lives in the vault under e2e/prod; never type it in a test.",
        useful_for="Post-deploy end-to-end tests that must log in to production.",
        systems=["playwright", "auth"], tasks=["e2e-test", "login"], session=s2, at=next(at),
        steps=["Read the e2e/prod credentials from the vault in global setup.",
               "Open the production login page and sign in with Playwright.",
               "Save storage state to .auth/prod.json.",
               "Point every test's context at that storage state."])
    verify = rows.entry(
        kind="procedure", title="Verify a production deploy with a scripted session check",
        summary="Post-deploy verification: create a session, hit the health and whoami endpoints, tear the session down.",
        content="After each production deploy, create a session with curl, call /healthz and /whoami with it and "
                "check the build hash, then delete the session. Fail the deploy job if whoami does not answer.",
        useful_for="Confirming a deploy from a script before the e2e suite runs.",
        systems=["auth", "ci"], tasks=["deploy", "verify"], session=s2, at=next(at),
        steps=["Create a session with curl.", "Call /healthz and /whoami.", "Compare the build hash.",
               "Delete the session."])
    http11 = rows.entry(
        kind="knowledge", title="Session-create POST needs --http1.1 from curl",
        summary="curl's default HTTP/2 session-create request is refused because the page serves a duplicated CSRF meta tag.",
        content="Over HTTP/2 the edge serves a duplicated CSRF meta tag (two csrf-token tags) and the "
                "session-create handler rejects the request with a 403. Forcing --http1.1 from curl gets the single "
                "tag and the POST succeeds.",
        useful_for="Anyone scripting the session-create call with curl.",
        systems=["auth", "curl"], tasks=["verify"], session=s1, at=next(at))
    rows.edge(login, api, "cites", by="agent-3",
              note="PROGRAMMATIC API FLOW (no browser): start and stop a session via the admin API. "
                   "Use it when the test needs an authenticated call rather than a page.")
    rows.edge(cookie, api, "derived_from", by="agent-3",
              note="Concrete working recipe for the loopback cookie-jar pattern described there.")
    rows.edge(http11, verify, "clarifies", by="agent-5",
              note="The session-create POST in that recipe needs --http1.1 from curl.")
    return [
        {"query": "owner ruling says table this card for N days: dated dispatch label or hold-until label?",
         "relevant": [general, stale, correction, hold, recipe], "topic": "kanban/dispatch labels"},
        {"query": "how do I log in to production with Playwright for a post-deploy e2e test",
         "relevant": [login, api, verify, http11], "topic": "playwright/production login"},
    ]


def _context(topic, rng: np.random.Generator) -> dict:
    """Template values for one entry of ``topic``: three distinct terms, an environment, a number."""
    system, aspect, task, terms = topic
    a, b, c = (terms[i] for i in rng.permutation(len(terms))[:3])
    return dict(S=system, A=aspect, T=task, a=a, b=b, c=c, env=_pick(rng, _ENVS),
                n=int(_pick(rng, [2, 3, 5, 10, 30, 64, 128, 300, 1024])), m=_pick(rng, _MONTHS))


def _fill(template: str, topic, rng: np.random.Generator) -> str:
    return template.format(**_context(topic, rng))


def _clusters(rows, rng, catalog, n_clusters, sessions, agents) -> list[dict]:
    """Redundant groups: a gotcha, its correction, a clarification, sometimes a see_also sibling."""
    queries, used = [], set()
    for k in range(n_clusters):
        topic = catalog[k % len(catalog)]
        system, aspect, task, terms = topic
        while True:
            a, sym = _pick(rng, terms), _pick(rng, _SYMPTOMS)
            if (system, aspect, a, sym) not in used:
                used.add((system, aspect, a, sym))
                break
        b, c = [t for t in terms if t != a][:2]
        wrong, right = (_CONDITIONS[i] for i in rng.permutation(len(_CONDITIONS))[:2])
        env, env2 = (_ENVS[i] for i in rng.permutation(len(_ENVS))[:2])
        times = iter(sorted(_times(rng, 4).tolist()))
        ctx = dict(S=system, A=aspect, T=task, a=a, b=b, c=c, sym=sym, env=env, env2=env2, wrong=wrong, right=right)
        common = dict(systems=[system], tasks=[task])
        gotcha = rows.entry(
            kind="lesson", title=_cap("Gotcha: {a} {sym} during {T} on {S}".format(**ctx)),
            summary=_cap("{a} causes {sym} during {T} on {S} when {b} {wrong}.".format(**ctx)),
            content=_cap("{a} causes {sym} during {T} on {S} when {b} {wrong}. The workaround we used was to "
                         "restart the {S} job and retry {T}. ".format(**ctx)) + _cap(_fill(_pick(rng, _SENTENCES), topic, rng)),
            useful_for=_cap("Useful when {T} on {S} shows {sym}.".format(**ctx)),
            session=_pick(rng, sessions), at=next(times), **common)
        correction = rows.entry(
            kind="knowledge", title=_cap("Correction: what really triggers {a} {sym} during {T}".format(**ctx)),
            summary=_cap("The {a} {sym} during {T} on {S} are triggered when {b} {right}, not when it {wrong}.".format(**ctx)),
            content=_cap("The {a} {sym} during {T} on {S} are triggered when {b} {right}, not when it {wrong}. "
                         "Restarting still clears the symptom, but fixing {b} stops it coming back.".format(**ctx)),
            useful_for=_cap("Diagnosing {a} {sym} on {S}.".format(**ctx)),
            session=_pick(rng, sessions), at=next(times), **common)
        clarification = rows.entry(
            kind="knowledge", title=_cap("Clarification: {a} {sym} on {env} only".format(**ctx)),
            summary=_cap("The {b} trigger for {a} {sym} applies to {env}; other environments set {b} differently.".format(**ctx)),
            content=_cap("The {b} trigger for {a} {sym} during {T} applies to {env}; other environments set {b} "
                         "differently, so the symptom does not reproduce there.".format(**ctx)),
            useful_for=_cap("Knowing whether the {a} {sym} fix applies to your environment.".format(**ctx)),
            session=_pick(rng, sessions), at=next(times), **common)
        rows.edge(correction, gotcha, "corrects", by=_pick(rng, agents),
                  note="The trigger named in that gotcha is wrong; its workaround still applies.")
        rows.edge(clarification, correction, "clarifies", by=_pick(rng, agents),
                  note=_cap("Scopes that correction to {env}.".format(**ctx)) if rng.random() < 0.8 else None)
        relevant = [gotcha, correction, clarification]
        if rng.random() < 0.5:
            sibling = rows.entry(
                kind="knowledge", title=_cap("{a} {sym} during {T}: the {env2} variant".format(**ctx)),
                summary=_cap("The same {a} {sym} appear in {env2} when {c} {right}.".format(**ctx)),
                content=_cap("The same {a} {sym} during {T} appear in {env2} when {c} {right}; the {S} fix is the "
                             "same but has to be applied to {c}.".format(**ctx)),
                useful_for=_cap("Seeing {a} {sym} in {env2}.".format(**ctx)),
                session=_pick(rng, sessions), at=next(times), **common)
            rows.edge(sibling, gotcha, "see_also", by=_pick(rng, agents),
                      note=_cap("Same symptom from the {c} side.".format(**ctx)) if rng.random() < 0.5 else None)
            relevant.append(sibling)
        phrasing = _pick(rng, ["why do we get {a} {sym} during {T} on {S}", "{S} {a} {sym} during {T}",
                               "what causes {a} {sym} when running {T} on {S}"])
        queries.append({"query": phrasing.format(**ctx), "relevant": relevant, "topic": f"{system}/{aspect}"})
    return queries


def _proof_tokens(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct tokens shaped like ``ZX-4471-Q``."""
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    tokens: list[str] = []
    for _ in range(64 * n + 64):  # bounded: collisions are rare
        if len(tokens) == n:
            break
        a, b, c = (letters[i] for i in rng.integers(0, len(letters), size=3))
        token = f"{a}{b}-{int(rng.integers(1000, 10000))}-{c}"
        if token not in tokens:
            tokens.append(token)
    return tokens


def _hop_lab(rows: _Rows, rng: np.random.Generator, sessions, agents) -> list[dict]:
    """Hop tasks: recipe A matches the query, quirk B holds the proof token, one trusted edge between."""
    tokens = _proof_tokens(rng, len(_HOPS))
    quirks = rng.permutation(len(_QUIRKS))[: len(_HOPS)].tolist()
    leaky = set(rng.permutation(len(_HOPS))[:_LEAKY_HOPS].tolist())
    tasks = []
    for k, (verb, obj, system, task) in enumerate(_HOPS):
        env = _pick(rng, _ENVS[:3])
        ctx = dict(verb=verb, object=obj, env=env)
        quirk_title, layer, fact = _QUIRKS[quirks[k]]
        a = rows.entry(
            kind="playbook", title=f"Recipe: {verb} the {obj} on {system}",
            summary=f"How to {verb} the {obj} on {system}, in {env} or any other environment.",
            content=f"To {verb} the {obj} on {system}, announce the change, use the {system} CLI to {verb} the "
                    f"{obj}, then check the {obj} before closing the ticket. Most attempts to {verb} the {obj} "
                    f"in {env} fail on permissions, so check the service account first.",
            useful_for=f"Anyone asked to {verb} the {obj}.",
            systems=[system], tasks=[task], session=_pick(rng, sessions),
            steps=[f"Announce the {obj} change in the team channel.",
                   _cap(f"{verb} the {obj} with the {system} CLI against the target environment."),
                   f"Check the {obj} afterwards.", "Note the change in the runbook."])
        b = rows.entry(
            kind=_pick(rng, ["fact", "knowledge", "lesson"]), title=quirk_title, summary=fact,
            content=f"{fact} Tracked as {tokens[k]}; quote that reference in any follow-up.",
            useful_for=f"Explaining otherwise puzzling failures at the {layer} layer.",
            systems=[layer], tasks=["debug"], session=_pick(rng, sessions))
        type_, b_is_source = _pick(rng, _HOP_TYPES)
        note = _pick(rng, _HOP_NOTES).format(**ctx)
        if k in leaky:
            note += f" Reference {tokens[k]}."
        src, dst = (b, a) if b_is_source else (a, b)
        rows.edge(src, dst, type_, note=note, by=_pick(rng, agents))
        tasks.append({"id": f"hop-{k + 1:03d}", "query": f"how do I {verb} the {env} {obj}", "a": a, "b": b,
                      "relation": type_, "proof": tokens[k], "leaky": k in leaky})
    return tasks


def _filler(rows: _Rows, rng: np.random.Generator, catalog, n: int, sessions) -> tuple[list[str], dict[str, int]]:
    """``n`` ordinary entries over the topics (at least three per topic); returns ids and topic index."""
    topic_idx = rng.integers(0, len(catalog), size=n)
    topic_idx[: 3 * len(catalog)] = np.arange(3 * len(catalog)) % len(catalog)
    kinds = rng.choice(len(_KINDS), size=n, p=_KIND_P)
    ids, topic_of = [], {}
    for t, kind_i in zip(topic_idx.tolist(), kinds.tolist()):
        topic, kind = catalog[t], _KINDS[kind_i]
        ctx = _context(topic, rng)
        summary = _cap(_SUMMARIES[kind].format(**ctx))
        picked = rng.permutation(len(_SENTENCES))[: int(rng.integers(2, 4))]
        steps = [_cap(s.format(**ctx)) for s in _STEPS[: int(rng.integers(3, 6))]] if kind == "playbook" else []
        id_ = rows.entry(
            kind=kind, title=_cap(_pick(rng, _TITLES[kind]).format(**ctx)), summary=summary,
            content=" ".join([summary] + [_cap(_SENTENCES[j].format(**ctx)) for j in picked]),
            useful_for=_cap(_pick(rng, _USEFUL).format(**ctx)), systems=[topic[0]], tasks=[topic[2]],
            steps=steps, session=_pick(rng, sessions))
        ids.append(id_)
        topic_of[id_] = t
    return ids, topic_of


def _by_topic(filler: list[str], topic_of: dict[str, int]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    for id_ in filler:
        groups.setdefault(topic_of[id_], []).append(id_)
    return groups


def _filler_edges(rows: _Rows, rng, catalog, filler, topic_of, agents) -> None:
    """Agent-authored edges inside topics; the newer entry is the source, so dominance stays acyclic."""
    groups = _by_topic(filler, topic_of)
    types = list(_FILLER_TYPES)
    weights = np.array(_FILLER_WEIGHTS, dtype=float) / sum(_FILLER_WEIGHTS)
    wanted, made = round(0.12 * len(filler)), 0
    for _ in range(4 * wanted):  # bounded: duplicates are skipped
        if made >= wanted:
            break
        x = _pick(rng, filler)
        members = groups[topic_of[x]]
        y = _pick(rng, members)
        if x == y:
            continue
        src, dst = (x, y) if (rows.at[x], x) > (rows.at[y], y) else (y, x)
        type_ = types[int(rng.choice(len(types), p=weights))]
        note = _pick(rng, _FILLER_TYPES[type_])
        if note is not None and rng.random() < 0.3:
            note = None
        elif note is not None:
            note = note.format(**_context(catalog[topic_of[x]], rng))
        if rows.edge(src, dst, type_, note=note, by=_pick(rng, agents)):
            made += 1
            if type_ == "supersedes":
                rows.row[dst]["status"] = "superseded"


def _cite_and_tag(rows: _Rows, rng, catalog, filler, topic_of, total: int) -> None:
    """Prose citations by id or unique 7-char prefix (~5% of entries) and dedup metadata (~10%)."""
    groups = _by_topic(filler, topic_of)
    prefix_count: dict[str, int] = {}
    for id_ in rows.row:
        prefix_count[id_[:7]] = prefix_count.get(id_[:7], 0) + 1

    def other(src: str, same_topic: bool) -> str:
        pool = groups[topic_of[src]] if same_topic and len(groups[topic_of[src]]) > 1 else filler
        for _ in range(100):
            target = _pick(rng, pool)
            if target != src:
                return target
        raise RuntimeError("no other entry to point at")  # unreachable: validated sizes

    n_cite = min(len(filler), max(0, round(0.05 * total) - 1))  # the worked example cites one too
    for i in rng.choice(len(filler), size=n_cite, replace=False).tolist():
        src = filler[i]
        target = other(src, rng.random() < 0.7)
        ref = target[:7] if rng.random() < 0.2 and prefix_count[target[:7]] == 1 else target
        _, aspect, _, terms = catalog[topic_of[target]]
        phrase = aspect if rng.random() < 0.5 else _pick(rng, terms)
        rows.row[src]["content"] += " " + _pick(rng, _CITE_PHRASES).format(ref=ref, p=phrase)

    n_meta = min(len(filler), round(0.10 * total))
    for i in rng.choice(len(filler), size=n_meta, replace=False).tolist():
        src = filler[i]
        key = _pick(rng, ["split_from", "replaces", "recovered_from", "supersedes"])
        target = other(src, True)
        rows.row[src]["metadata"] = json.dumps({key: target}, sort_keys=True)
        if key in ("replaces", "supersedes"):
            rows.row[target]["status"] = "superseded"


def _engineering_triples(rng, catalog, agents) -> pl.DataFrame:
    rows = []
    for system, _, task, terms in catalog:
        at = _times(rng, 3).tolist()
        rows += [(system, "has_component", terms[0], _pick(rng, agents), at[0]),
                 (system, "has_component", terms[1], _pick(rng, agents), at[1]),
                 (terms[0], "affects", task, _pick(rng, agents), at[2])]
    at = _times(rng, 4).tolist()
    rows += [("playwright", "logs_in_via", "storage state", "agent-3", at[0]),
             ("admin-api", "issues", "session cookie", "agent-3", at[1]),
             ("kanban", "uses_label", "hold-until", "agent-7", at[2]),
             ("kanban", "uses_label", "dated dispatch", "agent-7", at[3])]
    return _triples_frame(rows)


# --------------------------------------------------------------------------- business bank

# One flow: systems, steps (key, kind, title, summary, role or None, flags), precedes
# (src, dst, branch label), artifacts (key, title, summary, flags), produces/requires (step, artifact)
# and the holes planted in it (key, hole kind). Everything not listed as a hole is complete.
_FLOWS: dict[str, dict] = {
    "order-to-cash": dict(
        systems=["crm", "erp"],
        steps=[
            ("s1", "step", "Receive customer purchase order", "The sales rep logs the customer's purchase order against the account.", "Sales rep", {"start"}),
            ("s2", "step", "Enter sales order in the ERP", "The purchase order becomes a sales order with prices and delivery dates.", "Sales rep", set()),
            ("d1", "decision", "Discount above 15 percent?", "Orders discounted above 15 percent need the sales director before credit is checked.", "Sales rep", set()),
            ("s3", "step", "Get discount approval", "The sales director approves or trims the discount on the order.", "Sales director", set()),
            ("s4", "step", "Run credit check", "The credit analyst compares the order value with the customer's open credit.", "Credit analyst", set()),
            ("d2", "decision", "Credit limit OK?", "Orders within the customer's credit limit go to the warehouse.", "Credit analyst", set()),
            ("s5", "step", "Pick and ship goods", "The warehouse picks, packs and ships the ordered goods.", "Warehouse lead", set()),
            ("s6", "step", "Place order on credit hold", "The order waits on credit hold and the sales rep tells the customer.", "Credit analyst", {"end"}),
            ("s7", "step", "Issue customer invoice", "Accounts receivable invoices the shipped quantities.", "AR clerk", set()),
            ("s8", "step", "Collect payment", "Accounts receivable matches incoming payments to open invoices.", "AR clerk", set()),
            ("d3", "decision", "Payment disputed?", "A customer may dispute an invoice instead of paying it.", "AR clerk", set()),
            ("s10", "step", "Resolve payment dispute", "Sales and accounts receivable settle the disputed amount with the customer.", "Sales rep", set()),
            ("s9", "step", "Apply cash and close order", "The payment is applied and the order is closed.", "AR clerk", {"end"}),
        ],
        precedes=[("s1", "s2", None), ("s2", "d1", None), ("d1", "s3", "yes"), ("d1", "s4", "no"), ("s3", "s4", None),
                  ("s4", "d2", None), ("d2", "s5", "yes"), ("d2", "s6", "no"), ("s5", "s7", None), ("s7", "s8", None),
                  ("s8", "d3", None), ("d3", "s10", "yes"), ("s10", "s9", None)],
        artifacts=[("po", "Customer purchase order", "The customer's signed purchase order.", {"input"}),
                   ("so", "Sales order", "The sales order record in the ERP.", set()),
                   ("disc", "Discount approval record", "The sales director's written discount approval.", set()),
                   ("dn", "Delivery note", "The note that travels with the shipped goods.", set()),
                   ("inv", "Customer invoice", "The invoice sent to the customer.", set()),
                   ("rcpt", "Payment receipt", "Proof that the customer paid.", {"output"})],
        produces=[("s2", "so"), ("s3", "disc"), ("s5", "dn"), ("s7", "inv"), ("s8", "rcpt")],
        requires=[("s1", "po"), ("s4", "so"), ("s5", "so"), ("s7", "dn"), ("s8", "inv")],
        holes=[("d3", "one_branch"), ("disc", "unused_output")],
    ),
    "hiring": dict(
        systems=["ats", "hris"],
        steps=[
            ("h1", "step", "Open job requisition", "The hiring manager describes the role and why it is needed.", "Hiring manager", {"start"}),
            ("h2", "decision", "Headcount approved?", "Finance checks the requisition against the headcount plan.", "Budget owner", set()),
            ("h4", "step", "Close requisition", "The requisition is closed and the hiring manager is told why.", "Recruiter", {"end"}),
            ("h3", "step", "Post job ad", "The recruiter publishes the job ad on the careers page and job boards.", "Recruiter", set()),
            ("h5", "step", "Screen applications", "The recruiter screens applications and builds a shortlist.", "Recruiter", set()),
            ("h6", "step", "Run interviews", "Interviewers run the structured interviews and fill in scorecards.", "Interviewer", set()),
            ("h7", "decision", "Hire the candidate?", "The hiring manager decides on the shortlist using the scorecards.", "Hiring manager", set()),
            ("h9", "step", "Send rejection", "The recruiter tells the candidate they were not selected.", "Recruiter", set()),
            ("h8", "step", "Make offer", "The recruiter sends the offer letter with salary and start date.", "Recruiter", set()),
            ("h10", "decision", "Offer accepted?", "The candidate accepts or declines the offer.", "Hiring manager", set()),
            ("h11", "step", "Run background check", "The new hire's references and records are checked before the start date.", None, set()),
            ("h12", "step", "Prepare first day", "HR prepares the contract, equipment and first-day plan.", "HR coordinator", {"end"}),
        ],
        precedes=[("h1", "h2", None), ("h2", "h3", "approved"), ("h2", "h4", "refused"), ("h3", "h5", None),
                  ("h5", "h6", None), ("h6", "h7", None), ("h7", "h8", "yes"), ("h7", "h9", "no"), ("h8", "h10", None),
                  ("h10", "h11", "accepted"), ("h10", "h5", "declined"), ("h11", "h12", None)],
        artifacts=[("req", "Job requisition", "The approved description of the open role.", set()),
                   ("ad", "Job posting", "The published job advert.", {"output"}),
                   ("short", "Candidate shortlist", "The candidates chosen for interviews.", set()),
                   ("cards", "Interview scorecards", "Each interviewer's structured scores.", set()),
                   ("offer", "Offer letter", "The signed offer with salary and start date.", set()),
                   ("plan", "Onboarding checklist", "What the new hire needs on day one.", {"output"})],
        produces=[("h1", "req"), ("h3", "ad"), ("h5", "short"), ("h6", "cards"), ("h8", "offer"), ("h12", "plan")],
        requires=[("h2", "req"), ("h6", "short"), ("h7", "cards"), ("h12", "offer")],
        holes=[("h11", "no_owner"), ("h9", "dead_end")],
    ),
    "incident-response": dict(
        systems=["pagerduty", "statuspage"],
        steps=[
            ("i1", "step", "Alert fires", "Monitoring pages the on-call engineer.", "On-call engineer", {"start"}),
            ("i2", "step", "Acknowledge page", "The on-call engineer acknowledges within five minutes.", "On-call engineer", set()),
            ("i3", "decision", "Customer impact?", "The on-call engineer judges whether customers are affected.", "On-call engineer", set()),
            ("i5", "step", "Fix and note in on-call log", "Small issues are fixed directly and written up in the on-call log.", "On-call engineer", {"end"}),
            ("i4", "step", "Declare incident", "The incident commander opens an incident and its channel.", "Incident commander", set()),
            ("i6", "step", "Mitigate impact", "Responders roll back, fail over or shed load to stop the impact.", "On-call engineer", set()),
            ("i7", "decision", "Impact mitigated?", "The incident commander confirms the impact has stopped.", "Incident commander", set()),
            ("i9", "step", "Escalate to service owner", "The incident commander pages the owning team's lead.", "Incident commander", set()),
            ("i10", "step", "Wait for service owner response", "Responders hold while the owning team joins.", "Incident commander", set()),
            ("i8", "step", "Resolve incident", "The incident is resolved and the status page updated.", "Incident commander", set()),
            ("i11", "step", "Write postmortem", "The team writes a blameless postmortem within five days.", "Incident commander", {"end"}),
        ],
        precedes=[("i1", "i2", None), ("i2", "i3", None), ("i3", "i4", "yes"), ("i3", "i5", "no"), ("i4", "i6", None),
                  ("i6", "i7", None), ("i7", "i8", "yes"), ("i7", "i9", "no"), ("i9", "i10", None),
                  ("i10", "i9", None), ("i8", "i11", None)],
        artifacts=[("rec", "Incident record", "The incident's timeline and decisions.", set()),
                   ("runbook", "Service runbook", "The owning team's operational runbook.", set()),
                   ("pm", "Postmortem", "The blameless postmortem document.", {"output"})],
        produces=[("i4", "rec"), ("i11", "pm")],
        requires=[("i6", "runbook"), ("i8", "rec")],
        holes=[("i9", "closed_loop"), ("runbook", "unproduced_input")],
    ),
    "month-end-close": dict(
        systems=["erp", "bank-portal"],
        steps=[
            ("m1", "step", "Freeze posting period", "The controller locks the period against new postings.", "Controller", {"start"}),
            ("m2", "step", "Reconcile bank accounts", "Each bank account is reconciled with the statement.", "Staff accountant", set()),
            ("m3", "step", "Post accruals", "Unbilled costs and revenue are accrued.", "Staff accountant", set()),
            ("m4", "step", "Review reconciliations", "The controller reviews reconciliations and accruals.", "Controller", set()),
            ("m5", "decision", "Variances above threshold?", "Balance variances above the threshold are investigated.", "Controller", set()),
            ("m6", "step", "Investigate variances", "FP&A explains each large variance.", "FP&A analyst", set()),
            ("m7", "step", "Prepare financial statements", "The statements are drafted from the closed ledger.", "Staff accountant", set()),
            ("m8", "decision", "Sign off on close?", "The CFO signs off the month or sends it back.", "CFO", set()),
            ("m9", "step", "Reopen prior period", "A closed period is reopened to post a late correction.", "Controller", set()),
        ],
        precedes=[("m1", "m2", None), ("m2", "m3", None), ("m3", "m4", None), ("m4", "m5", None),
                  ("m5", "m6", "yes"), ("m5", "m7", "no"), ("m6", "m7", None), ("m7", "m8", None), ("m9", "m4", None)],
        artifacts=[("stmt", "Bank statement", "The bank's month-end statement.", {"input"}),
                   ("rec", "Bank reconciliation", "The signed bank reconciliation.", set()),
                   ("accr", "Accrual journal", "The month's accrual entries.", set()),
                   ("memo", "Variance memo", "FP&A's explanation of large variances.", set()),
                   ("fs", "Financial statements", "The month's income statement and balance sheet.", {"output"})],
        produces=[("m2", "rec"), ("m3", "accr"), ("m6", "memo"), ("m7", "fs")],
        requires=[("m2", "stmt"), ("m4", "rec"), ("m4", "accr")],
        holes=[("m8", "one_branch"), ("memo", "unused_output"), ("m9", "unreachable")],
    ),
    "procure-to-pay": dict(
        systems=["erp", "procurement-portal"],
        steps=[
            ("p1", "step", "Raise purchase requisition", "The budget owner asks to buy goods or services.", "Budget owner", {"start"}),
            ("p2", "decision", "Within budget?", "The controller checks the requisition against the budget.", "Controller", set()),
            ("p4", "step", "Return requisition to requester", "The requisition goes back with the budget gap noted.", "Procurement officer", set()),
            ("p3", "step", "Issue purchase order", "Procurement issues a purchase order to an approved vendor.", "Procurement officer", set()),
            ("p5", "step", "Receive goods", "The warehouse records what arrived against the order.", "Warehouse lead", set()),
            ("p6", "step", "Match invoice to order and receipt", "Accounts payable matches the vendor invoice to the order and the receipt.", "AP clerk", set()),
            ("p7", "decision", "Three-way match OK?", "Quantities and prices agree within tolerance.", "AP clerk", set()),
            ("p9", "step", "Resolve mismatch with vendor", "Procurement settles the difference with the vendor.", "Procurement officer", set()),
            ("p8", "step", "Schedule payment", "Accounts payable adds the invoice to the next payment run.", "AP clerk", set()),
            ("p10", "step", "File payment records", "The paid invoice and its match are filed for audit.", "AP clerk", {"end"}),
            ("p11", "step", "Vendor self-registration", "A new vendor registers its details in the portal.", "Procurement officer", set()),
        ],
        precedes=[("p1", "p2", None), ("p2", "p3", "yes"), ("p2", "p4", "no"), ("p3", "p5", None), ("p5", "p6", None),
                  ("p6", "p7", None), ("p7", "p8", "yes"), ("p7", "p9", "no"), ("p9", "p6", None),
                  ("p8", "p10", None), ("p11", "p3", None)],
        artifacts=[("preq", "Purchase requisition", "The budget owner's purchase request.", set()),
                   ("vendors", "Approved vendor list", "Vendors cleared to receive orders.", set()),
                   ("order", "Purchase order", "The order sent to the vendor.", set()),
                   ("grn", "Goods receipt", "What actually arrived.", set()),
                   ("vinv", "Vendor invoice", "The vendor's invoice.", {"input"}),
                   ("run", "Payment run file", "The bank file for the payment run.", {"output"})],
        produces=[("p1", "preq"), ("p3", "order"), ("p5", "grn"), ("p8", "run")],
        requires=[("p2", "preq"), ("p3", "vendors"), ("p5", "order"), ("p6", "order"), ("p6", "grn"), ("p6", "vinv")],
        holes=[("p4", "dead_end"), ("vendors", "unproduced_input"), ("p11", "unreachable")],
    ),
    "customer-onboarding": dict(  # declares no start: c1, the only step without a predecessor, is its start
        systems=["crm", "support-desk"],
        steps=[
            ("c1", "step", "Sign contract", "The customer signs the order form and contract.", "Sales rep", set()),
            ("c2", "step", "Hold kickoff call", "Customer success agrees goals and a timeline with the customer.", "Customer success manager", set()),
            ("c3", "step", "Configure account", "The solutions engineer sets up the customer's workspace.", "Solutions engineer", set()),
            ("c4", "step", "Import customer data", "The customer's export is loaded into the workspace.", None, set()),
            ("c5", "decision", "Data import verified?", "Row counts and samples are checked against the export.", "Solutions engineer", set()),
            ("c7", "step", "Request corrected export", "The customer is asked for a corrected export.", "Solutions engineer", set()),
            ("c8", "step", "Wait for corrected export", "The project waits for the customer's corrected file.", "Customer success manager", set()),
            ("c6", "step", "Train customer admins", "Customer admins are trained on the workspace.", "Customer success manager", set()),
            ("c9", "step", "Hand over to support", "The account moves to the support team.", "Support lead", {"end"}),
            ("c10", "step", "Legacy migration review", "An old-platform customer's migration plan is reviewed.", "Solutions engineer", set()),
            ("c11", "step", "Map legacy data fields", "Old-platform fields are mapped onto the new workspace.", "Solutions engineer", set()),
        ],
        precedes=[("c1", "c2", None), ("c2", "c3", None), ("c3", "c4", None), ("c4", "c5", None), ("c5", "c6", "yes"),
                  ("c5", "c7", "no"), ("c7", "c8", None), ("c8", "c7", None), ("c6", "c9", None),
                  ("c10", "c11", None), ("c11", "c10", None), ("c11", "c3", None)],
        artifacts=[("contract", "Signed contract", "The customer's signed contract.", set()),
                   ("oplan", "Onboarding plan", "Goals and timeline agreed at kickoff.", set())],
        produces=[("c1", "contract"), ("c2", "oplan")],
        requires=[("c2", "contract"), ("c3", "oplan")],
        holes=[("c4", "no_owner"), ("c7", "closed_loop"), ("c10", "unreachable"), ("c11", "unreachable")],
    ),
    "expense-reimbursement": dict(  # complete: no holes; no declared start
        systems=["expense-app", "erp"],
        steps=[
            ("e1", "step", "Submit expense claim", "The employee submits the claim with receipts.", "Employee", set()),
            ("e2", "decision", "Receipts attached?", "Accounts payable checks every line has a receipt.", "AP clerk", set()),
            ("e4", "step", "Request missing receipts", "The employee is asked for the missing receipts.", "AP clerk", set()),
            ("e5", "step", "Attach receipts to claim", "The employee adds the missing receipts.", "Employee", set()),
            ("e3", "step", "Approve claim", "The budget owner approves the claim.", "Budget owner", set()),
            ("e6", "step", "Reimburse employee", "The approved amount is paid with the next payroll.", "AP clerk", {"end"}),
        ],
        precedes=[("e1", "e2", None), ("e2", "e3", "yes"), ("e2", "e4", "no"), ("e4", "e5", None), ("e5", "e2", None),
                  ("e3", "e6", None)],
        artifacts=[("claim", "Expense claim", "The employee's itemised claim.", set()),
                   ("appr", "Claim approval", "The budget owner's approval.", set()),
                   ("pay", "Reimbursement payment", "The payroll line that pays the claim.", {"output"})],
        produces=[("e1", "claim"), ("e3", "appr"), ("e6", "pay")],
        requires=[("e2", "claim"), ("e6", "appr")],
        holes=[],
    ),
}

# Policies: (key, title, summary, [(type, flow, step key, note)]). Queries: (query, [policy or (flow, key)]).
_POLICIES = [
    ("discount", "Discount approval policy", "Discounts above 15 percent need the sales director's approval before credit is checked.",
     [("applies_to", "order-to-cash", "d1", "The threshold this decision tests."), ("informs", "order-to-cash", "s3", None)]),
    ("credit", "Credit limit policy", "Customers get a credit limit from their payment history; orders beyond it wait on credit hold.",
     [("applies_to", "order-to-cash", "d2", "The limit this decision compares against."), ("informs", "order-to-cash", "s6", None)]),
    ("severity", "Incident severity levels", "SEV1 to SEV3 by customer impact; any customer impact is at least SEV2.",
     [("informs", "incident-response", "i3", "How to grade the impact asked about here."),
      ("concerns", "incident-response", "i4", None)]),
    ("match", "Three-way match tolerance", "Price differences under 2 percent pass the three-way match without review.",
     [("applies_to", "procure-to-pay", "p7", "The tolerance this check uses.")]),
    ("offer", "Offer approval policy", "Offers above the salary band midpoint need the department head's approval.",
     [("concerns", "hiring", "h8", "Who must approve before the offer goes out.")]),
    ("calendar", "Close calendar", "The books close on the fifth working day; bank reconciliations are due on day three.",
     [("informs", "month-end-close", "m1", "Sets the day this step runs."), ("informs", "month-end-close", "m2", None)]),
    ("expenses", "Expense policy", "Every expense line above 25 euros needs a receipt; claims are paid with the next payroll.",
     [("applies_to", "expense-reimbursement", "e2", "The receipt threshold this check enforces.")]),
    ("retention", "Customer data retention", "Customer exports used for onboarding are deleted 30 days after import.",
     [("concerns", "customer-onboarding", "c4", "How long the imported export may be kept.")]),
]
_BUSINESS_QUERIES = [
    ("who approves a discount over 15 percent", ["discount", ("order-to-cash", "d1"), ("order-to-cash", "s3")]),
    ("what happens when an order exceeds the customer's credit limit", ["credit", ("order-to-cash", "d2"), ("order-to-cash", "s6")]),
    ("how do we declare an incident", [("incident-response", "i4"), ("incident-response", "i3"), "severity"]),
    ("price tolerance for matching vendor invoices", ["match", ("procure-to-pay", "p6"), ("procure-to-pay", "p7")]),
    ("steps to close the books at month end", [("month-end-close", k) for k in ("m1", "m2", "m3", "m4", "m7")] + ["calendar"]),
    ("how do we onboard a new customer after the contract is signed", [("customer-onboarding", k) for k in ("c1", "c2", "c3")]),
    ("who approves a job offer", [("hiring", "h8"), "offer"]),
    ("which expenses need receipts", ["expenses", ("expense-reimbursement", "e2"), ("expense-reimbursement", "e4")]),
    ("what happens after an incident is mitigated", [("incident-response", "i8"), ("incident-response", "i11")]),
    ("when is the customer invoice issued", [("order-to-cash", "s7"), ("order-to-cash", "s5")]),
    ("background check before the start date", [("hiring", "h11"), ("hiring", "h12")]),
    ("how long do we keep customer data exports", ["retention", ("customer-onboarding", "c4")]),
]


def business_bank(*, seed: int = 7) -> DemoBank:
    """Seven business process flows with planted holes, roles, artifacts and linked policies.

    The flows follow the process-flow conventions (``step``/``decision``/``artifact``/``role``
    kinds, ``precedes``/``produces``/``requires``/``owned_by`` edges, start/end/input/output
    declarations in metadata). ``truth["holes"]`` lists every planted hole; nothing else is one.

    >>> bank = business_bank(seed=1)
    >>> sorted({h["hole"] for h in bank.truth["holes"]})[:3]
    ['closed_loop', 'dead_end', 'no_owner']
    """
    rng = np.random.default_rng(seed)
    role_flows: dict[str, list[str]] = {}
    for flow, spec in _FLOWS.items():
        for *_, role, _flags in spec["steps"]:
            if role is not None and flow not in role_flows.setdefault(role, []):
                role_flows[role].append(flow)
    size = len(role_flows) + sum(len(s["steps"]) + len(s["artifacts"]) for s in _FLOWS.values()) + len(_POLICIES)
    rows = _Rows(rng, _hex_ids(rng, size))
    importer = dict(source="import", by="import:process-map")
    roles = {role: rows.entry(kind="role", title=role, summary=f"The {role} owns steps in {', '.join(flows)}.",
                              content=f"The {role} role. Owns steps in the {', '.join(flows)} flows.",
                              useful_for=f"Finding who does what in {', '.join(flows)}.", systems=["hris"],
                              metadata={"flows": flows}, session="import-2026-10")
             for role, flows in role_flows.items()}
    ids: dict[tuple[str, str], str] = {}
    for flow, spec in _FLOWS.items():
        ids.update(_flow_rows(rows, flow, spec, roles, importer))
    policies = {}
    for key, title, summary, links in _POLICIES:
        policies[key] = rows.entry(kind="knowledge", title=title, summary=summary,
                                   content=f"{summary} Owned by finance operations; reviewed every quarter.",
                                   useful_for=f"Applying the {title.lower()}.", systems=["policy-wiki"],
                                   tasks=sorted({flow for _, flow, _, _ in links}), session="policy-import")
        for type_, flow, step, note in links:
            rows.edge(policies[key], ids[(flow, step)], type_, note=note, by=_pick(rng, ["agent-2", "agent-6"]))
    holes = [{"id": ids[(flow, key)], "flow": flow, "hole": hole}
             for flow, spec in _FLOWS.items() for key, hole in spec["holes"]]
    queries = [{"id": f"q{i:03d}", "query": q,
                "relevant": [policies[r] if isinstance(r, str) else ids[r] for r in refs],
                "topic": _query_topic(refs)}
               for i, (q, refs) in enumerate(_BUSINESS_QUERIES, 1)]
    entries, edges = rows.frames()
    triples = _triples_frame([(role, "works_in", flow, "import:process-map", _REF_US - 200 * _DAY_US)
                              for role, flows in role_flows.items() for flow in flows])
    truth = {"bank": "business", "seed": seed, "generator": _GENERATOR, "queries": queries,
             "hop_tasks": [], "holes": holes}
    return DemoBank("business", entries, edges, triples, truth)


def _query_topic(refs) -> str:
    flows = [r[0] for r in refs if not isinstance(r, str)]
    return flows[0] if flows else "policies"


def _flow_rows(rows: _Rows, flow: str, spec: dict, roles: dict, importer: dict) -> dict[tuple[str, str], str]:
    """One flow's step, decision and artifact entries and its process edges."""
    ids: dict[tuple[str, str], str] = {}
    labels = {}
    for src, _, label in spec["precedes"]:
        if label is not None:
            labels.setdefault(src, []).append(label)
    for key, kind, title, summary, role, flags in spec["steps"]:
        meta = {"flow": flow, **{flag: True for flag in sorted(flags)}}
        owner = f" Owned by the {role}." if role else ""
        branches = f" Branches: {', '.join(labels.get(key, []))}." if kind == "decision" else ""
        ids[(flow, key)] = rows.entry(kind=kind, title=title, summary=summary,
                                      content=f"{summary}{owner}{branches} Part of the {flow} flow.",
                                      useful_for=f"Walking through the {flow} flow.", systems=spec["systems"],
                                      tasks=[flow], metadata=meta, session=f"import-{flow}")
    for key, title, summary, flags in spec["artifacts"]:
        meta = {"flow": flow, **{flag: True for flag in sorted(flags)}}
        ids[(flow, key)] = rows.entry(kind="artifact", title=title, summary=summary,
                                      content=f"{summary} Used in the {flow} flow.",
                                      useful_for=f"Knowing what the {flow} flow passes along.",
                                      systems=spec["systems"], tasks=[flow], metadata=meta, session=f"import-{flow}")
    for key, _, _, _, role, _ in spec["steps"]:
        if role is not None:
            rows.edge(ids[(flow, key)], roles[role], "owned_by", **importer)
    for src, dst, label in spec["precedes"]:
        rows.edge(ids[(flow, src)], ids[(flow, dst)], "precedes", note=label, **importer)
    for type_ in ("produces", "requires"):
        for step, art in spec[type_]:
            rows.edge(ids[(flow, step)], ids[(flow, art)], type_, **importer)
    return ids


# --------------------------------------------------------------------------- synthetic bank

_SYN_KINDS = ["knowledge", "procedure", "playbook", "lesson", "fact", "decision", "event"]
_SYN_KIND_P = [0.35, 0.15, 0.08, 0.15, 0.15, 0.07, 0.05]
_SYN_DOMINANCE = ["supersedes", "corrects", "clarifies", "part_of", "split_from", "derived_from"]
_SYN_RELATIONS = ["see_also", "cites", "informs", "applies_to", "refines", "learned_from", "resolves", "follows"]
_SYN_NOTES = ["Read before changing {} there.", "The {} step in that entry depends on this.",
              "Covers the {} case of that entry."]
_FLOW_SIZE = 7  # five steps, one artifact, one role


def synthetic_bank(*, entries: int, seed: int = 7) -> DemoBank:
    """A large vocabulary-generated bank for benchmarks, built with vectorised numpy and polars.

    About ``entries / 30`` topics of pseudo-words, about two trusted edges per entry (some
    dominance edges inside topics), and one small complete process flow per 2,000 entries.

    >>> bank = synthetic_bank(entries=3000, seed=2)
    >>> bank.entries.height, bank.edges.height > 4000
    (3000, True)
    """
    if not isinstance(entries, int) or entries < 1:
        raise ValidationError("entries", entries, "must be a positive integer")
    rng = np.random.default_rng(seed)
    ids = np.array(_hex_ids(rng, entries))
    n_flows = entries // 2000
    n_text = entries - _FLOW_SIZE * n_flows
    n_topics = max(1, n_text // 30)
    vocab = _pseudo_words(rng, max(2000, 4 * n_topics + 1000))
    topic_words = rng.integers(0, vocab.len(), size=(n_topics, 10))
    topic = rng.integers(0, n_topics, size=n_text)
    created = _times(rng, entries)
    text = _synthetic_entries(rng, ids[:n_text], topic, topic_words, vocab, created[:n_text])
    edges = _synthetic_edges(rng, ids[:n_text], topic, topic_words, vocab, created[:n_text])
    flows, flow_edges = _synthetic_flows(ids[n_text:], created[n_text:], n_flows)
    entries_frame = conform(pl.concat([text, flows], how="diagonal_relaxed"), "entries").sort("created_at", "id")
    edges_frame = conform(pl.concat([edges, flow_edges], how="diagonal_relaxed"), "edges").sort(
        "created_at", "src", "dst", "type")
    picked = rng.permutation(n_topics)[: min(50, n_topics)].tolist()
    members = pl.DataFrame({"id": ids[:n_text], "topic": topic}).group_by("topic").agg("id")
    relevant = dict(zip(members["topic"].to_list(), members["id"].to_list()))
    queries = [{"id": f"q{i:03d}", "query": " ".join(vocab.gather(topic_words[t, :3]).to_list()),
                "relevant": sorted(relevant.get(t, [])), "topic": f"topic-{t:05d}"}
               for i, t in enumerate(picked, 1)]
    truth = {"bank": "synthetic", "seed": seed, "generator": _GENERATOR, "topics": n_topics,
             "queries": queries, "hop_tasks": [], "holes": []}
    return DemoBank("synthetic", entries_frame, edges_frame, empty("triples"), truth)


def _pseudo_words(rng: np.random.Generator, n: int) -> pl.Series:
    """``n`` distinct three-syllable pseudo-words."""
    syllables = np.array([c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"])
    parts = syllables[rng.integers(0, syllables.size, size=(2 * n, 3))]
    words = np.char.add(np.char.add(parts[:, 0], parts[:, 1]), parts[:, 2])
    _, first = np.unique(words, return_index=True)
    return pl.Series("word", words[np.sort(first)][:n])


def _synthetic_entries(rng, ids, topic, topic_words, vocab: pl.Series, created) -> pl.DataFrame:
    n = ids.size
    slots = topic_words[topic[:, None], rng.integers(0, topic_words.shape[1], size=(n, 8))]
    general = rng.integers(0, vocab.len(), size=(n, 3))
    words = {f"w{j}": vocab.gather(slots[:, j]) for j in range(8)}
    words |= {f"g{j}": vocab.gather(general[:, j]) for j in range(3)}
    words["sys"] = vocab.gather(topic_words[topic, 0])
    words["task"] = vocab.gather(topic_words[topic, 1])
    kinds = np.array(_SYN_KINDS)[rng.choice(len(_SYN_KINDS), size=n, p=_SYN_KIND_P)]
    sessions = np.array([f"sess-{v:06x}" for v in rng.integers(0, 2**24, size=max(1, n // 5)).tolist()])
    rewritten = rng.random(n) < 1 / 3
    updated = created + (rewritten * rng.uniform(0, 0.6, n) * (_REF_US - created)).astype(np.int64)
    summary = pl.format("The {} {} changes how {} handles {}.", "w0", "w1", "w2", "g0")
    return pl.DataFrame(words).with_columns(
        id=pl.Series(ids), kind=pl.Series(kinds),
        title=pl.format("{} {} {}", "w0", "w1", "g1"),
        summary=summary,
        content=pl.concat_str([summary, pl.format(" When {} meets {}, check {} before {}.", "w3", "w4", "w5", "g2"),
                               pl.format(" Teams saw {} and {} together during {}.", "w6", "w7", "task")]),
        useful_for=pl.format("Useful when working on {} {}.", "w0", "w2"),
        systems=pl.concat_list("sys"), tasks=pl.concat_list("task"),
        steps=pl.when(pl.Series(kinds) == "playbook")
        .then(pl.concat_list(pl.format("Check {}.", "w2"), pl.format("Adjust {}.", "w3"), pl.format("Verify {}.", "w4")))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        metadata=pl.lit("{}"), session_id=pl.Series(sessions[rng.integers(0, sessions.size, size=n)]),
        created_at=_time_series("created_at", created), updated_at=_time_series("updated_at", updated),
        usage_count=pl.lit(0, dtype=pl.Int64), status=pl.lit("active"),
    )


def _synthetic_edges(rng, ids, topic, topic_words, vocab: pl.Series, created) -> pl.DataFrame:
    """Two edges per entry: one to a topic sibling, one to a sibling (90%) or anyone (10%)."""
    n = ids.size
    order = np.argsort(topic, kind="stable")
    sizes = np.bincount(topic, minlength=topic_words.shape[0])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n) - starts[topic[order]]

    def sibling() -> np.ndarray:
        size = sizes[topic]
        step = rng.integers(1, np.maximum(size, 2))
        return order[starts[topic] + (pos + step) % size]

    anyone = rng.random(n) < 0.1
    a = np.concatenate([np.arange(n), np.arange(n)])
    b = np.concatenate([sibling(), np.where(anyone, rng.integers(0, n, size=n), sibling())])
    same = topic[a] == topic[b]
    newer = (created[a] > created[b]) | ((created[a] == created[b]) & (a > b))
    src, dst = np.where(newer, a, b), np.where(newer, b, a)
    dominance = same & (rng.random(a.size) < 0.25)
    types = np.where(dominance, np.array(_SYN_DOMINANCE)[rng.integers(0, len(_SYN_DOMINANCE), a.size)],
                     np.array(_SYN_RELATIONS)[rng.integers(0, len(_SYN_RELATIONS), a.size)])
    source = np.array(["author", "judge", "import"])[rng.choice(3, size=a.size, p=[0.85, 0.1, 0.05])]
    by = np.where(source == "author", np.char.add("agent-", rng.integers(1, 13, a.size).astype(str)),
                  np.where(source == "judge", "judge", "import"))
    template = rng.integers(0, len(_SYN_NOTES), a.size)
    word = vocab.gather(topic_words[topic[dst], rng.integers(0, topic_words.shape[1], a.size)])
    note = pl.when(pl.lit(pl.Series(rng.random(a.size) < 0.5))).then(None)
    for k, text in enumerate(_SYN_NOTES):
        note = note.when(pl.lit(pl.Series(template == k))).then(pl.format(text, pl.lit(word)))
    at = np.maximum(created[src], created[dst]) + rng.integers(60, 36_000, a.size) * 1_000_000
    frame = pl.DataFrame({"src": ids[src], "dst": ids[dst], "type": types, "source": source, "created_by": by,
                          "created_at": at}).with_columns(
        note=note.otherwise(None), evidence=pl.lit("{}"), weight=pl.lit(1.0),
        created_at=_time_series("created_at", at), seen_at=_time_series("seen_at", at))
    return frame.filter(pl.col("src") != pl.col("dst")).unique(["src", "dst", "type"], keep="first", maintain_order=True)


def _synthetic_flows(ids, created, n_flows: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``n_flows`` complete five-step flows: start to end, every step owned, one artifact passed along."""
    entries, edges = [], []
    for f in range(n_flows):
        name = f"flow-{f + 1:04d}"
        block = ids[_FLOW_SIZE * f: _FLOW_SIZE * (f + 1)].tolist()
        at = created[_FLOW_SIZE * f: _FLOW_SIZE * (f + 1)].tolist()
        steps, artifact, role = block[:5], block[5], block[6]
        for k, id_ in enumerate(steps):
            meta = {"flow": name, **({"start": True} if k == 0 else {}), **({"end": True} if k == 4 else {})}
            entries.append(("step", f"Step {k + 1} of {name}", meta, id_, at[k]))
        entries.append(("artifact", f"Work item of {name}", {"flow": name}, artifact, at[5]))
        entries.append(("role", f"Owner of {name}", {"flows": [name]}, role, at[6]))
        edges += [(s, t, "precedes") for s, t in zip(steps, steps[1:])]
        edges += [(s, role, "owned_by") for s in steps]
        edges += [(steps[0], artifact, "produces"), (steps[2], artifact, "requires")]
    if not entries:
        return empty("entries"), empty("edges")
    kind, title, meta, id_, at = zip(*entries)
    flows = pl.DataFrame({"id": id_, "kind": kind, "title": title,
                          "metadata": [json.dumps(m, sort_keys=True) for m in meta]}).with_columns(
        summary=pl.col("title") + ".", content=pl.col("title") + ", part of a generated process flow.",
        useful_for=pl.lit("Benchmarking process walks."), systems=pl.lit([], dtype=pl.List(pl.String)),
        tasks=pl.lit([], dtype=pl.List(pl.String)), steps=pl.lit([], dtype=pl.List(pl.String)),
        session_id=pl.lit("import-flows"), created_at=_time_series("created_at", list(at)),
        updated_at=_time_series("updated_at", list(at)), usage_count=pl.lit(0, dtype=pl.Int64),
        status=pl.lit("active"))
    when = dict(zip(id_, at))
    src, dst, type_ = zip(*edges)
    edge_at = [max(when[s], when[t]) + 60_000_000 for s, t in zip(src, dst)]
    flow_edges = pl.DataFrame({"src": src, "dst": dst, "type": type_}).with_columns(
        source=pl.lit("import"), note=pl.lit(None, dtype=pl.String), evidence=pl.lit("{}"), weight=pl.lit(1.0),
        created_by=pl.lit("import:process-map"), created_at=_time_series("created_at", edge_at),
        seen_at=_time_series("seen_at", edge_at))
    return conform(flows, "entries"), conform(flow_edges, "edges")
