"""Writes the BPMN 2.0 test models of tests/test_bpmn.py (bpmn.io-style XML with diagram shapes).

Run ``python tests/data/bpmn/make_models.py`` after changing a model below; the .bpmn files are
committed. Each model is a small spec: processes with lanes, nodes (tag, name, extras) and
sequence flows; optional pools and message flows. Shapes are laid out left to right by depth.
"""

from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

HERE = pathlib.Path(__file__).parent
HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
        'xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" '
        'xmlns:di="http://www.omg.org/spec/DD/20100524/DI" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="Definitions_{name}" '
        'targetNamespace="http://bpmn.io/schema/bpmn" exporter="kbtools test models" exporterVersion="1.0">\n')
SIZE = {"task": (100, 80), "subProcess": (350, 200), "gateway": (50, 50), "event": (36, 36), "data": (36, 50)}


def _kind(tag):
    if tag.endswith("Gateway"):
        return "gateway"
    if tag.endswith("Event"):
        return "event"
    if tag.startswith("data"):
        return "data"
    return "subProcess" if tag in ("subProcess", "adHocSubProcess") else "task"


def _node(n, flows_out, flows_in, depth=2):
    nid, tag, name, extra = (*n, {})[:4]
    pad = "  " * depth
    attrs = f" id={quoteattr(nid)}" + (f" name={quoteattr(name)}" if name else "")
    for key in ("attachedToRef", "default", "dataObjectRef", "dataStoreRef", "calledElement", "triggeredByEvent",
                "isForCompensation"):
        if key in extra:
            attrs += f" {key}={quoteattr(extra[key])}"
    if extra.get("cancel") is False:
        attrs += ' cancelActivity="false"'
    if tag in ("userTask", "serviceTask"):
        attrs += ' camunda:asyncBefore="true"'
    body = []
    if extra.get("doc"):
        body.append(f"{pad}  <bpmn:documentation>{escape(extra['doc'])}</bpmn:documentation>")
    body += [f"{pad}  <bpmn:incoming>{f}</bpmn:incoming>" for f in flows_in.get(nid, [])]
    body += [f"{pad}  <bpmn:outgoing>{f}</bpmn:outgoing>" for f in flows_out.get(nid, [])]
    for i, ref in enumerate(extra.get("inputs", [])):
        body.append(f'{pad}  <bpmn:dataInputAssociation id="{nid}_in{i}"><bpmn:sourceRef>{ref}</bpmn:sourceRef></bpmn:dataInputAssociation>')
    for i, ref in enumerate(extra.get("outputs", [])):
        body.append(f'{pad}  <bpmn:dataOutputAssociation id="{nid}_out{i}"><bpmn:targetRef>{ref}</bpmn:targetRef></bpmn:dataOutputAssociation>')
    if extra.get("trigger") == "link":
        body.append(f'{pad}  <bpmn:linkEventDefinition id="{nid}_def" name={quoteattr(extra["link"])} />')
    elif extra.get("trigger"):
        body.append(f'{pad}  <bpmn:{extra["trigger"]}EventDefinition id="{nid}_def" />')
    if "children" in extra:
        body += _content(extra["children"], depth + 1)
    if not body:
        return [f"{pad}<bpmn:{tag}{attrs} />"]
    return [f"{pad}<bpmn:{tag}{attrs}>", *body, f"{pad}</bpmn:{tag}>"]


def _content(proc, depth):
    pad = "  " * depth
    out_, in_ = {}, {}
    for f in proc.get("flows", []):
        out_.setdefault(f[1], []).append(f[0])
        in_.setdefault(f[2], []).append(f[0])
    lines = []
    if proc.get("lanes"):
        lines.append(f'{pad}<bpmn:laneSet id="{proc["id"]}_lanes">')
        lines += _lanes(proc["lanes"], depth + 1)
        lines.append(f"{pad}</bpmn:laneSet>")
    for obj_id, name in proc.get("objects", []):
        lines.append(f"{pad}<bpmn:dataObject id={quoteattr(obj_id)}" + (f" name={quoteattr(name)}" if name else "") + " />")
    for n in proc.get("nodes", []):
        lines += _node(n, out_, in_, depth)
    for f in proc.get("flows", []):
        fid, src, dst, name, cond = (*f, None, None)[:5]
        attrs = f'id="{fid}" sourceRef="{src}" targetRef="{dst}"' + (f" name={quoteattr(name)}" if name else "")
        if cond:
            lines.append(f'{pad}<bpmn:sequenceFlow {attrs}><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">'
                         f"{escape(cond)}</bpmn:conditionExpression></bpmn:sequenceFlow>")
        else:
            lines.append(f"{pad}<bpmn:sequenceFlow {attrs} />")
    for aid, src, dst in proc.get("associations", []):
        lines.append(f'{pad}<bpmn:association id="{aid}" associationDirection="One" sourceRef="{src}" targetRef="{dst}" />')
    return lines


