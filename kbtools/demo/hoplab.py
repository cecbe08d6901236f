"""The engineering bank's hop lab: tasks whose answer needs one hop along a trusted edge.

Each task pairs a recipe A that matches the query with a low-level quirk B, in a vocabulary
that shares no content word with the query, that alone holds the task's proof token.
"""

from __future__ import annotations

import numpy as np

from kbtools.demo.catalog import ENVS
from kbtools.demo.rows import BankRows, capitalised, pick


# Hop-lab tasks: (verb, object, system, task). A is the recipe for "<verb> the <env> <object>".
HOPS = [
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


def add_hop_lab(rows: BankRows, rng: np.random.Generator, sessions, agents) -> list[dict]:
    """Hop tasks: recipe A matches the query, quirk B holds the proof token, one trusted edge between."""
    tokens = _proof_tokens(rng, len(HOPS))
    quirks = rng.permutation(len(_QUIRKS))[: len(HOPS)].tolist()
    leaky = set(rng.permutation(len(HOPS))[:_LEAKY_HOPS].tolist())
    tasks = []
    for k, (verb, obj, system, task) in enumerate(HOPS):
        env = pick(rng, ENVS[:3])
        ctx = dict(verb=verb, object=obj, env=env)
        quirk_title, layer, fact = _QUIRKS[quirks[k]]
        a = rows.entry(
            kind="playbook", title=f"Recipe: {verb} the {obj} on {system}",
            summary=f"How to {verb} the {obj} on {system}, in {env} or any other environment.",
            content=f"To {verb} the {obj} on {system}, announce the change, use the {system} CLI to {verb} the "
                    f"{obj}, then check the {obj} before closing the ticket. Most attempts to {verb} the {obj} "
                    f"in {env} fail on permissions, so check the service account first.",
            useful_for=f"Anyone asked to {verb} the {obj}.",
            systems=[system], tasks=[task], session=pick(rng, sessions),
            steps=[f"Announce the {obj} change in the team channel.",
                   capitalised(f"{verb} the {obj} with the {system} CLI against the target environment."),
                   f"Check the {obj} afterwards.", "Note the change in the runbook."])
        b = rows.entry(
            kind=pick(rng, ["fact", "knowledge", "lesson"]), title=quirk_title, summary=fact,
            content=f"{fact} Tracked as {tokens[k]}; quote that reference in any follow-up.",
            useful_for=f"Explaining otherwise puzzling failures at the {layer} layer.",
            systems=[layer], tasks=["debug"], session=pick(rng, sessions))
        type_, b_is_source = pick(rng, _HOP_TYPES)
        note = pick(rng, _HOP_NOTES).format(**ctx)
        if k in leaky:
            note += f" Reference {tokens[k]}."
        src, dst = (b, a) if b_is_source else (a, b)
        rows.edge(src, dst, type_, note=note, by=pick(rng, agents))
        tasks.append({"id": f"hop-{k + 1:03d}", "query": f"how do I {verb} the {env} {obj}", "a": a, "b": b,
                      "relation": type_, "proof": tokens[k], "leaky": k in leaky})
    return tasks
