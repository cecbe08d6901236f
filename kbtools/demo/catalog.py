"""Word catalogs of the engineering bank: topics, entry templates and agent-edge notes.

Pure data. A topic is ``(system, aspect, task, six terms)``; :data:`MAX_TOPICS` of them are
available, ordered so that the first ``k`` cover as many systems as possible.
"""

from __future__ import annotations

__all__ = ["MAX_TOPICS"]


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
#: Every topic as ``(system, aspect, task, terms)``, the first topic of each system first.
TOPIC_LIST = [(s, a, t, terms) for k in range(4) for s, topics in _TOPICS.items() for a, t, terms in [topics[k]]]
#: How many topics ``engineering_bank(topics=...)`` can draw from (four per system).
MAX_TOPICS = len(TOPIC_LIST)

#: Environments a text may name (the first three are the ones tasks run against).
ENVS = ["staging", "production", "preview", "dev"]
#: Month names an incident may be dated by, in the order of the demo's year.
MONTHS = ["November", "December", "January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October"]
#: The entry kinds ordinary entries are drawn from, with :data:`KIND_WEIGHTS` as their shares.
DRAWN_KINDS = ["knowledge", "procedure", "playbook", "lesson", "fact", "decision", "event", "insight", "skill"]
KIND_WEIGHTS = [0.28, 0.16, 0.08, 0.14, 0.14, 0.08, 0.08, 0.02, 0.02]

#: kind -> title templates (``{S}`` system, ``{a}``/``{b}`` terms, ``{A}`` aspect, ``{T}`` task, ...).
TITLES = {
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
#: kind -> the summary template of an entry of that kind.
SUMMARIES = {
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
#: Sentence templates that content paragraphs are drawn from.
SENTENCES = [
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
#: Templates of an entry's useful-for line.
USEFUL = ["Useful when {A} shows up during {T} on {S}.", "Read before changing {a} on {S}.",
          "For agents running {T} who see {b} misbehave.", "When {T} on {S} stalls around {a}."]
#: Templates of a procedure's or playbook's steps.
STEPS = ["Check {a} on {env}.", "Compare {b} with the last good {T}.", "Adjust {a} and rerun {T}.",
         "Watch {c} for ten minutes.", "Record the change in the {S} runbook."]
#: Symptoms a lesson or incident text may name.
SYMPTOMS = ["timeouts", "stale reads", "403 errors", "silent resets", "duplicate runs", "dropped requests",
            "hangs", "partial writes", "memory spikes", "slow starts"]
#: Conditions under which a term misbehaves, for lesson texts.
CONDITIONS = ["is left at its default", "is shared between environments", "is changed mid-run",
              "is set per pod", "is cached by the client", "is rotated", "is empty", "is set twice"]
#: Sentences by which one entry cites another (``{ref}``) about a pattern (``{p}``).
CITE_PHRASES = ["See {ref} for the {p} pattern.", "This builds on {ref}, which covers {p}.",
                "{ref} has the longer write-up on {p}.", "Same root cause as {ref} ({p})."]

#: Agent-authored relation edges between ordinary entries: type -> notes (how it pertains).
FILLER_TYPES = {
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
#: The shares of :data:`FILLER_TYPES`' edge types, in its order.
FILLER_WEIGHTS = [20, 10, 8, 8, 4, 6, 8, 8, 6, 6, 5, 5, 3]