def _lanes(lanes, depth):
    pad = "  " * depth
    lines = []
    for lane_id, name, refs, *children in lanes:
        lines.append(f'{pad}<bpmn:lane id="{lane_id}" name={quoteattr(name)}>')
        lines += [f"{pad}  <bpmn:flowNodeRef>{r}</bpmn:flowNodeRef>" for r in refs]
        if children and children[0]:
            lines.append(f'{pad}  <bpmn:childLaneSet id="{lane_id}_set">')
            lines += _lanes(children[0], depth + 2)
            lines.append(f"{pad}  </bpmn:childLaneSet>")
        lines.append(f"{pad}</bpmn:lane>")
    return lines


def _layout(proc, y0):
    """Shapes for the nodes of one process (depth from the sources along sequence flows)."""
    nodes = {n[0]: n for n in proc.get("nodes", [])}
    succ = {}
    for f in proc.get("flows", []):
        succ.setdefault(f[1], []).append(f[2])
    depth = {n: 0 for n in nodes}
    for _ in range(len(nodes)):
        for a, bs in succ.items():
            for b in bs:
                if b in depth and depth[b] < depth[a] + 1 and depth[a] + 1 < len(nodes):
                    depth[b] = depth[a] + 1
    for nid, n in nodes.items():
        extra = n[3] if len(n) > 3 else {}
        if "attachedToRef" in extra:
            depth[nid] = depth[extra["attachedToRef"]]
    level_count, shapes = {}, {}
    for nid in nodes:
        d = depth[nid]
        row = level_count.get(d, 0)
        level_count[d] = row + 1
        w, h = SIZE[_kind(nodes[nid][1])]
        x, y = 180 + 160 * d, y0 + 60 + 130 * row
        extra = nodes[nid][3] if len(nodes[nid]) > 3 else {}
        if "attachedToRef" in extra:
            hx, hy, hw, hh = shapes[extra["attachedToRef"]]
            x, y = hx + hw - 20, hy + hh - 18
        shapes[nid] = (x, y, w, h)
    return shapes, max(level_count.values(), default=1)


def write(name, processes, pools=None, messages=()):
    lines = [HEAD.format(name=name)]
    if pools:
        lines.append(f'  <bpmn:collaboration id="Collab_{name}">')
        for pid, pname, proc in pools:
            ref = f' processRef="{proc}"' if proc else ""
            lines.append(f'    <bpmn:participant id="{pid}" name={quoteattr(pname)}{ref} />')
        for mid, src, dst, mname in messages:
            lines.append(f'    <bpmn:messageFlow id="{mid}" name={quoteattr(mname)} sourceRef="{src}" targetRef="{dst}" />')
        lines.append("  </bpmn:collaboration>")
    for proc in processes:
        lines.append(f'  <bpmn:process id="{proc["id"]}" name={quoteattr(proc["name"])} isExecutable="true">')
        lines += _content(proc, 2)
        lines.append("  </bpmn:process>")
    plane = f"Collab_{name}" if pools else processes[0]["id"]
    lines.append(f'  <bpmndi:BPMNDiagram id="Diagram_{name}">\n    <bpmndi:BPMNPlane id="Plane_{name}" bpmnElement="{plane}">')
    y0, where = 0, {}
    for proc in processes:
        shapes, rows = _layout(proc, y0)
        if pools:
            pid = next(p for p, _, ref in pools if ref == proc["id"])
            width = max((x + w for x, _, w, _ in shapes.values()), default=400) + 40
            lines.append(f'      <bpmndi:BPMNShape id="{pid}_di" bpmnElement="{pid}" isHorizontal="true">'
                         f'<dc:Bounds x="100" y="{y0}" width="{width}" height="{130 * rows + 60}" /></bpmndi:BPMNShape>')
        for nid, (x, y, w, h) in shapes.items():
            lines.append(f'      <bpmndi:BPMNShape id="{nid}_di" bpmnElement="{nid}"><dc:Bounds x="{x}" y="{y}" '
                         f'width="{w}" height="{h}" /></bpmndi:BPMNShape>')
        where.update(shapes)
        for fid, src, dst, *_ in proc.get("flows", []):
            if src not in shapes or dst not in shapes:  # a flow to nowhere (broken_refs) has no edge drawn
                continue
            (x1, y1, w1, h1), (x2, y2, w2, h2) = shapes[src], shapes[dst]
            lines.append(f'      <bpmndi:BPMNEdge id="{fid}_di" bpmnElement="{fid}"><di:waypoint x="{x1 + w1}" y="{y1 + h1 // 2}" />'
                         f'<di:waypoint x="{x2}" y="{y2 + h2 // 2}" /></bpmndi:BPMNEdge>')
        y0 += 130 * rows + 100
    for mid, src, dst, _ in messages:
        if src in where and dst in where:
            (x1, y1, w1, h1), (x2, y2, w2, h2) = where[src], where[dst]
            lines.append(f'      <bpmndi:BPMNEdge id="{mid}_di" bpmnElement="{mid}"><di:waypoint x="{x1 + w1 // 2}" y="{y1 + h1}" />'
                         f'<di:waypoint x="{x2 + w2 // 2}" y="{y2}" /></bpmndi:BPMNEdge>')
    lines.append("    </bpmndi:BPMNPlane>\n  </bpmndi:BPMNDiagram>\n</bpmn:definitions>\n")
    (HERE / f"{name}.bpmn").write_text("\n".join(lines), encoding="utf-8")


