#!/usr/bin/env node
// Lints BPMN files with bpmnlint's recommended rules and prints one JSON object:
// {"version": "...", "files": {path: {"reports": [{rule, id, message, category}], "warnings": [...], "error": null}}}.
// The bpmnlint CLI prints a table only; the comparison test needs the rule and element of each report.
const { readFile } = require('node:fs/promises');
const { BpmnModdle } = require('bpmn-moddle');
const Linter = require('bpmnlint/lib/linter');
const NodeResolver = require('bpmnlint/lib/resolver/node-resolver');

async function lintFile(path, moddle) {
  // a new linter per file: some rules keep state between the diagrams one linter sees
  const linter = new Linter({ config: { extends: 'bpmnlint:recommended' }, resolver: new NodeResolver() });
  const xml = await readFile(path, 'utf-8');
  let root, warnings = [];
  try {
    const parsed = await moddle.fromXML(xml);
    root = parsed.rootElement;
    warnings = (parsed.warnings || []).map(w => ({ id: w.element && w.element.id, message: w.message.split(/\n/)[0] }));
  } catch (error) {
    return { reports: [], warnings: [], error: error.message };
  }
  const results = await linter.lint(root);
  const reports = [];
  for (const [rule, found] of Object.entries(results)) {
    for (const r of found) {
      reports.push({ rule: r.name || rule, id: r.id || null, message: r.message, category: r.category });
    }
  }
  return { reports, warnings, error: null };
}

async function main() {
  const moddle = new BpmnModdle();
  const out = { version: require('bpmnlint/package.json').version, files: {} };
  for (const path of process.argv.slice(2)) {
    out.files[path] = await lintFile(path, moddle);
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch(err => { console.error(err && err.stack || err); process.exit(2); });
