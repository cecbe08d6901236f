"""BPMN 2.0 XML as bank rows, and the diagram back with holes coloured (pure: bytes in, frames or bytes out).

The mapping, per process (one flow per process; in a collaboration the pool's name names it):

=====================================  ===============================================================
BPMN                                   bank
=====================================  ===============================================================
task (every type), call activity       ``step`` (``metadata.bpmn.type`` keeps the type)
sub-process                            a ``step`` of its flow; its contents form a flow of their own,
                                       named ``parent / sub-process``, each ``part_of`` the step
start / end / intermediate event       ``step`` (``start`` / ``end`` declared)
boundary event                         ``step`` with ``exception`` (and ``trigger``, ``interrupting``);
                                       ``activity precedes event`` is its exception exit
gateway                                ``decision`` with ``metadata.gateway``: exclusive, parallel,
                                       inclusive, event_based, complex
sequence flow (default flow)           ``precedes``; the note is the name, else the condition, else
                                       "default"
message flow between pools             ``precedes`` across flows, note "message: ...", a hand-off
lane (nested lanes)                    ``role``; ``owned_by`` from each node to its innermost lane
data object / data store               ``artifact``; input association ``requires``, output
                                       association ``produces``; a data store is declared both an
                                       input and an output (it outlives the process)
documentation                          the entry's content (its first sentence the summary)
=====================================  ===============================================================

Entry ids are stable: the first 8 hex digits of SHA-1 over ``process id/element id`` (a Camunda
process id is its deployment key, so a re-read of the changed file keeps every id it still has).
Semantics the walker needs are declared in the metadata: a link throw event ``precedes`` the link
catch event of the same name (note "link: name"); a compensation boundary event ``precedes`` the
handler its association names (note "compensation"); an event sub-process and a compensation
handler are ``triggered`` (started by their event, not by a flow); the activities of an ad-hoc
sub-process are ``adhoc`` (any order, no flows needed); every node of a process inside a pool
names the ``pool`` (its participant), which owns it where no lane does.

Camunda, Zeebe and other extensions, the diagram interchange, the order of elements and the
``incoming``/``outgoing`` lists are ignored (``sourceRef``/``targetRef`` say where a flow goes), so
two tools' exports of one model read the same. Files with a DTD or entity declarations are refused
(hostile XML). A broken element (a dangling reference) is left out and listed with its id and what
is wrong, or, with ``strict=True``, refuses the file.

>>> xml = b'''<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="D">
...   <process id="P" name="Ship"><startEvent id="S"/><task id="T" name="Pack"/><endEvent id="E"/>
...   <sequenceFlow id="F1" sourceRef="S" targetRef="T"/><sequenceFlow id="F2" sourceRef="T" targetRef="E"/>
...   </process></definitions>'''
>>> model = parse_bpmn(xml, file="ship.bpmn")
>>> model.entries.select("kind", "title").rows()
[('step', 'Start event (S)'), ('step', 'Pack'), ('step', 'End event (E)')]
>>> model.edges["type"].to_list()
['precedes', 'precedes']
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import polars as pl

from kbtools.errors import BpmnError

__all__ = ["BPMN_NS", "BpmnModel", "parse_bpmn", "bpmn_id", "color_bpmn", "HOLE_COLORS"]

BPMN_NS = "http://www.omg.org/spec/BPMN/20100524/MODEL"
_DI_NS = "http://www.omg.org/spec/BPMN/20100524/DI"
_BIOC_NS = "http://bpmn.io/schema/bpmn/biocolor/1.0"
_COLOR_NS = "http://www.omg.org/spec/BPMN/non-normative/color/1.0"
_KB_NS = "https://kbtools.invalid/bpmn/holes"
_GATEWAYS = {"exclusiveGateway": "exclusive", "parallelGateway": "parallel", "inclusiveGateway": "inclusive",
             "eventBasedGateway": "event_based", "complexGateway": "complex"}
_EVENTS = {"startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent",
           "implicitThrowEvent"}
_TASKS = {"task", "userTask", "serviceTask", "sendTask", "receiveTask", "manualTask", "businessRuleTask",
          "scriptTask", "callActivity"}
_SUBS = {"subProcess", "transaction", "adHocSubProcess"}
_TRIGGERS = ("timer", "error", "message", "signal", "escalation", "conditional", "compensate", "cancel",
             "terminate", "link")
#: Fill and stroke per hole severity in the exported diagram (bpmn.io colours).
HOLE_COLORS: dict[str, tuple[str, str]] = {"high": ("#ffcdd2", "#c62828"), "medium": ("#ffe0b2", "#e65100"),
                                           "low": ("#fff9c4", "#9e9d24")}
_ENTRY_SCHEMA = {"id": pl.String, "kind": pl.String, "title": pl.String, "summary": pl.String, "content": pl.String,
                 "useful_for": pl.String, "systems": pl.List(pl.String), "tasks": pl.List(pl.String),
                 "metadata": pl.String}
_EDGE_SCHEMA = {"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String, "note": pl.String,
                "evidence": pl.String}


@dataclass(frozen=True)
class BpmnModel:
    """What one BPMN file holds, as bank rows: ``entries`` (id, kind, title, summary, content,
    useful_for, systems, tasks, metadata) and ``edges`` (src, dst, type, source, note, evidence);
    ``elements`` maps each BPMN element id to its entry id, ``flows`` each process id to its flow,
    ``skipped`` says what has no place in the bank (message flows to a collapsed pool, for instance),
    ``broken`` lists the broken elements left out: file, element, process, problem and entry (the
    id of the entry the finding hangs on, or None)."""

    entries: pl.DataFrame
    edges: pl.DataFrame
    elements: dict[str, str] = field(default_factory=dict)
    flows: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    broken: list[dict] = field(default_factory=list)


def bpmn_id(process: str, element: str) -> str:
    """The stable entry id of a BPMN element: 8 hex digits of SHA-1 over ``process/element``.

    >>> bpmn_id("Process_1", "Task_1")
    'b530b2c1'
    """
    return hashlib.sha1(f"{process}/{element}".encode()).hexdigest()[:8]


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _wide(data: bytes) -> str | None:
    """The codec of a UTF-16 or UTF-32 document (by its byte order mark or its first ``<``), else
    None: a DTD check on the raw bytes would miss ``<!DOCTYPE`` written in two or four bytes."""
    for codec, marks in (("utf-32", (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")),
                         ("utf-32-le", (b"<\x00\x00\x00",)), ("utf-32-be", (b"\x00\x00\x00<",)),
                         ("utf-16", (b"\xff\xfe", b"\xfe\xff")), ("utf-16-le", (b"<\x00",)), ("utf-16-be", (b"\x00<",))):
        if data.startswith(marks):
            return codec
    return None


def _read(xml: bytes | str, file: str, strict: bool = False) -> ET.Element:
    return _parse(xml, file, strict)[0]


def _parse(xml: bytes | str, file: str, strict: bool = False) -> tuple[ET.Element, bytes | str]:
    """The root element, and the source it was parsed from: the bytes, or the text Python decoded
    where expat cannot (UTF-32, or a multi-byte encoding the declaration names: Shift_JIS, GBK,
    UTF-16 without a byte order mark). A document that says UTF-8 (or says nothing) but is not,
    as when a tool writes its Windows code page under a UTF-8 declaration, is read as Windows-1252
    unless ``strict``: the bytes are not what the declaration says, so strict refuses them."""
    data = xml.encode() if isinstance(xml, str) else bytes(xml)
    codec = _wide(data)
    text = data.decode(codec, errors="replace").encode() if codec else data
    if re.search(rb"<!\s*(DOCTYPE|ENTITY)", text, re.IGNORECASE):
        raise BpmnError(file, None, "DTDs and entity declarations are refused (a BPMN file needs none; "
                                    "they are how hostile XML expands or reads local files)")
    source: bytes | str = data
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError, LookupError) as exc:  # ValueError: "multi-byte encodings are not supported"
        declared = re.match(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)", text)
        try:
            name = codec or (declared.group(1).decode() if declared else "utf-8")
            try:
                decoded = data.decode(name)
            except UnicodeDecodeError:
                if strict or codecs.lookup(name).name != "utf-8":
                    raise
                decoded = data.decode("cp1252", errors="replace")
            source = re.sub(r"^\ufeff?\s*<\?xml[^>]*\?>", "", decoded)
            root = ET.fromstring(source)
        except (LookupError, UnicodeDecodeError, ET.ParseError):
            raise BpmnError(file, None, f"not well-formed XML ({exc})") from None
    if root.tag != f"{{{BPMN_NS}}}definitions":
        raise BpmnError(file, None, f"the root element is {root.tag!r}, not BPMN 2.0 <definitions> in the "
                                    f"namespace {BPMN_NS}")
    return root, source


def _ref(el: ET.Element, attr: str) -> str | None:
    """A reference attribute; a QName (``tns:Task_1``, as some tools write processRef, attachedToRef
    or a message flow's ends) is read as its local part, the id."""
    value = (el.get(attr) or "").strip()
    return value.rsplit(":", 1)[-1] if value else None


def _flag(el: ET.Element, attr: str, default: bool) -> bool:
    """An XML Schema boolean attribute (``true``/``false``/``1``/``0``)."""
    value = (el.get(attr) or "").strip().lower()
    return default if value not in ("true", "false", "1", "0") else value in ("true", "1")


def _text(el: ET.Element | None) -> str:
    return re.sub(r"\s+", " ", "".join(el.itertext())).strip() if el is not None else ""


def _noun(local: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r" \1", local).capitalize().replace("Sub process", "Sub-process")


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return (m.group(1) if m else text)[:200]


class _Reader:
    """One pass over a definitions element, collecting rows (the kernel behind :func:`parse_bpmn`).

    A broken element (a reference that names nothing it may name) goes through :meth:`broken`:
    refused in strict mode, else skipped and listed, with the entry nearest to it as its anchor."""

    def __init__(self, root: ET.Element, file: str, strict: bool):
        self.root, self.file, self.strict = root, file, strict
        self.entries: list[dict] = []
        self.edges: dict[tuple[str, str, str], dict] = {}
        self.elements: dict[str, str] = {}
        self.flows: dict[str, str] = {}
        self.pools: dict[str, str] = {}
        self.skipped: list[str] = []
        self.broken_found: list[dict] = []
        self.anchors: dict[str, str] = {}  # process id -> entry id a broken element without a neighbour hangs on
        self.dropped_refs: dict[str, str] = {}  # data object references left out, and why (not listed yet)
        self.dropped_pid: dict[str, str] = {}
        self.dropped_used: set[str] = set()
        self.compensating: set[str] = set()  # compensation boundary events (their associations lead on)
        self.moved_out: set[ET.Element] = set()  # sequence flows read in another container (misplaced_flows)
        self.ids = {el.get("id") for el in root.iter() if el.get("id")}
        self.stores = {s.get("id"): s for s in root.iter(f"{{{BPMN_NS}}}dataStore")}
        self.participants = {p.get("id") for p in root.iter(f"{{{BPMN_NS}}}participant")}
        self.definitions = {d.get("id"): d for d in root if _local(d.tag).endswith("EventDefinition") and d.get("id")}
        self.moved = self.misplaced_flows()

    def misplaced_flows(self) -> dict[ET.Element, list[ET.Element]]:
        """Sequence flows a tool wrote outside the (sub-)process that holds both their ends (one
        tool writes every flow of a collaboration into its first process), by the container
        they belong to; a flow whose ends lie in two containers stays where it is (broken)."""
        home: dict[str, ET.Element] = {}
        boxes: list[ET.Element] = []

        def index(box: ET.Element) -> None:
            boxes.append(box)
            for el in box:
                local = _local(el.tag)
                if el.get("id") and (local in _TASKS | _SUBS | _EVENTS or local in _GATEWAYS):
                    home.setdefault(el.get("id"), box)
                if local in _SUBS:
                    index(el)

        for proc in self.root.findall(f"{{{BPMN_NS}}}process"):
            index(proc)
        moved: dict[ET.Element, list[ET.Element]] = {}
        for box in boxes:
            for flow in box.findall(f"{{{BPMN_NS}}}sequenceFlow"):
                src, dst = home.get(_ref(flow, "sourceRef") or ""), home.get(_ref(flow, "targetRef") or "")
                if src is not None and src is dst and src is not box:
                    moved.setdefault(src, []).append(flow)
                    moved.setdefault(box, [])
                    self.moved_out.add(flow)
        return moved

    def broken(self, pid: str | None, element: str | None, problem: str, anchor: str | None = None) -> None:
        if self.strict:
            raise BpmnError(self.file, element, problem)
        self.broken_found.append({"element": element or "", "process": pid or "", "problem": problem,
                                  "anchor": anchor})

    def need_id(self, el: ET.Element, pid: str | None = None) -> str | None:
        eid = el.get("id")
        if not eid:
            name = el.get("name")
            self.broken(pid, None, f"a <{_local(el.tag)}>{f' named {name!r}' if name else ''} has no id: left out")
        return eid or None

    def entry(self, pid: str, el: ET.Element, *, kind: str, flow: str, meta: dict, title: str | None = None,
              key: str | None = None) -> str:
        eid = el.get("id") or ""
        key = key or eid
        entry_id = bpmn_id(pid, key)
        local = _local(el.tag)
        name = re.sub(r"\s+", " ", el.get("name") or "").strip()
        title = title or name or f"{_noun(local)} ({eid})"
        doc = " ".join(_text(d) for d in el.findall(f"{{{BPMN_NS}}}documentation")).strip()
        summary = _first_sentence(doc) if doc else f"{_noun(local)} '{title}' in the {flow} process."
        content = doc or f"{summary} From the BPMN model {self.file.rsplit('/', 1)[-1]} (element {eid})."
        meta = {**meta, "bpmn": {"file": self.file, "process": pid, "element": key, "type": local}}
        if entry_id in {e["id"] for e in self.entries}:
            return entry_id
        self.entries.append({"id": entry_id, "kind": kind, "title": title, "summary": summary, "content": content,
                             "useful_for": f"Walking through the {flow} process.", "systems": ["bpmn"],
                             "tasks": [flow], "metadata": json.dumps(meta, sort_keys=True)})
        self.elements.setdefault(key, entry_id)
        return entry_id

    def edge(self, src: str, dst: str, type_: str, note: str | None, evidence: dict) -> None:
        if src == dst:
            return
        key = (src, dst, type_)
        if key in self.edges:  # two sequence flows between the same nodes: one edge, both labels
            old = self.edges[key]
            if note and note != old["note"]:
                old["note"] = f"{old['note']}; {note}" if old["note"] else note
            return
        self.edges[key] = {"src": src, "dst": dst, "type": type_, "source": "import", "note": note or None,
                           "evidence": json.dumps({"bpmn": evidence}, sort_keys=True)}

    # -- processes -------------------------------------------------------------------------------

    def read(self) -> None:
        names = {}
        for part in self.root.iter(f"{{{BPMN_NS}}}participant"):
            if _ref(part, "processRef"):
                names[_ref(part, "processRef")] = (part.get("name") or "").strip() or part.get("id") or ""
        processes = [p for p in self.root.findall(f"{{{BPMN_NS}}}process") if self.need_id(p)]
        for proc in processes:
            pid = proc.get("id")
            self.flows[pid] = names.get(pid) or (proc.get("name") or "").strip() or pid
            if pid in names:
                self.pools[pid] = names[pid]
        for proc in processes:
            pid = proc.get("id")
            self.container(pid, proc, self.flows[pid], owner=None, parent=None)
        self.message_flows()
        self.compensations()
        for ref, problem in sorted(self.dropped_refs.items()):  # data object references nothing uses
            self.broken(self.dropped_pid[ref], ref, f"{problem}; left out")

    def container(self, pid: str, box: ET.Element, flow: str, *, owner: str | None, parent: str | None,
                  adhoc: bool = False) -> None:
        lanes = self.lanes(pid, box, flow)
        found = {}
        for el in box:
            local = _local(el.tag)
            if (local in _TASKS | _SUBS | _EVENTS or local in _GATEWAYS) and self.need_id(el, pid):
                found[el.get("id")] = el
        gone: dict[str, str] = {}  # broken flow nodes left out, and why
        for eid, el in found.items():
            host = _ref(el, "attachedToRef")
            if _local(el.tag) == "boundaryEvent" and (host not in found or _local(found[host].tag) not in _TASKS | _SUBS):
                what = (f"is a <{_local(found[host].tag)}>, not an activity, in" if host in found else
                        "is an element outside the event's own (sub-)process in" if host in self.ids else
                        "names no element of")
                gone[eid] = f"attachedToRef {host!r} {what} process {pid!r}"
        nodes = {eid: self.node(pid, el, flow, adhoc=adhoc) for eid, el in found.items() if eid not in gone}
        if nodes and pid not in self.anchors:
            starts = [n for e, n in nodes.items() if _local(found[e].tag) == "startEvent"]
            self.anchors[pid] = (starts or list(nodes.values()))[0]
        for eid, problem in gone.items():
            self.broken(pid, eid, problem + ("" if self.strict else "; the boundary event and its flows are left out"),
                        nodes.get(_ref(found[eid], "attachedToRef")))
        for eid, me in nodes.items():
            el = found[eid]
            local = _local(el.tag)
            if local == "boundaryEvent":
                trigger = self.trigger(el)
                self.edge(nodes[_ref(el, "attachedToRef")], me, "precedes",
                          f"{trigger} (exception)" if trigger else "exception", {"element": eid, "exception": True})
            role = lanes.get(eid) or (lanes.get(_ref(el, "attachedToRef")) if local == "boundaryEvent" else None) or owner
            if role:
                self.edge(me, role, "owned_by", None, {"element": eid, "lane": True})
            if parent:
                self.edge(me, parent, "part_of", "inside the sub-process", {"element": eid})
            self.data(pid, el, me, flow)
            if local in _SUBS:
                name = (el.get("name") or eid).strip()
                self.container(pid, el, f"{flow} / {name}", owner=role, parent=me, adhoc=local == "adHocSubProcess")
        for ref, role in lanes.items():
            if ref not in found and ref not in self.ids:
                self.broken(pid, ref, f"a lane's flowNodeRef {ref!r} names no flow node of process {pid!r}: ignored")
        for el in [f for f in box.findall(f"{{{BPMN_NS}}}sequenceFlow") if f not in self.moved_out] \
                + self.moved.get(box, []):
            self.sequence_flow(pid, el, nodes, gone, box)
        self.links(pid, box, nodes, found)

    def node(self, pid: str, el: ET.Element, flow: str, *, adhoc: bool = False) -> str:
        local = _local(el.tag)
        meta: dict = {"flow": flow}
        kind = "decision" if local in _GATEWAYS else "step"
        if local in _GATEWAYS:
            meta["gateway"] = _GATEWAYS[local]
        if local == "startEvent":
            meta["start"] = True
        if local == "endEvent":
            meta["end"] = True
        if local == "boundaryEvent":
            meta.update(exception=True, attached_to=bpmn_id(pid, _ref(el, "attachedToRef") or ""),
                        interrupting=_flag(el, "cancelActivity", True))
        trigger = self.trigger(el) if local in _EVENTS else None
        if trigger:
            meta["trigger"] = trigger
        if trigger == "compensate" and local == "boundaryEvent":
            meta["compensation"] = True
            self.compensating.add(el.get("id"))
        if trigger == "link":
            meta["link"] = self.link_name(el)
        if local == "callActivity" and el.get("calledElement"):
            meta["called"] = el.get("calledElement")
        if local in _SUBS and _flag(el, "triggeredByEvent", False):
            meta["triggered"] = True  # an event sub-process: started by its event, not by a flow
        if local in _TASKS | _SUBS and _flag(el, "isForCompensation", False):
            meta.update(triggered=True, compensation=True)  # a compensation handler: no flows by design
        if adhoc:
            meta["adhoc"] = True  # inside an ad-hoc sub-process: runs in any order, no flows needed
        if pid in self.pools:
            meta["pool"] = self.pools[pid]
        return self.entry(pid, el, kind=kind, flow=flow, meta=meta)

    def definition(self, el: ET.Element) -> ET.Element | None:
        """An event's first event definition: nested, or a global one named by eventDefinitionRef."""
        for child in el:
            local = _local(child.tag)
            if local.endswith("EventDefinition"):
                return child
            if local == "eventDefinitionRef":
                ref = (child.text or "").strip().rsplit(":", 1)[-1]
                if ref in self.definitions:
                    return self.definitions[ref]
        return None

    def trigger(self, el: ET.Element) -> str | None:
        definition = self.definition(el)
        if definition is None:
            return None
        name = _local(definition.tag)[: -len("EventDefinition")]
        return name if name in _TRIGGERS else name.lower()

    def link_name(self, el: ET.Element) -> str:
        """A link event's name: its linkEventDefinition's, else the event's own."""
        definition = self.definition(el)
        name = definition.get("name") if definition is not None else None
        return re.sub(r"\s+", " ", name or el.get("name") or "").strip()

    def links(self, pid: str, box: ET.Element, nodes: dict[str, str], found: dict[str, ET.Element]) -> None:
        """A link throw event goes on at the link catch event of the same name in its scope."""
        throws, catches = [], {}
        for eid in nodes:
            el = found[eid]
            if self.trigger(el) != "link":
                continue
            if _local(el.tag) == "intermediateThrowEvent":
                throws.append(eid)
            elif _local(el.tag) == "intermediateCatchEvent":
                catches.setdefault(self.link_name(el), []).append(eid)
        for eid in throws:
            name = self.link_name(found[eid])
            targets = catches.get(name, []) if name else []
            if len(targets) > 1:
                self.broken(pid, eid, f"the link name {name!r} is caught by {len(targets)} events "
                                      f"({', '.join(targets)}): linked to the first", nodes[eid])
            if targets:
                self.edge(nodes[eid], nodes[targets[0]], "precedes", f"link: {name}", {"element": eid, "link": True})

    def compensations(self) -> None:
        """The association from a compensation boundary event to its handler, as the handler's way
        in (wherever the tool put the association: in the process, a sub-process or the
        collaboration); an association that names nothing is broken."""
        for el in self.root.iter(f"{{{BPMN_NS}}}association"):
            aid = el.get("id") or ""
            src, dst = _ref(el, "sourceRef"), _ref(el, "targetRef")
            missing = [f"{r} {v!r}" for r, v in (("sourceRef", src), ("targetRef", dst)) if v not in self.ids]
            if missing:
                self.broken(None, aid, f"the association's {' and '.join(missing)} names no element of the document",
                            self.elements.get(src or "") or self.elements.get(dst or ""))
                continue
            if src in self.compensating and dst in self.elements:
                self.edge(self.elements[src], self.elements[dst], "precedes", "compensation",
                          {"element": aid, "compensation": True})

    def lanes(self, pid: str, box: ET.Element, flow: str) -> dict[str, str]:
        """flowNodeRef -> role entry id of the innermost lane (nested lanes part_of their parent)."""
        owner: dict[str, str] = {}

        def walk(lane_set: ET.Element, parent: str | None) -> None:
            for lane in lane_set.findall(f"{{{BPMN_NS}}}lane"):
                if not self.need_id(lane, pid):
                    continue
                role = self.entry(pid, lane, kind="role", flow=flow, meta={"lane_of": flow},
                                  title=(lane.get("name") or "").strip() or f"Lane {lane.get('id')}")
                if parent:
                    self.edge(role, parent, "part_of", "nested lane", {"element": lane.get("id")})
                for ref in lane.findall(f"{{{BPMN_NS}}}flowNodeRef"):
                    owner[(ref.text or "").strip()] = role  # an inner lane, read later, overrides
                for child in lane.findall(f"{{{BPMN_NS}}}childLaneSet"):
                    walk(child, role)

        for lane_set in box.findall(f"{{{BPMN_NS}}}laneSet"):
            walk(lane_set, None)
        return owner

    def sequence_flow(self, pid: str, el: ET.Element, nodes: dict[str, str], gone: dict[str, str],
                      box: ET.Element) -> None:
        fid = self.need_id(el, pid)
        if not fid:
            return
        ends, wrong = [], []
        for ref in ("sourceRef", "targetRef"):
            value = _ref(el, ref)
            if value in nodes:
                ends.append(nodes[value])
            elif value in gone:
                return  # the flow of a boundary event left out goes with it (listed once, as the event)
            else:
                wrong.append(f"{ref} {value!r} is not a flow node of process {pid!r} "
                             f"(or of the sub-process that holds the flow)")
        if wrong:
            self.broken(pid, fid, "; ".join(wrong) + ("; the sequence flow is left out" if not self.strict else ""),
                        ends[0] if ends else None)
            return
        condition = _text(el.find(f"{{{BPMN_NS}}}conditionExpression"))
        source = next((n for n in box if n.get("id") == el.get("sourceRef")), None)
        default = source is not None and source.get("default") == fid
        note = (el.get("name") or "").strip() or condition or ("default" if default else None)
        self.edge(ends[0], ends[1], "precedes", note,
                  {"element": fid, **({"condition": condition} if condition else {}), **({"default": True} if default else {})})

    def data(self, pid: str, el: ET.Element, me: str, flow: str) -> None:
        """Input associations as ``requires``, output associations as ``produces``."""
        box_refs = self.data_refs(pid, flow)
        for assoc, ref_tag, type_ in (("dataInputAssociation", "sourceRef", "requires"),
                                      ("dataOutputAssociation", "targetRef", "produces")):
            for a in el.findall(f"{{{BPMN_NS}}}{assoc}"):
                refs = [(ref.text or "").strip() for ref in a.findall(f"{{{BPMN_NS}}}{ref_tag}")]
                aid = a.get("id") or el.get("id")
                if not refs:
                    self.broken(pid, aid, f"a {assoc} of {el.get('id')!r} has no {ref_tag}: it names no data", me)
                for ref in refs:
                    target = box_refs.get(ref)
                    if target:
                        self.edge(me, target, type_, None, {"element": aid})
                    elif ref in self.dropped_refs:
                        problem = self.dropped_refs.pop(ref)  # listed once, where it is first used
                        self.dropped_used.add(ref)
                        self.broken(pid, ref, f"{problem}; the {assoc} of {el.get('id')!r} that names it is left out", me)
                    elif ref in self.dropped_used:
                        continue
                    elif ref not in self.ids:
                        self.broken(pid, aid, f"the {ref_tag} {ref!r} of a {assoc} of {el.get('id')!r} names no "
                                              f"element of the document", me)

    def data_refs(self, pid: str, flow: str) -> dict[str, str]:
        """Data object / store reference ids of a process -> artifact entry ids (one per object)."""
        cache = getattr(self, "_refs", {})
        if pid in cache:
            return cache[pid]
        proc = next(p for p in self.root.findall(f"{{{BPMN_NS}}}process") if p.get("id") == pid)
        objects = {o.get("id"): o for o in proc.iter(f"{{{BPMN_NS}}}dataObject") if self.need_id(o, pid)}
        refs: dict[str, str] = {}
        for obj in objects.values():
            refs[obj.get("id")] = self.entry(pid, obj, kind="artifact", flow=flow, meta={"flow": flow})
        for ref in proc.iter(f"{{{BPMN_NS}}}dataObjectReference"):
            target = ref.get("dataObjectRef")
            if not self.need_id(ref, pid):
                continue
            if target not in objects:
                problem = (f"dataObjectRef {target!r} is not a data object of process {pid!r}" if target
                           else "the data object reference has no dataObjectRef")
                if self.strict:
                    self.broken(pid, ref.get("id"), problem)
                self.dropped_refs[ref.get("id")] = problem  # listed where an association uses it, else at the end
                self.dropped_pid[ref.get("id")] = pid
                continue
            obj = objects[target]
            title = (obj.get("name") or ref.get("name") or "").strip() or None
            refs[ref.get("id")] = self.entry(pid, obj, kind="artifact", flow=flow, meta={"flow": flow}, title=title)
            self.elements.setdefault(ref.get("id"), refs[ref.get("id")])
        for ref in proc.iter(f"{{{BPMN_NS}}}dataStoreReference"):
            if not self.need_id(ref, pid):
                continue
            store = self.stores.get(_ref(ref, "dataStoreRef"))
            el = store if store is not None else ref
            title = ((el.get("name") or ref.get("name") or "").strip()) or None
            refs[ref.get("id")] = self.entry(pid, el, kind="artifact", flow=flow, title=title,
                                             meta={"flow": flow, "store": True, "input": True, "output": True})
            self.elements.setdefault(ref.get("id"), refs[ref.get("id")])
        cache[pid] = refs
        self._refs = cache
        return refs

    def message_flows(self) -> None:
        for mf in self.root.iter(f"{{{BPMN_NS}}}messageFlow"):
            mid = self.need_id(mf)
            if not mid:
                continue
            ends = (_ref(mf, "sourceRef"), _ref(mf, "targetRef"))
            src, dst = (self.elements.get(e or "") for e in ends)
            unknown = [e for e in ends if e not in self.elements and e not in self.participants]
            if unknown:
                self.broken(None, mid, f"the message flow's {' and '.join(repr(e) for e in unknown)} names no flow "
                                       f"node and no participant; left out", src or dst)
                continue
            if not src or not dst:
                self.skipped.append(f"message flow {mid}: {ends[0]} -> {ends[1]} "
                                    f"(an end is a collapsed pool, not a flow node)")
                continue
            name = (mf.get("name") or "").strip()
            self.edge(src, dst, "precedes", f"message: {name}" if name else "message",
                      {"element": mid, "handoff": True})

    def attach_broken(self) -> list[dict]:
        """Each broken element into the metadata (``broken``) of the entry it hangs on; the list
        of all, for the ingest report (an element of a process with no flow node hangs on none)."""
        by_entry: dict[str, list[dict]] = {}
        out = []
        for b in self.broken_found:
            anchor = b["anchor"] or self.anchors.get(b["process"]) or (
                next(iter(self.anchors.values()), None) if not b["process"] else None)
            out.append({"file": self.file, "element": b["element"], "process": b["process"], "problem": b["problem"],
                        "entry": anchor})
            if anchor:
                by_entry.setdefault(anchor, []).append({"element": b["element"], "problem": b["problem"]})
        for e in self.entries:
            if e["id"] in by_entry:
                meta = json.loads(e["metadata"])
                meta["broken"] = by_entry[e["id"]]
                e["metadata"] = json.dumps(meta, sort_keys=True)
        return out


def parse_bpmn(xml: bytes | str, *, file: str = "model.bpmn", strict: bool = False) -> BpmnModel:
    """Read one BPMN 2.0 document into bank rows (see the module doc for the mapping).

    ``file`` names the document in errors and in each entry's ``metadata.bpmn.file``. A broken
    element (a sequence flow whose ``sourceRef``/``targetRef`` names no flow node of its process,
    a boundary event whose ``attachedToRef`` is not an activity, a data object reference without
    a data object, a data association naming no data, an element without an id, ...) is left out
    and listed in :attr:`BpmnModel.broken`, and in the ``broken`` metadata of the entry nearest
    to it (where :func:`~kbtools.graph.holes.workflow_holes` reports it as ``broken_reference``).
    ``strict=True`` refuses the document at its first broken element instead. Either way raises
    :class:`~kbtools.errors.BpmnError` for a DTD or entity declaration, XML that is not well
    formed, a root that is not BPMN ``<definitions>``, or a document without a process.

    >>> parse_bpmn(b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"/>', file="x.bpmn")
    Traceback (most recent call last):
    ...
    kbtools.errors.BpmnError: x.bpmn: the document defines no <process>: nothing to read
    >>> bad = (b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P">'
    ...        b'<task id="T"/><sequenceFlow id="F" sourceRef="T" targetRef="Gone"/></process></definitions>')
    >>> [(b["element"], b["problem"][:38]) for b in parse_bpmn(bad).broken]
    [('F', "targetRef 'Gone' is not a flow node of")]
    >>> parse_bpmn(bad, file="x.bpmn", strict=True)
    Traceback (most recent call last):
    ...
    kbtools.errors.BpmnError: x.bpmn: element 'F': targetRef 'Gone' is not a flow node of process 'P' (or of the sub-process that holds the flow)
    """
    root = _read(xml, file, strict)
    if root.find(f"{{{BPMN_NS}}}process") is None:
        raise BpmnError(file, None, "the document defines no <process>: nothing to read")
    reader = _Reader(root, file, strict)
    reader.read()
    broken = reader.attach_broken()
    entries = pl.DataFrame(reader.entries, schema=_ENTRY_SCHEMA)
    edges = pl.DataFrame(list(reader.edges.values()), schema=_EDGE_SCHEMA)
    return BpmnModel(entries, edges, dict(reader.elements), dict(reader.flows), list(reader.skipped), broken)


def color_bpmn(xml: bytes | str, holes: dict[str, tuple[str, str]], *, file: str = "model.bpmn") -> bytes:
    """The same BPMN document with the diagram shapes of ``holes`` coloured (bytes, UTF-8).

    ``holes`` maps a BPMN element id to ``(severity, label)``; each shape (``bpmndi:BPMNShape``
    whose ``bpmnElement`` is that id) gets the bpmn.io colour attributes ``bioc:fill`` /
    ``bioc:stroke`` and the OMG non-normative ``color:background-color`` / ``color:border-color``
    (:data:`HOLE_COLORS` by severity), and a ``kbh:holes`` attribute with the label. Everything
    else is written back as read (the namespace prefixes are kept).

    >>> xml = (b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" '
    ...        b'xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"><process id="P"><task id="T"/></process>'
    ...        b'<bpmndi:BPMNDiagram><bpmndi:BPMNPlane bpmnElement="P"><bpmndi:BPMNShape id="T_di" bpmnElement="T"/>'
    ...        b'</bpmndi:BPMNPlane></bpmndi:BPMNDiagram></definitions>')
    >>> b'bioc:stroke="#c62828"' in color_bpmn(xml, {"T": ("high", "dead_end")})
    True
    """
    data = xml.encode() if isinstance(xml, str) else bytes(xml)
    root, source = _parse(data, file)
    prefixes = _prefixes(source)
    for prefix, uri in prefixes.items():
        ET.register_namespace(prefix, uri)
    for prefix, uri in (("bioc", _BIOC_NS), ("color", _COLOR_NS), ("kbh", _KB_NS)):
        if uri not in prefixes.values():
            ET.register_namespace(prefix, uri)
    for shape in root.iter():
        if _local(shape.tag) not in ("BPMNShape", "BPMNEdge"):
            continue
        hit = holes.get(shape.get("bpmnElement") or "")
        if not hit:
            continue
        fill, stroke = HOLE_COLORS.get(hit[0], HOLE_COLORS["high"])
        shape.set(f"{{{_BIOC_NS}}}fill", fill)
        shape.set(f"{{{_BIOC_NS}}}stroke", stroke)
        shape.set(f"{{{_COLOR_NS}}}background-color", fill)
        shape.set(f"{{{_COLOR_NS}}}border-color", stroke)
        shape.set(f"{{{_KB_NS}}}holes", hit[1])
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _prefixes(data: bytes | str) -> dict[str, str]:
    """The namespace prefixes a document declares (so that the written copy keeps them)."""
    import io

    found: dict[str, str] = {}
    stream = io.StringIO(data) if isinstance(data, str) else io.BytesIO(data)
    for _, (prefix, uri) in ET.iterparse(stream, events=("start-ns",)):
        if prefix and prefix not in found and not re.fullmatch(r"ns\d+", prefix):
            found[prefix] = uri
    return found
