"""kb mcp: the real MCP Python client over stdio, and over streamable HTTP on 127.0.0.1 with a bearer
token, against ``python -m kbtools mcp PATH`` (a subprocess), on copies of the engineering demo bank
embedded with the hashing embedder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import kbtools as kb
from kbtools.store.vectors import vector_count
from kbtools.mcp import READ_TOOLS, WRITE_TOOLS

mcp = pytest.importorskip("mcp", reason="kb mcp needs the mcp extra: pip install -e '.[mcp]'")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
import httpx2  # noqa: E402  (the SDK's HTTP client)

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "ORT_DISABLE_TELEMETRY": "1"}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory, demo_dir):
    """The engineering demo bank, copied and embedded once with the hashing embedder."""
    root = tmp_path_factory.mktemp("mcp") / "engineering"
    shutil.copytree(demo_dir / "engineering", root)
    kb.embed_bank(kb.open_bank(root), embedder="hashing")
    return root


@pytest.fixture
def eng(embedded, tmp_path):
    """A private, writable copy of the embedded bank."""
    path = tmp_path / "engineering"
    shutil.copytree(embedded, path)
    return path


@contextlib.asynccontextmanager
async def session(path: Path, *args: str):
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtools", "mcp", str(path), *args],
                                   env=ENV, cwd=str(ROOT))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, client_info=Implementation(name="pytest", version="1")) as s:
                await s.initialize()
                yield s


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=120))


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def pick_pair(path: Path) -> tuple[str, str]:
    """Two entries with no edge between them, either way."""
    bank = kb.open_bank(path)
    ids = bank.entries.sort("id")["id"].to_list()
    joined = {frozenset(p) for p in bank.edges.select("src", "dst").iter_rows()}
    for a in ids[:50]:
        for b in ids[50:100]:
            if frozenset((a, b)) not in joined:
                return a, b
    raise AssertionError("no unlinked pair")


def test_lists_tools_and_answers_exactly_as_answer_text(eng):
    question = "how do I log in to production with playwright"
    expected = kb.query(kb.open_bank(eng), question, k=5, record_usage=False)
    expected_recall = kb.recall(kb.open_bank(eng), question, links=2, record_usage=False)
    some = expected.results[0].id

    async def go():
        async with session(eng) as s:
            tools = (await s.list_tools()).tools
            answer = await s.call_tool("query_knowledge_bank", {"query": question, "k": 5})
            recalled = await s.call_tool("recall", {"query": question, "links": 2})
            entry = await s.call_tool("get_entry", {"id": some})
            stats = await s.read_resource("kb://stats")
            resource = await s.read_resource(f"kb://entry/{some}")
            return tools, answer, recalled, entry, stats, resource

    tools, answer, recalled, entry, stats, resource = run(go())
    assert [t.name for t in tools] == [*READ_TOOLS, *WRITE_TOOLS]
    for t in tools:
        assert len(t.description) > 40 and t.input_schema["type"] == "object", t.name
    assert tools[0].input_schema["required"] == ["query"]
    assert not answer.is_error
    assert text(answer) == expected.text()
    assert [r["id"] for r in answer.structured_content["results"]] == expected.ids()
    assert text(recalled) == expected_recall.text() and "Brought in by links" in text(recalled)
    assert f"[{some}]" in text(entry) and entry.structured_content["entry"]["id"] == some
    assert json.loads(stats.contents[0].text)["entries"] == kb.open_bank(eng).entries.height
    assert json.loads(resource.contents[0].text)["entry"]["id"] == some
    assert kb.open_bank(eng).usage.height == 5 + 8  # the agent's query (k=5) and recall (k=8) counted usage


def test_report_link_unlink_land_in_the_bank_with_edges_and_events(eng):
    a, b = pick_pair(eng)
    learning = "The e2e login to production needs --http1.1 on the session-create POST, or the CDN resets it."

    async def go():
        async with session(eng) as s:
            reported = await s.call_tool("report_learning", {
                "content": learning, "kind": "lesson", "systems": ["playwright"],
                "connections": [{"id": a, "relation": "clarifies", "note": "which flag the login step needs"}]})
            new = reported.structured_content["id"]
            linked = await s.call_tool("link_kb_entries", {"src": b, "dst": a, "type": "see_also", "note": "same login path"})
            unlinked = await s.call_tool("unlink_kb_entries", {"src": b, "dst": a, "type": "see_also",
                                                               "reason": "different environments after all"})
            entry = await s.call_tool("get_entry", {"id": new})
            return reported, linked, unlinked, entry

    reported, linked, unlinked, entry = run(go())
    assert not (reported.is_error or linked.is_error or unlinked.is_error), text(reported) + text(linked) + text(unlinked)
    new = reported.structured_content["id"]
    assert text(reported).startswith(f"Stored {new} (actor mcp:pytest).")
    assert {"src": new, "type": "clarifies", "dst": a, "source": "author", "note": "which flag the login step needs"} \
        in reported.structured_content["links"]
    assert f"→ clarifies" in text(entry) and "which flag the login step needs" in text(entry)

    bank = kb.open_bank(eng)
    row = bank.entries.filter(pl.col("id") == new).row(0, named=True)
    assert row["content"] == learning and row["kind"] == "lesson" and row["systems"] == ["playwright"]
    edge = bank.edges.filter((pl.col("src") == new) & (pl.col("dst") == a))
    assert edge.select("type", "source", "note", "created_by").row(0) == ("clarifies", "author", "which flag the login step needs", "mcp:pytest")
    assert bank.edges.filter((pl.col("src") == b) & (pl.col("dst") == a) & (pl.col("type") == "see_also")).height == 0
    ev = bank.events.filter(pl.col("actor") == "mcp:pytest")
    assert ev.filter((pl.col("action") == "entry.create") & (pl.col("src") == new)).height == 1
    assert ev.filter((pl.col("action") == "edge.create") & (pl.col("src") == b) & (pl.col("dst") == a)).height == 1
    gone = ev.filter((pl.col("action") == "edge.delete") & (pl.col("src") == b))
    assert gone["reason"].to_list() == ["different environments after all"]
    assert kb.check_bank(eng) == []


def test_bad_calls_are_tool_errors_and_the_server_keeps_serving(eng):
    a, b = pick_pair(eng)
    version = kb.open_bank(eng).version
    bad = [
        ("get_entry", {"id": "0badc0de"}, "0badc0de"),
        ("related", {"id": "0badc0de"}, "0badc0de"),
        ("link_kb_entries", {"src": a, "dst": a, "type": "clarifies"}, "cannot point at itself"),
        ("link_kb_entries", {"src": a, "dst": "0badc0de", "type": "cites"}, "0badc0de"),
        ("link_kb_entries", {"src": a, "dst": b, "type": "cousin_of"}, "unknown edge type"),
        ("unlink_kb_entries", {"src": a, "dst": b, "type": "cites"}, "reason"),  # missing reason
        ("unlink_kb_entries", {"src": a, "dst": b, "type": "cites", "reason": " "}, "requires a reason"),
        ("unlink_kb_entries", {"src": a, "dst": b, "type": "cites", "reason": "wrong"}, a),  # no such edge
        ("report_learning", {"content": "$ ls\n$ cd /"}, "rejected by the guard"),
        ("report_learning", {"content": "A fact.", "connections": [{"id": "0badc0de", "relation": "cites"}]}, "0badc0de"),
        ("no_such_tool", {}, "no_such_tool"),
    ]

    async def go():
        async with session(eng) as s:
            out = []
            for name, args, _ in bad:
                out.append(await s.call_tool(name, args))
                alive = await s.call_tool("get_entry", {"id": a})
                assert not alive.is_error
            return out

    results = run(go())
    for (name, args, needle), res in zip(bad, results):
        assert res.is_error, (name, args, text(res))
        assert needle in text(res), (name, text(res))
    assert "EntryNotFound" in text(results[0]) and "EdgeRuleError" in text(results[2])
    assert kb.open_bank(eng).version == version  # nothing was written


def test_an_id_merged_away_answers_with_the_entry_it_lives_on_in_and_a_deleted_one_says_why(eng):
    bank = kb.open_bank(eng)
    ids = bank.entries.sort("id")["id"].to_list()
    keep, merged, later, deleted = ids[:4]
    kb.merge_entries(bank, keep=keep, remove=[merged], reason="the same fix reported twice", actor="judge")
    kb.merge_entries(bank, keep=later, remove=[keep], reason="one page for the runbook", actor="ops")
    kb.delete_entry(bank, deleted, reason="leaked a customer name", actor="ops")

    async def go():
        async with session(eng) as s:
            return (await s.call_tool("get_entry", {"id": merged}), await s.call_tool("get_entry", {"id": deleted}),
                    await s.call_tool("get_entry", {"id": "0badc0de"}))

    moved, gone, never = run(go())
    assert not moved.is_error
    head = text(moved).splitlines()[0]
    assert head.startswith(f"{merged} was merged into {later} (through {keep}) by judge at ")
    assert head.endswith(": the same fix reported twice")
    assert moved.structured_content["entry"]["id"] == later
    assert moved.structured_content["merged"]["path"] == [merged, keep, later]
    assert gone.is_error and "deleted by ops at " in text(gone) and "leaked a customer name" in text(gone)
    assert never.is_error and "does not exist" in text(never) and "deleted" not in text(never)


def test_readonly_lists_only_reading_tools_and_writes_nothing(eng):
    before = {p.relative_to(eng): p.read_bytes() for p in eng.rglob("*") if p.is_file()}
    a, _ = pick_pair(eng)

    async def go():
        async with session(eng, "--readonly") as s:
            tools = [t.name for t in (await s.list_tools()).tools]
            answer = await s.call_tool("query_knowledge_bank", {"query": "stale reads in production"})
            recalled = await s.call_tool("recall", {"query": "stale reads in production"})
            write = await s.call_tool("report_learning", {"content": "A fact."})
            related = await s.call_tool("related", {"id": a})
            return tools, answer, recalled, write, related

    tools, answer, recalled, write, related = run(go())
    assert tools == list(READ_TOOLS)
    assert not (answer.is_error or recalled.is_error or related.is_error)
    assert answer.structured_content["results"]
    assert write.is_error and "report_learning" in text(write)
    after = {p.relative_to(eng): p.read_bytes() for p in eng.rglob("*") if p.is_file()}
    assert after == before  # not a byte changed: no usage, no events, no caches


def test_readonly_refuses_to_embed_and_says_how(tmp_path, demo_dir):
    path = tmp_path / "raw"
    shutil.copytree(demo_dir / "engineering", path)  # never embedded

    async def go():
        async with session(path, "--readonly") as s:
            return await s.call_tool("query_knowledge_bank", {"query": "login"})

    res = run(go())
    assert res.is_error and "kb embed" in text(res) and "--readonly" in text(res)
    assert not (path / "vectors").exists()


def test_a_connect_job_beside_an_agent_loses_nothing(eng):
    bank = kb.open_bank(eng)
    targets = bank.entries.sort("id")["id"].to_list()[:40]
    unlinked_before = bank.entries.filter(pl.col("linked_at").is_null()).height
    assert unlinked_before > 1000  # the connect job has real work to do

    async def go():
        reported = []
        async with session(eng, "--actor", "agent-7") as s:
            job = subprocess.Popen([sys.executable, "-m", "kbtools", "connect", str(eng), "--chunk", "200"], env=ENV, cwd=str(ROOT),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            started = time.time()
            i = 0
            # report until the job is done (at least 4), however slowly the shared machine runs it
            while (job.poll() is None or i < 4) and i < 400:
                target = targets[i % len(targets)]
                res = await s.call_tool("report_learning", {
                    "content": f"Lesson {i}: the deploy gate of service {i} needs the canary flag set before the rollout.",
                    "connections": [{"id": target, "relation": "refines", "note": f"which gate lesson {i} concerns"}]})
                assert not res.is_error, text(res)
                reported.append((res.structured_content["id"], target, time.time() - started))
                i += 1
            out, err = await asyncio.to_thread(job.communicate, timeout=120)
            return reported, job.returncode, out, err

    reported, status, out, err = run(go())
    assert status == 0, err
    bank = kb.open_bank(eng)
    ids = set(bank.entries["id"].to_list())
    edges = set(bank.edges.filter(pl.col("source") == "author").select("src", "dst", "type").iter_rows())
    for new, target, _ in reported:
        assert new in ids
        assert (new, target, "refines") in edges
    creates = bank.events.filter((pl.col("action") == "entry.create") & (pl.col("actor") == "agent-7"))
    assert creates.height == len(reported)
    # the job's commits and the agent's interleaved: some agent entry was written between two job commits
    job_at = bank.events.filter(pl.col("actor") == "connect")["at"]
    assert job_at.len() > 0
    inside = creates.filter((pl.col("at") > job_at.min()) & (pl.col("at") < job_at.max()))
    assert inside.height > 0, "the job and the agent did not overlap"
    assert bank.entries.filter(pl.col("linked_at").is_null()).height < unlinked_before / 10
    assert kb.check_bank(eng) == []


def test_a_new_empty_bank_answers_what_an_agent_just_reported(tmp_path):
    """A bank made by kb.create_bank records the default embedder: the report embeds its entry in
    its own write, so the next query (which never embeds an entry) answers with it."""
    path = tmp_path / "new"
    kb.create_bank(path)
    learning = "The nightly export to the warehouse fails when the VPN tunnel rotates its key at 02:00."

    async def go():
        async with session(path) as s:
            reported = await s.call_tool("report_learning", {"content": learning, "kind": "lesson"})
            answer = await s.call_tool("query_knowledge_bank", {"query": "why does the nightly warehouse export fail"})
            return reported, answer

    reported, answer = run(go())
    assert not reported.is_error and not answer.is_error, text(reported) + text(answer)
    new = reported.structured_content["id"]
    assert f"[{new}]" in text(answer), text(answer)
    assert vector_count(kb.open_bank(path)) == 1


# --- streamable HTTP: a bearer token on every request, read-only unless --write ---------------------

TOKEN = "pytest-token-0123456789abcdef"


@contextlib.contextmanager
def http_server(path: Path, *args: str, env: dict | None = None):
    """``kb mcp PATH --transport http --port 0 ARGS`` until the block ends; yields (url, the line it
    printed to stderr at start). The server is always stopped."""
    proc = subprocess.Popen([sys.executable, "-m", "kbtools", "mcp", str(path), "--transport", "http", "--port", "0", *args],
                            env={**ENV, **(env or {})}, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 120)
        line = proc.stderr.readline() if ready else ""
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert found, f"the server printed no URL: {line!r} (exit {proc.poll()})"
        yield found.group(0), line
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


async def http_tools(url: str, token: str | None) -> tuple[list[str] | None, list[int]]:
    """The tool names the real MCP client lists over HTTP with ``token`` (None when it cannot
    connect), and the HTTP statuses it got."""
    statuses: list[int] = []

    async def seen(response):
        statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120),
                                  event_hooks={"response": [seen]}) as http:
        try:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, client_info=Implementation(name="pytest", version="1")) as s:
                    await s.initialize()
                    return [t.name for t in (await s.list_tools()).tools], statuses
        except Exception:  # the client gives up on a 401 (an MCPError inside an exception group)
            return None, statuses


def test_http_needs_the_bearer_token_it_printed(eng):
    with http_server(eng) as (url, line):
        token = re.search(r"the token (\S+)", line).group(1)

        async def go():
            return [await http_tools(url, None), await http_tools(url, "not-the-token-0123456789"),
                    await http_tools(url, token)]

        (none, none_status), (wrong, wrong_status), (right, right_status) = run(go())
        other = httpx2.get(url.replace("/mcp", "/elsewhere"), timeout=30)
    assert len(token) >= 32
    assert none is None and set(none_status) == {401}
    assert wrong is None and set(wrong_status) == {401}
    assert right == list(READ_TOOLS) and 401 not in right_status  # read-only over HTTP unless --write
    assert other.status_code == 401 and "Bearer" in other.headers["www-authenticate"]


def test_http_writes_only_with_write_and_takes_the_token_from_the_environment(eng):
    before = kb.open_bank(eng).version
    with http_server(eng, "--write", env={"KB_MCP_TOKEN": TOKEN}) as (url, line):
        writing, _ = run(http_tools(url, TOKEN))
    with http_server(eng, "--token", TOKEN) as (url, _):
        reading, _ = run(http_tools(url, TOKEN))
        refused, statuses = run(http_tools(url, TOKEN[::-1]))
    assert TOKEN not in line  # a token given is never echoed
    assert writing == [*READ_TOOLS, *WRITE_TOOLS]
    assert reading == list(READ_TOOLS)
    assert refused is None and set(statuses) == {401}
    assert kb.open_bank(eng).version == before


def test_http_keeps_the_host_origin_and_body_checks_behind_the_token(eng):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}})
    mcp_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    probes = {  # name: (extra headers, body, status with the token)
        "good": ({}, init, 200),
        "host": ({"host": "evil.example"}, init, 421),
        "origin": ({"origin": "http://evil.example"}, init, 403),
        "malformed": ({}, "{nope", 400),
        "20 MB": ({}, "a" * (20 * 1024 * 1024), 413),
    }
    with http_server(eng, env={"KB_MCP_TOKEN": TOKEN}) as (url, _):
        got = {}
        for name, (extra, body, _) in probes.items():
            for token in (TOKEN, None):
                auth = {"authorization": f"Bearer {token}"} if token else {}
                got[name, token] = httpx2.post(url, content=body, headers={**mcp_headers, **extra, **auth}, timeout=60).status_code
    for name, (_, _, status) in probes.items():
        assert got[name, TOKEN] == status, (name, got[name, TOKEN])
        assert got[name, None] == 401, (name, got[name, None])


@pytest.mark.parametrize("args, needle", [
    (["--transport", "http", "--token", "short"], "16 to 512 printable ASCII"),
    (["--readonly", "--write"], "choose one"),
])
def test_bad_http_flags_stop_before_serving(eng, args, needle):
    proc = subprocess.run([sys.executable, "-m", "kbtools", "mcp", str(eng), *args], env=ENV, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "short" not in proc.stderr
