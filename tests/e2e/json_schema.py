#!/usr/bin/python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Validate sluice's --json output against its schema in docs/schema/.

usage: json_schema.py SCHEMA.json < OUTPUT

OUTPUT holds one JSON object per line. Each must be valid against the
schema (draft 2020-12), and strictly so: every member it has must be one
the schema describes (the published schemas allow unknown members, so a
newer sluice's added members do not break an older script's validation;
here an undocumented member fails). Prints one line; exits 1 on the first
object that fails, naming the path of what is wrong.
"""
import copy
import json
import sys

import jsonschema


def strict(schema):
    """@schema with additionalProperties false on every object it describes."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        kind = schema.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
        if is_object and "properties" in schema:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return copy.deepcopy(schema)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(strict(schema))
    n = 0
    for n, line in enumerate(sys.stdin, 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"line {n}: not JSON: {e}: {line.strip()[:200]}")
        err = jsonschema.exceptions.best_match(validator.iter_errors(obj))
        if err:
            where = "/".join(str(p) for p in err.absolute_path) or "(the object)"
            sys.exit(f"line {n}: {where}: {err.message}")
    if not n:
        sys.exit("no output to validate")
    print(f"{n} object{'s' if n > 1 else ''} valid against {sys.argv[1]}")


if __name__ == "__main__":
    main()
