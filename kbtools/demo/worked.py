"""The seed's two worked examples ("A Fold, Concretely") as entries, edges and queries.

Hand-written rows: the kanban dispatch-label cluster and the Playwright production-login
cluster, placed first in every engineering bank.
"""

from __future__ import annotations

from kbtools.demo.rows import BankRows, created_times


def add_worked_examples(rows: BankRows, sessions: list[str]) -> list[dict]:
    """The seed's two worked examples ("A Fold, Concretely"), entries, edges and queries."""
    at = iter(sorted(created_times(rows.rng, 10, days=200).tolist()))
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
