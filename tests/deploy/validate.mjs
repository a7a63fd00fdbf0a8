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
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const MODULES = join(dirname(fileURLToPath(import.meta.url)), "node_modules");

// apiVersion's group -> the package module that holds its models.
const GROUPS = {
	"": "kubernetes-models",
	"monitoring.coreos.com": "@kubernetes-models/prometheus-operator/monitoring.coreos.com",
};

// [the model's class, its .d.ts], or null for a kind no package has.
async function model(apiVersion, kind) {
	const slash = apiVersion.lastIndexOf("/");
	const group = slash < 0 ? "" : apiVersion.slice(0, slash);
	const version = apiVersion.slice(slash + 1);
	const base = GROUPS[group] ?? (group.includes(".") ? null : `kubernetes-models/${group}`);
	if (!base || !/^[A-Za-z0-9]+$/.test(kind) || !/^v[0-9a-z]+$/.test(version))
		return null;
	const spec = `${base}/${version}/${kind}`;
	try {
		const Model = (await import(spec))[kind];
		return Model ? [Model, join(MODULES, spec + ".d.ts")] : null;
	} catch {
		return null;
	}
}

// Fields the schemas do not know. Their compiled validators accept any
// extra property, where the API server's strict field validation refuses
// it, so the field names are read from the packages' type declarations
// (one .d.ts per model: `"name"?: Type;` lines, Type a model it imports,
// Array<Model>, a map or a leaf). An inline object type is not descended.
const declarations = new Map(); // .d.ts path -> { fields: Map(name -> type), imports } or null

function declaration(dts) {
	if (declarations.has(dts)) return declarations.get(dts);
	let decl = null;
	const text = existsSync(dts) ? readFileSync(dts, "utf8") : "";
	const body = /^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}/m.exec(text);
	if (body) {
		const imports = new Map();
		for (const [, name, spec] of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";/gm))
			imports.set(name, spec.startsWith(".") ? join(dirname(dts), spec) : join(MODULES, spec));
		const fields = new Map();
		for (const [, name, type] of body[1].matchAll(/^ {4}"([^"]+)"\??: (.*?);?$/gm))
			fields.set(name, type);
		decl = { fields, imports };
	}
	declarations.set(dts, decl);
	return decl;
}

function unknownFields(obj, dts, path, out) {
	const decl = declaration(dts);
	if (!decl || obj === null || typeof obj !== "object" || Array.isArray(obj)) return;
	for (const [key, value] of Object.entries(obj)) {
		const type = decl.fields.get(key);
		if (type === undefined) {
			out.push(`${path}/${key} is not a field of ${dts.slice(MODULES.length + 1, -5)}`);
			continue;
		}
		const [, element] = /^Array<(\w+)>$/.exec(type) ?? [];
		const model = decl.imports.get(element ?? type);
		if (!model) continue; // a leaf, a map or an inline object
		const items = element ? (Array.isArray(value) ? value : []) : [value];
		items.forEach((v, i) => unknownFields(v, model + ".d.ts", `${path}/${key}${element ? "/" + i : ""}`, out));
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
	const found = await model(obj.apiVersion, kind);
	if (!found) return [`${where} (${kind} ${name}): no schema for ${obj.apiVersion} ${kind}`];
	const [Model, dts] = found;
	try {
		new Model(obj).validate();
	} catch (e) {
		const errs = e.errors ?? [{ instancePath: "", message: e.message }];
		return errs.map((x) => `${where} (${kind} ${name}): ${x.instancePath || "/"} ${x.message}`);
	}
	const unknown = [];
	unknownFields(obj, dts, "", unknown);
	if (unknown.length) return unknown.map((u) => `${where} (${kind} ${name}): ${u}`);
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