def proc(pid, name, nodes, flows, lanes=None, objects=(), associations=()):
    return {"id": pid, "name": name, "nodes": nodes, "flows": flows, "lanes": lanes, "objects": list(objects),
            "associations": list(associations)}


def lane(nodes, name="Clerk", lane_id="Lane_1"):
    return [(lane_id, name, [n[0] for n in nodes])]


def main():
    # joins: several exclusive merges, each with several incoming flows and one outgoing; no hole
    n = [("Start", "startEvent", "Request received"), ("Check", "userTask", "Check request"),
         ("Split1", "exclusiveGateway", "Complete?"), ("Fix", "task", "Ask for details"), ("Join1", "exclusiveGateway", None),
         ("Split2", "exclusiveGateway", "Urgent?"), ("Fast", "task", "Handle now"), ("Slow", "task", "Queue request"),
         ("Join2", "exclusiveGateway", None), ("End", "endEvent", "Request handled")]
    f = [("F1", "Start", "Check"), ("F2", "Check", "Split1"), ("F3", "Split1", "Join1", "yes"), ("F4", "Split1", "Fix", "no"),
         ("F5", "Fix", "Join1"), ("F6", "Join1", "Split2"), ("F7", "Split2", "Fast", "yes"), ("F8", "Split2", "Slow", "no"),
         ("F9", "Fast", "Join2"), ("F10", "Slow", "Join2"), ("F11", "Join2", "End")]
    write("joins", [proc("Process_joins", "Request handling", n, f, lane(n))])
    # one_branch: an exclusive split with one unlabelled flow (to an end event titled END_EVENT)
    n = [("Start", "startEvent", "Claim in"), ("Split", "exclusiveGateway", "Claim valid?"), ("End", "endEvent", "END_EVENT")]
    write("one_branch", [proc("Process_one_branch", "Claims", n, [("F1", "Start", "Split"), ("F2", "Split", "End")], lane(n))])
    # boundary: the review's only way out is its timer; the valid twin has both exits
    n = [("Start", "startEvent", "Draft ready"), ("Review", "userTask", "Review draft"),
         ("Timer", "boundaryEvent", "Review overdue", {"attachedToRef": "Review", "trigger": "timer"}),
         ("Escalate", "task", "Escalate to editor"), ("End", "endEvent", "Escalated")]
    f = [("F1", "Start", "Review"), ("F2", "Timer", "Escalate"), ("F3", "Escalate", "End")]
    write("boundary_exception_only", [proc("Process_boundary", "Editing", n, f, lane(n))])
    n2 = n + [("Publish", "task", "Publish"), ("End2", "endEvent", "Published")]
    write("boundary_ok", [proc("Process_boundary_ok", "Editing", n2, f + [("F4", "Review", "Publish"), ("F5", "Publish", "End2")],
                               lane(n2))])
    # parallel: two paths of a parallel split meet at a task with no join; the valid twin joins them
    n = [("Start", "startEvent", "Order paid"), ("Fork", "parallelGateway", None), ("Pick", "task", "Pick items"),
         ("Label", "task", "Print label"), ("Pack", "task", "Pack parcel"), ("End", "endEvent", "Shipped")]
    f = [("F1", "Start", "Fork"), ("F2", "Fork", "Pick"), ("F3", "Fork", "Label"), ("F4", "Pick", "Pack"),
         ("F5", "Label", "Pack"), ("F6", "Pack", "End")]
    write("parallel_no_join", [proc("Process_parallel", "Shipping", n, f, lane(n))])
    n2 = n + [("Sync", "parallelGateway", None)]
    f2 = [("F1", "Start", "Fork"), ("F2", "Fork", "Pick"), ("F3", "Fork", "Label"), ("F4", "Pick", "Sync"),
          ("F5", "Label", "Sync"), ("F7", "Sync", "Pack"), ("F6", "Pack", "End")]
    write("parallel_ok", [proc("Process_parallel_ok", "Shipping", n2, f2, lane(n2))])
    # deadlock: an exclusive split whose two paths meet at a parallel join
    n = [("Start", "startEvent", "Ticket in"), ("Choose", "exclusiveGateway", "Hardware fault?"),
         ("Swap", "task", "Swap device"), ("Patch", "task", "Install patch"), ("Wait", "parallelGateway", "Both done"),
         ("Close", "task", "Close ticket"), ("End", "endEvent", "Closed")]
    f = [("F1", "Start", "Choose"), ("F2", "Choose", "Swap", "yes"), ("F3", "Choose", "Patch", "no"),
         ("F4", "Swap", "Wait"), ("F5", "Patch", "Wait"), ("F6", "Wait", "Close"), ("F7", "Close", "End")]
    write("deadlock", [proc("Process_deadlock", "Support", n, f, lane(n))])
    # unreachable: a branch with no start cuts off the steps after it; one finding
    n = [("Start", "startEvent", "Day starts"), ("Open", "task", "Open shop"), ("End", "endEvent", "Open"),
         ("Restock", "task", "Restock shelves"), ("Count", "task", "Count stock"), ("Report", "task", "Report shortages"),
         ("End2", "endEvent", "Reported")]
    f = [("F1", "Start", "Open"), ("F2", "Open", "End"), ("F3", "Restock", "Count"), ("F4", "Count", "Report"),
         ("F5", "Report", "End2")]
    write("unreachable_chain", [proc("Process_unreachable", "Shop", n, f, lane(n))])
    # no lanes at all: one no_owner finding for the flow
    n = [("Start", "startEvent", "Invoice in"), ("Book", "task", "Book invoice"), ("Approve", "userTask", "Approve invoice"),
         ("Pay", "serviceTask", "Pay invoice"), ("End", "endEvent", "Paid")]
    f = [("F1", "Start", "Book"), ("F2", "Book", "Approve"), ("F3", "Approve", "Pay"), ("F4", "Pay", "End")]
    write("no_lanes", [proc("Process_no_lanes", "Invoices", n, f)])
    # data: objects with states, a store, an input nobody makes and an output nobody uses
    n = [("Start", "startEvent", "Application in"), ("Score", "task", "Score application", {"inputs": ["Ref_app", "Ref_policy"], "outputs": ["Ref_score"]}),
         ("Decide", "task", "Decide", {"inputs": ["Ref_score", "Ref_crm"], "outputs": ["Ref_letter", "Ref_crm"]}),
         ("End", "endEvent", "Decided")]
    n += [("Ref_app", "dataObjectReference", "Application", {"dataObjectRef": "Obj_app"}),
          ("Ref_policy", "dataObjectReference", "Scoring policy", {"dataObjectRef": "Obj_policy"}),
          ("Ref_score", "dataObjectReference", "Score [draft]", {"dataObjectRef": "Obj_score"}),
          ("Ref_letter", "dataObjectReference", "Decision letter", {"dataObjectRef": "Obj_letter"}),
          ("Ref_crm", "dataStoreReference", "CRM", {})]
    f = [("F1", "Start", "Score"), ("F2", "Score", "Decide"), ("F3", "Decide", "End")]
    objects = [("Obj_app", "Application"), ("Obj_policy", "Scoring policy"), ("Obj_score", "Score"), ("Obj_letter", "Decision letter")]
    p = proc("Process_data", "Credit", n, f, lane(n[:4]), objects)
    write("data", [p])
    # sub-process with its own start and end, documentation, nested lanes
    inner = {"nodes": [("S_start", "startEvent", "Review starts"), ("S_read", "task", "Read contract"),
                       ("S_sign", "task", "Sign contract"), ("S_end", "endEvent", "Review done")],
             "flows": [("SF1", "S_start", "S_read"), ("SF2", "S_read", "S_sign"), ("SF3", "S_sign", "S_end")]}
    n = [("Start", "startEvent", "Deal won"), ("Prepare", "task", "Prepare contract", {"doc": "Legal drafts the contract from the template. The sales rep checks the prices."}),
         ("Review", "subProcess", "Contract review", {"children": inner}), ("End", "endEvent", "Contract signed")]
    f = [("F1", "Start", "Prepare"), ("F2", "Prepare", "Review"), ("F3", "Review", "End")]
    lanes = [("Lane_legal", "Legal", [], [("Lane_drafting", "Drafting", ["Start", "Prepare"]),
                                           ("Lane_approval", "Approval", ["Review", "End"])])]
    write("subprocess", [proc("Process_sub", "Contracts", n, f, lanes)])
    # collaboration: two pools, message flows between them, a collapsed pool
    buyer = [("B_start", "startEvent", "Need goods"), ("B_order", "sendTask", "Send order"), ("B_wait", "receiveTask", "Receive goods"),
             ("B_end", "endEvent", "Goods in")]
    seller = [("S_start", "startEvent", "Order in", {"trigger": "message"}), ("S_ship", "task", "Ship goods"),
              ("S_bill", "sendTask", "Send invoice"), ("S_end", "endEvent", "Done")]
    write("collaboration", [proc("Process_buyer", "Buying", buyer, [("BF1", "B_start", "B_order"), ("BF2", "B_order", "B_wait"), ("BF3", "B_wait", "B_end")], lane(buyer, "Buyer", "Lane_buyer")),
                            proc("Process_seller", "Selling", seller, [("SF1", "S_start", "S_ship"), ("SF2", "S_ship", "S_bill"), ("SF3", "S_bill", "S_end")], lane(seller, "Seller", "Lane_seller"))],
          pools=[("Pool_buyer", "Buyer company", "Process_buyer"), ("Pool_seller", "Supplier", "Process_seller"), ("Pool_bank", "Bank", None)],
          messages=[("M1", "B_order", "S_start", "purchase order"), ("M2", "S_ship", "B_wait", "goods"), ("M3", "S_bill", "Pool_bank", "invoice copy")])
    order_to_cash()
    semantics()


