"""The holes walker against bpmnlint, the BPMN linter of bpmn.io, on the models of tests/data/bpmn.

bpmnlint (npm, pinned in tests/bpmnlint/package.json; scripts/test.sh installs it with node) runs
its recommended rules on every model; :data:`RULE_TO_HOLE` maps the rules that ask a question the
walker also asks to hole kinds, and each element's verdicts are compared. Every disagreement must
be one of :data:`DIFFERENCES`, each with the reason the walker's answer is the defensible one.

Print the comparison (the table in docs/bpmn.md) with::

    .venv/bin/python tests/test_bpmnlint.py
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from kbtools.graph.holes import HOLE_KINDS, find_holes
from kbtools.model.bpmn import BPMN_NS, parse_bpmn

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "bpmn"
LINT = ROOT / "tests" / "bpmnlint"

#: bpmnlint rule -> the hole kinds that answer the same question (the first where the walker has none).
#: ``import-warning`` stands for bpmn-moddle's "unresolved reference" warning when it reads the file.
RULE_TO_HOLE: dict[str, tuple[str, ...]] = {
    "no-implicit-end": ("dead_end", "one_branch"),  # work stops at a node that is no end event
    "no-implicit-start": ("unreachable",),          # a node no flow leads to (and no start event)
    "no-disconnected": ("dead_end", "unreachable"),  # a node with no flow at all
    "link-event": ("dead_end", "unreachable"),       # a link throw with no catch / a catch with no throw
    "fake-join": ("runs_twice",),                    # two flows into a task or event without a gateway
    "superfluous-gateway": ("one_branch",),          # a gateway with one way in and one way out
    "import-warning": ("broken_reference",),         # a reference that names no element
}
#: bpmnlint's other rules (all but two in its recommended set) that ask no question a hole
#: answers (style, layout, naming, executability), and why.
UNSHARED_RULES: dict[str, str] = {
    "conditional-event": "a conditional event without a condition: executability (not recommended)",
    "standard-size": "shapes of non-standard size: layout (not recommended)",
    "ad-hoc-sub-process": "start or end events inside an ad-hoc sub-process: a schema rule",
    "conditional-flows": "a flow out of a split without a condition: an executability rule",
    "end-event-required": "a process without an end event: style (the walker asks per node: dead_end)",
    "start-event-required": "a process without a start event: style (start-less nodes are starts in BPMN)",
    "event-based-gateway": "what may follow an event-based gateway: a schema rule",
    "event-sub-process-typed-start-event": "an event sub-process needs a typed start: a schema rule",
    "global": "global elements (messages, signals) defined once: a schema rule",
    "label-required": "a node without a name: naming",
    "no-bpmndi": "a node without a diagram shape: layout",
    "no-complex-gateway": "complex gateways discouraged: style",
    "no-duplicate-sequence-flows": "two flows between the same nodes: the importer reads them as one",
    "no-gateway-join-fork": "a gateway that both joins and splits: style",
    "no-implicit-split": "a task with two unconditional ways out: style",
    "no-inclusive-gateway": "inclusive gateways discouraged: style",
    "no-overlapping-elements": "shapes drawn over each other: layout",
    "single-blank-start-event": "more than one blank start event: style (a fake join after them is runs_twice)",
    "single-event-definition": "an event with several definitions: a schema rule",
    "sub-process-blank-start-event": "a sub-process start event with a trigger: a schema rule",
    "superfluous-label": "a label on a flow that needs none: naming",
    "superfluous-termination": "a terminate end event that ends nothing more than a plain one: style",
}
SHARED = frozenset(k for kinds in RULE_TO_HOLE.values() for k in kinds)
#: (model, element, hole kind) where one side says yes and the other no, and why the walker is right.
DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("broken_refs.bpmn", "End", "runs_twice"):
        "bpmnlint's fake-join is local: two flows into an event. The walker follows them back to the "
        "exclusive split 'Damaged?': only one of them carries work, so the end event runs once.",
    ("broken_refs.bpmn", "Late", "broken_reference"):
        "bpmn-moddle checks that attachedToRef resolves, not that it names an activity; a boundary "
        "event on a gateway is no BPMN (the importer leaves it out and says so).",
    ("broken_refs.bpmn", "Escalate", "unreachable"):
        "the consequence of the boundary event left out above: its path is cut off. bpmnlint keeps "
        "the event, so the path has a way in.",
    ("broken_refs.bpmn", "Ref_label", "broken_reference"):
        "bpmn-moddle does not require a data object reference to name its data object; the data "
        "the task reads is not there.",
    ("event_subprocess_implicit_start.bpmn", "Handle", "unreachable"):
        "bpmnlint asks for explicit start events (no-implicit-start, a modeling convention); in BPMN "
        "a node without incoming flows of a process without start events starts with the process, "
        "so the walker takes it as the start and finds nothing unreachable.",
}
#: Models the comparison leaves out, and why.
EXCLUDED: dict[str, str] = {
    "invalid/": "hand-written refusal cases without incoming/outgoing lists (see serialisations/)",
    "serialisations/": "bpmn-moddle takes a node's flows from its incoming/outgoing lists, not from the "
                       "flows' sourceRef/targetRef: on a file that leaves them out (valid BPMN, as other "
                       "tools write it) bpmnlint calls every node disconnected; the walker reads the same "
                       "holes (tests/test_bpmn_semantics.py)",
}
_NODES = ("task", "Task", "Event", "Gateway", "subProcess", "SubProcess", "transaction", "callActivity")


def _node_ids(xml: bytes) -> set[str]:
    return {el.get("id") for el in ET.fromstring(xml).iter()
            if el.get("id") and el.tag.startswith(f"{{{BPMN_NS}}}") and any(n in el.tag for n in _NODES)
            and not el.tag.endswith("EventDefinition")}


def bpmnlint_missing() -> str | None:
    """Why bpmnlint cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (scripts/test.sh installs nodejs and npm with apt-get when run as root)"
    if not (LINT / "node_modules" / "bpmnlint" / "package.json").is_file():
        return "bpmnlint is not installed: run `npm ci` in tests/bpmnlint (scripts/test.sh does)"
    return None


