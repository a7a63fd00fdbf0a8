// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Validate Kubernetes manifests offline against the OpenAPI schemas that the
// npm packages kubernetes-models (the core API) and
// @kubernetes-models/prometheus-operator (ServiceMonitor) compile to
// validators. Run by tests/deploy/test_manifests.sh from build/deploy, where
// `npm ci` installed the versions tests/deploy/package-lock.json pins.
//   node validate.mjs FILE...
// Prints one line per problem, "FILE: document N (KIND NAME): PATH MESSAGE",
// and exits 1 if there is any; otherwise prints "ok: FILE: KIND NAME" per
// document and exits 0. A YAML syntax error is a problem of its document.
//   node validate.mjs --json FILE
// Prints the file's documents as one JSON array, for jq.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// apiVersion's group -> the package module that holds its models.
const GROUPS = {
	"": "kubernetes-models",
	"monitoring.coreos.com": "@kubernetes-models/prometheus-operator/monitoring.coreos.com",
};

async function model(apiVersion, kind) {
	const slash = apiVersion.lastIndexOf("/");
	const group = slash < 0 ? "" : apiVersion.slice(0, slash);
	const version = apiVersion.slice(slash + 1);
	const base = GROUPS[group] ?? (group.includes(".") ? null : `kubernetes-models/${group}`);
	if (!base || !/^[A-Za-z0-9]+$/.test(kind) || !/^v[0-9a-z]+$/.test(version))
		return null;
	try {
		return (await import(`${base}/${version}/${kind}`))[kind] ?? null;
	} catch {
		return null;
	}
}

async function check(file, doc, n) {
	const where = `${file}: document ${n}`;
	if (doc.errors.length)
		return doc.errors.map((e) => `${where}: YAML: ${e.message.split("\n")[0]}`);
	const obj = doc.toJS();
	if (obj === null) return []; // an empty document, as after a trailing ---
	const kind = obj.kind, name = obj.metadata?.name;
	if (typeof obj.apiVersion !== "string" || typeof kind !== "string")
		return [`${where}: no apiVersion and kind`];
	const Model = await model(obj.apiVersion, kind);
	if (!Model) return [`${where} (${kind} ${name}): no schema for ${obj.apiVersion} ${kind}`];
	try {
		new Model(obj).validate();
	} catch (e) {
		const errs = e.errors ?? [{ instancePath: "", message: e.message }];
		return errs.map((x) => `${where} (${kind} ${name}): ${x.instancePath || "/"} ${x.message}`);
	}
	console.log(`ok: ${file}: ${kind} ${name}`);
	return [];
}

if (process.argv[2] === "--json") {
	const docs = parseAllDocuments(readFileSync(process.argv[3], "utf8"));
	console.log(JSON.stringify(docs.map((d) => d.toJS()).filter((o) => o !== null)));
	process.exit(0);
}

let problems = 0;
for (const file of process.argv.slice(2)) {
	const docs = parseAllDocuments(readFileSync(file, "utf8"));
	for (const [i, doc] of (Array.isArray(docs) ? docs : [docs]).entries()) {
		for (const p of await check(file, doc, i + 1)) {
			console.log(p);
			problems++;
		}
	}
}
process.exit(problems ? 1 : 0);