def semantics():
    """The BPMN semantics a process expert checks: each model is clean as drawn (or has the one hole
    named beside it), where a walker that does not know the construct finds holes."""
    # compensation: a compensation boundary event, its handler and the association between them
    n = [("Start", "startEvent", "Trip booked"), ("Hotel", "task", "Book hotel"),
         ("Comp", "boundaryEvent", "Undo booking", {"attachedToRef": "Hotel", "trigger": "compensate"}),
         ("Cancel", "task", "Cancel hotel", {"isForCompensation": "true"}),
         ("Charge", "task", "Charge card"), ("End", "endEvent", "Trip paid")]
    f = [("F1", "Start", "Hotel"), ("F2", "Hotel", "Charge"), ("F3", "Charge", "End")]
    write("compensation", [proc("Process_compensation", "Travel", n, f, lane(n), associations=[("A1", "Comp", "Cancel")])])
    # ad-hoc sub-process: its activities run in any order, with no flows
    inner = {"nodes": [("AH_flight", "task", "Book flight"), ("AH_hotel", "task", "Book hotel"),
                       ("AH_car", "task", "Rent car")], "flows": []}
    n = [("Start", "startEvent", "Trip approved"), ("Plan", "adHocSubProcess", "Plan trip", {"children": inner}),
         ("End", "endEvent", "Trip planned")]
    write("adhoc", [proc("Process_adhoc", "Trip planning", n, [("F1", "Start", "Plan"), ("F2", "Plan", "End")], lane(n))])
    # link events: a throw and a catch with the same link name are a "go to"
    n = [("Start", "startEvent", "Claim in"), ("Log", "task", "Log claim"),
         ("Throw", "intermediateThrowEvent", "To assessment", {"trigger": "link", "link": "Assess"}),
         ("Catch", "intermediateCatchEvent", "From intake", {"trigger": "link", "link": "Assess"}),
         ("Assess", "task", "Assess claim"), ("End", "endEvent", "Claim assessed")]
    f = [("F1", "Start", "Log"), ("F2", "Log", "Throw"), ("F3", "Catch", "Assess"), ("F4", "Assess", "End")]
    write("link_events", [proc("Process_links", "Claims intake", n, f, lane(n))])
    # event sub-process: started by its own event, not by the parent's flow
    inner = {"nodes": [("ES_start", "startEvent", "Customer cancels", {"trigger": "message"}),
                       ("ES_stop", "task", "Stop handling"), ("ES_end", "endEvent", "Cancelled")],
             "flows": [("ESF1", "ES_start", "ES_stop"), ("ESF2", "ES_stop", "ES_end")]}
    n = [("Start", "startEvent", "Complaint in"), ("Handle", "task", "Handle complaint"), ("End", "endEvent", "Complaint closed"),
         ("Cancel", "subProcess", "Cancellation", {"triggeredByEvent": "true", "children": inner})]
    write("event_subprocess", [proc("Process_event_sub", "Complaints", n, [("F1", "Start", "Handle"), ("F2", "Handle", "End")], lane(n))])
    # the same with a parent that has no start event: its start-less first task is its start
    n = [("Handle", "task", "Handle complaint"), ("Reply", "task", "Reply to customer"), ("End", "endEvent", "Complaint closed"),
         ("Cancel", "subProcess", "Cancellation", {"triggeredByEvent": "true", "children": inner})]
    write("event_subprocess_implicit_start", [proc("Process_event_sub_implicit", "Complaints without start event", n,
                                                   [("F1", "Handle", "Reply"), ("F2", "Reply", "End")], lane(n))])
    # implicit parallel starts: two start events flow into one task with no join: it runs twice
    n = [("Phone", "startEvent", "Order by phone"), ("Web", "startEvent", "Order online"), ("Enter", "task", "Enter order"),
         ("Ship", "task", "Ship order"), ("End", "endEvent", "Order shipped")]
    f = [("F1", "Phone", "Enter"), ("F2", "Web", "Enter"), ("F3", "Enter", "Ship"), ("F4", "Ship", "End")]
    write("fake_join", [proc("Process_fake_join", "Orders", n, f, lane(n))])
    # the valid twin: the two starts merge at an exclusive gateway first
    n2 = n + [("Merge", "exclusiveGateway", None)]
    f2 = [("F1", "Phone", "Merge"), ("F2", "Web", "Merge"), ("F5", "Merge", "Enter"), ("F3", "Enter", "Ship"), ("F4", "Ship", "End")]
    write("fake_join_ok", [proc("Process_fake_join_ok", "Orders merged", n2, f2, lane(n2))])
    # pooled processes: the participant owns its process; lanes only when asked for
    a = [("A_start", "startEvent", "Need repair"), ("A_call", "sendTask", "Call the garage"), ("A_pay", "task", "Pay the bill"),
         ("A_end", "endEvent", "Car back")]
    b = [("G_start", "startEvent", "Call in", {"trigger": "message"}), ("G_fix", "task", "Repair car"),
         ("G_bill", "sendTask", "Send bill"), ("G_end", "endEvent", "Repaired")]
    write("pooled", [proc("Process_driver", "Driver", a, [("AF1", "A_start", "A_call"), ("AF2", "A_call", "A_pay"), ("AF3", "A_pay", "A_end")]),
                     proc("Process_garage", "Garage", b, [("GF1", "G_start", "G_fix"), ("GF2", "G_fix", "G_bill"), ("GF3", "G_bill", "G_end")],
                          [("Lane_mechanic", "Mechanic", ["G_start", "G_fix", "G_end"])])],
          pools=[("Pool_driver", "Driver", "Process_driver"), ("Pool_garage", "Garage", "Process_garage")],
          messages=[("M1", "A_call", "G_start", "repair request"), ("M2", "G_bill", "A_pay", "bill")])
    # broken references a modeler still opens: a flow to nowhere, a boundary event on a gateway, a
    # data object reference without a data object
    n = [("Start", "startEvent", "Parcel in"), ("Check", "task", "Check parcel", {"inputs": ["Ref_label"]}),
         ("Gate", "exclusiveGateway", "Damaged?"), ("Claim", "task", "File claim"), ("Store", "task", "Store parcel"),
         ("Late", "boundaryEvent", "Too late", {"attachedToRef": "Gate", "trigger": "timer"}), ("Escalate", "task", "Escalate"),
         ("End", "endEvent", "Parcel handled"), ("End2", "endEvent", "Escalated"),
         ("Ref_label", "dataObjectReference", "Shipping label", {})]
    f = [("F1", "Start", "Check"), ("F2", "Check", "Gate"), ("F3", "Gate", "Claim", "yes"), ("F4", "Gate", "Store", "no"),
         ("F5", "Claim", "End"), ("F6", "Store", "End"), ("F7", "Late", "Escalate"), ("F8", "Escalate", "End2"),
         ("F_ghost", "Store", "Ghost")]
    write("broken_refs", [proc("Process_broken", "Parcels", n, f, lane(n[:9]))])