def run_bpmnlint(paths: list[pathlib.Path]) -> dict:
    """bpmnlint's reports per file (tests/bpmnlint/lint.js): {path: {reports, warnings, error}}."""
    run = subprocess.run(["node", str(LINT / "lint.js"), *map(str, paths)], capture_output=True, text=True,
                         timeout=300, cwd=LINT)
    if run.returncode != 0:
        raise RuntimeError(f"bpmnlint failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout)


def walker_verdicts(path: pathlib.Path) -> set[tuple[str, str]]:
    """(element id, hole kind) for the walker's holes of the shared kinds."""
    model = parse_bpmn(path.read_bytes(), file=path.name)
    element = {i: json.loads(m)["bpmn"]["element"] for i, m in model.entries.select("id", "metadata").iter_rows()}
    holes = find_holes(model.entries, model.edges)
    found = {(element[i], h) for i, h in holes.select("id", "hole").iter_rows()
             if h in SHARED and h != "broken_reference"}
    return found | {(b["element"], "broken_reference") for b in model.broken}


def lint_verdicts(result: dict, walker: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(element id, hole kind) for bpmnlint's reports of the mapped rules."""
    found = set()
    for r in result["reports"]:
        kinds = RULE_TO_HOLE.get(r["rule"])
        if kinds and r["id"]:
            found.add((r["id"], next((k for k in kinds if (r["id"], k) in walker), kinds[0])))
    for w in result["warnings"]:
        if w.get("id") and "unresolved reference" in w["message"]:
            found.add((w["id"], "broken_reference"))
    return found


def models() -> list[pathlib.Path]:
    return sorted(DATA.glob("*.bpmn"))


def compare(lint: dict) -> dict:
    """Per model and element: both verdict sets; the element-level agreement, the agreement on
    what either side flags, and the disagreements with their documented reason (or None)."""
    rows, elements, same = [], 0, 0
    for path in models():
        walker = walker_verdicts(path)
        linted = lint_verdicts(lint["files"][str(path)], walker)
        ids = _node_ids(path.read_bytes()) | {e for e, _ in walker | linted}
        for e in sorted(ids):
            w = {k for x, k in walker if x == e}
            b = {k for x, k in linted if x == e}
            elements += 1
            same += w == b
            for kind in sorted(w | b):
                rows.append({"model": path.name, "element": e, "hole": kind, "walker": kind in w,
                             "bpmnlint": kind in b, "why": DIFFERENCES.get((path.name, e, kind))})
    flagged = len(rows)
    both = sum(r["walker"] and r["bpmnlint"] for r in rows)
    return {"rows": rows, "elements": elements, "element_agreement": same / elements,
            "flagged": flagged, "flagged_agreement": both / flagged if flagged else 1.0,
            "undocumented": [r for r in rows if r["walker"] != r["bpmnlint"] and r["why"] is None],
            "stale": sorted(set(DIFFERENCES) - {(r["model"], r["element"], r["hole"]) for r in rows
                                                if r["walker"] != r["bpmnlint"]})}


def _node_major() -> int:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


@pytest.fixture(scope="module")
def lint():
    why = bpmnlint_missing()
    if why:
        pytest.skip(why)
    try:
        return run_bpmnlint(models())
    except RuntimeError as err:
        if _node_major() < 20:  # bpmnlint 11 asks for node 20; an older distribution node may not run it
            pytest.skip(f"bpmnlint does not run on node {_node_major()} (it needs node >= 20): {err}")
        raise


def test_the_mapping_names_every_rule_of_the_installed_bpmnlint(lint):
    rules = {p.stem for p in (LINT / "node_modules" / "bpmnlint" / "rules").glob("*.js")} - {"helper"}
    assert set(RULE_TO_HOLE) - {"import-warning"} | set(UNSHARED_RULES) == rules
    assert SHARED < set(HOLE_KINDS)
    assert lint["version"] == json.loads((LINT / "package.json").read_text())["dependencies"]["bpmnlint"]


def test_walker_and_bpmnlint_agree_except_documented_differences(lint):
    result = compare(lint)
    assert result["undocumented"] == []
    assert result["stale"] == []  # every documented difference still occurs
    assert result["element_agreement"] >= 0.9
    agreed = {(r["model"], r["element"], r["hole"]) for r in result["rows"] if r["walker"] and r["bpmnlint"]}
    assert {("fake_join.bpmn", "Enter", "runs_twice"), ("one_branch.bpmn", "Split", "one_branch"),
            ("broken_refs.bpmn", "F_ghost", "broken_reference"), ("unreachable_chain.bpmn", "Restock", "unreachable"),
            ("boundary_exception_only.bpmn", "Review", "dead_end")} <= agreed
    for name in ("compensation.bpmn", "adhoc.bpmn", "link_events.bpmn", "event_subprocess.bpmn", "pooled.bpmn"):
        assert not [r for r in result["rows"] if r["model"] == name]  # both find these clean


def test_bpmnlint_needs_incoming_outgoing_the_walker_does_not(lint, tmp_path):
    plain = DATA / "serialisations" / "order_to_cash_plain.bpmn"
    result = run_bpmnlint([plain])["files"][str(plain)]
    disconnected = {r["id"] for r in result["reports"] if r["rule"] == "no-disconnected"}
    assert len(disconnected) >= 20  # every node of the plain copy, to bpmnlint
    assert walker_verdicts(plain) == walker_verdicts(DATA / "order_to_cash.bpmn")


def test_joins_are_never_one_branch():
    for path in models():
        root = ET.fromstring(path.read_bytes())
        incoming: dict[str, int] = {}
        for flow in root.iter(f"{{{BPMN_NS}}}sequenceFlow"):
            incoming[flow.get("targetRef")] = incoming.get(flow.get("targetRef"), 0) + 1
        joins = {e for e, n in incoming.items() if n >= 2}
        assert not {e for e, k in walker_verdicts(path) if k == "one_branch"} & joins, path.name


def _print() -> int:
    why = bpmnlint_missing()
    if why:
        print(f"bpmnlint cannot run: {why}")
        return 1
    lint = run_bpmnlint(models())
    result = compare(lint)
    print(f"bpmnlint {lint['version']} (recommended rules) against the holes walker on {len(models())} models "
          f"of tests/data/bpmn")
    print(f"{'model':38} {'element':14} {'hole':17} walker bpmnlint")
    for r in result["rows"]:
        mark = "" if r["walker"] == r["bpmnlint"] else ("  documented" if r["why"] else "  UNDOCUMENTED")
        print(f"{r['model']:38} {r['element']:14} {r['hole']:17} {'yes' if r['walker'] else 'no':6} "
              f"{'yes' if r['bpmnlint'] else 'no':8}{mark}")
    print(f"\nelements compared: {result['elements']}; same verdicts: {result['element_agreement']:.1%}")
    print(f"flagged by either: {result['flagged']}; by both: {result['flagged_agreement']:.1%}")
    print(f"undocumented differences: {len(result['undocumented'])}")
    return 0 if not result["undocumented"] else 1


if __name__ == "__main__":
    sys.exit(_print())
