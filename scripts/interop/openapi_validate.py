"""Validates Accord's served /openapi.json against the OpenAPI 3.1 specification with
openapi-spec-validator (an implementation independent of Accord): the 3.1 meta-schema, the JSON
Schema 2020-12 dialect of every schema, and the document's references. A broken copy of the same
document must fail, so that the check is known to bite.

Usage: openapi_validate.py DOCUMENT.json. Prints one PASS/FAIL line per check; exits non-zero on
any failure.
"""

import copy
import json
import sys

from openapi_spec_validator import OpenAPIV31SpecValidator, validate

failures = 0


def check(name, ok, detail=""):
    global failures
    if ok:
        print(f"PASS openapi-spec {name}")
    else:
        failures += 1
        print(f"FAIL openapi-spec {name}: {detail}")


def errors_of(document):
    try:
        validate(document, cls=OpenAPIV31SpecValidator)
        return None
    except Exception as error:  # the validator's own error types vary by version
        return str(error).splitlines()[0] if str(error) else repr(error)


def main(path):
    with open(path, encoding="utf-8") as file:
        document = json.load(file)
    check("the document says OpenAPI 3.1", str(document.get("openapi", "")).startswith("3.1."), document.get("openapi"))
    error = errors_of(document)
    check("the document validates against OpenAPI 3.1", error is None, error)
    paths = document.get("paths", {})
    check("the document has paths", len(paths) > 0, "no paths")

    # The same document without `info`, with a parameter `in: body` (OpenAPI 2 only), and with a
    # reference to a schema that does not exist: each must be refused.
    broken = copy.deepcopy(document)
    del broken["info"]
    check("a document without info is refused", errors_of(broken) is not None, "accepted")
    broken = copy.deepcopy(document)
    parameter = next(
        parameter
        for item in broken["paths"].values()
        for operation in item.values()
        for parameter in operation.get("parameters", [])
    )
    parameter["in"] = "body"
    check("a parameter in: body is refused", errors_of(broken) is not None, "accepted")
    dangling = copy.deepcopy(document)
    dangling["components"]["schemas"]["Dangling"] = {"$ref": "#/components/schemas/NoSuchSchema"}
    check("a dangling reference is refused", errors_of(dangling) is not None, "accepted")
    return failures


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: openapi_validate.py DOCUMENT.json")
    sys.exit(1 if main(sys.argv[1]) else 0)