def order_to_cash():
    """A realistic order-to-cash collaboration: customer pool, company pool with four lanes, gateways
    of every kind, a boundary timer, an event-based wait, a sub-process, data objects and a store."""
    ship = {"nodes": [("SH_start", "startEvent", "Shipment starts"), ("SH_fork", "parallelGateway", None),
                      ("SH_pick", "userTask", "Pick goods"), ("SH_docs", "task", "Print shipping documents"),
                      ("SH_join", "parallelGateway", None), ("SH_load", "task", "Load truck"), ("SH_end", "endEvent", "Shipped")],
            "flows": [("SHF1", "SH_start", "SH_fork"), ("SHF2", "SH_fork", "SH_pick"), ("SHF3", "SH_fork", "SH_docs"),
                      ("SHF4", "SH_pick", "SH_join"), ("SHF5", "SH_docs", "SH_join"), ("SHF6", "SH_join", "SH_load"),
                      ("SHF7", "SH_load", "SH_end")]}
    company = [
        ("O_start", "startEvent", "Purchase order received", {"trigger": "message", "outputs": ["Ref_po"]}),
        ("O_enter", "userTask", "Enter sales order", {"inputs": ["Ref_po"], "outputs": ["Ref_so", "Ref_erp"],
                                                     "doc": "The sales rep keys the customer's purchase order into the ERP."}),
        ("O_credit", "serviceTask", "Check credit", {"inputs": ["Ref_so", "Ref_erp"]}),
        ("O_ok", "exclusiveGateway", "Credit OK?", {"default": "OF5"}),
        ("O_reject", "sendTask", "Reject order"),
        ("O_ship", "subProcess", "Ship order", {"children": ship}),
        ("O_invoice", "task", "Send invoice", {"inputs": ["Ref_so"], "outputs": ["Ref_inv"]}),
        ("O_wait", "eventBasedGateway", None),
        ("O_paid", "intermediateCatchEvent", "Payment received", {"trigger": "message"}),
        ("O_late", "intermediateCatchEvent", "30 days passed", {"trigger": "timer"}),
        ("O_remind", "task", "Send reminder"),
        ("O_third", "exclusiveGateway", "Third reminder?"),
        ("O_merge", "exclusiveGateway", None),
        ("O_collect", "userTask", "Hand over to collections"),
        ("O_col_timer", "boundaryEvent", "No answer in 14 days", {"attachedToRef": "O_collect", "trigger": "timer", "cancel": False}),
        ("O_notify", "task", "Notify account manager"),
        ("O_apply", "task", "Apply cash", {"inputs": ["Ref_inv"], "outputs": ["Ref_erp"]}),
        ("O_end", "endEvent", "Order closed"),
        ("O_end2", "endEvent", "Manager notified"),
        ("Ref_po", "dataObjectReference", "Purchase order", {"dataObjectRef": "Obj_po"}),
        ("Ref_so", "dataObjectReference", "Sales order", {"dataObjectRef": "Obj_so"}),
        ("Ref_inv", "dataObjectReference", "Invoice", {"dataObjectRef": "Obj_inv"}),
        ("Ref_erp", "dataStoreReference", "ERP", {}),
    ]
    flows = [("OF1", "O_start", "O_enter"), ("OF2", "O_enter", "O_credit"), ("OF3", "O_credit", "O_ok"),
             ("OF4", "O_ok", "O_reject", "no", "${!creditOk}"), ("OF5", "O_ok", "O_ship", "yes"),
             ("OF6", "O_ship", "O_invoice"), ("OF7", "O_invoice", "O_merge"), ("OF8", "O_merge", "O_wait"),
             ("OF9", "O_wait", "O_paid"), ("OF10", "O_wait", "O_late"), ("OF11", "O_late", "O_remind"),
             ("OF12", "O_remind", "O_third"),
             ("OF17", "O_third", "O_collect", "yes"), ("OF18", "O_third", "O_merge", "no"), ("OF13", "O_paid", "O_apply"), ("OF14", "O_apply", "O_end"),
             ("OF15", "O_col_timer", "O_notify"), ("OF16", "O_notify", "O_end2")]
    lanes = [("Lane_sales", "Sales rep", ["O_start", "O_enter", "O_reject"]),
             ("Lane_credit", "Credit analyst", ["O_credit", "O_ok"]),
             ("Lane_wh", "Warehouse", ["O_ship"]),
             ("Lane_ar", "AR clerk", ["O_invoice", "O_wait", "O_paid", "O_late", "O_remind", "O_third", "O_merge", "O_collect",
                                      "O_col_timer", "O_notify", "O_apply", "O_end", "O_end2"])]
    p = proc("Process_o2c", "Order to cash", company, flows, lanes,
             [("Obj_po", "Purchase order"), ("Obj_so", "Sales order"), ("Obj_inv", "Invoice")])
    customer = [("C_start", "startEvent", "Need goods"), ("C_order", "sendTask", "Place order"),
                ("C_pay", "sendTask", "Pay invoice"), ("C_end", "endEvent", "Paid")]
    c = proc("Process_customer", "Customer", customer, [("CF1", "C_start", "C_order"), ("CF2", "C_order", "C_pay"),
                                                       ("CF3", "C_pay", "C_end")], lane(customer, "Buyer"))
    write("order_to_cash", [p, c], pools=[("Pool_company", "Order to cash", "Process_o2c"), ("Pool_customer", "Customer", "Process_customer")],
          messages=[("MF1", "C_order", "O_start", "purchase order"), ("MF2", "O_invoice", "C_pay", "invoice"),
                    ("MF3", "C_pay", "O_paid", "payment")])


BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
_FLOW_FIRST = {"sequenceFlow": 0, "association": 1}


def plain(xml: bytes) -> bytes:
    """The same model as another tool writes it: the BPMN namespace as the default one (no
    prefix), no ``incoming``/``outgoing`` lists, no diagram interchange, no extension attributes,
    sequence flows before the nodes they join, nodes in reverse order, lane sets last and the
    collaboration after the processes; references that the schema types as QNames (processRef,
    attachedToRef, a message flow's ends) written with a prefix, event definitions global and
    named by eventDefinitionRef, booleans as 1 / 0."""
    root = ET.fromstring(xml)
    for el in root.iter():
        for key in [k for k in el.attrib if k.startswith("{")]:
            del el.attrib[key]
        local = el.tag.rsplit("}", 1)[1]
        for key in ("processRef", "attachedToRef") + (("sourceRef", "targetRef") if local == "messageFlow" else ()):
            if el.get(key):
                el.set(key, f"tns:{el.get(key)}")
        for key in ("cancelActivity", "triggeredByEvent", "isForCompensation", "isExecutable"):
            if el.get(key) in ("true", "false"):
                el.set(key, "1" if el.get(key) == "true" else "0")
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag.endswith("EventDefinition") and parent is not root:
                parent.remove(child)
                root.insert(0, child)
                ET.SubElement(parent, f"{{{BPMN}}}eventDefinitionRef").text = child.get("id")
    root.set("exporter", "another modeling tool")
    for parent in list(root.iter()):
        kids = list(parent)
        keep = [k for k in kids if k.tag.startswith(f"{{{BPMN}}}") and k.tag.rsplit("}", 1)[1] not in ("incoming", "outgoing")]
        if parent is root:
            keep.sort(key=lambda k: k.tag.endswith("collaboration"))
        elif parent.tag.rsplit("}", 1)[1] in ("process", "subProcess", "adHocSubProcess", "transaction"):
            where = {id(k): i for i, k in enumerate(keep)}

            def rank(k):
                local = k.tag.rsplit("}", 1)[1]
                return (_FLOW_FIRST.get(local, 3 if local == "laneSet" else 2), -where[id(k)])
            keep.sort(key=rank)
        for k in kids:
            parent.remove(k)
        parent.extend(keep)
    for el in root.iter():  # every element is in the BPMN namespace now: declare it once, as the default
        el.tag = el.tag.rsplit("}", 1)[1]
    root.set("xmlns", BPMN)
    root.set("xmlns:tns", root.get("targetNamespace"))
    ET.indent(root, space="\t")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_plain(name):
    (HERE / "serialisations").mkdir(exist_ok=True)
    (HERE / "serialisations" / f"{name}_plain.bpmn").write_bytes(plain((HERE / f"{name}.bpmn").read_bytes()))


if __name__ == "__main__":
    main()
    write_plain("order_to_cash")
