"""Bad input gets Confluent's documented error codes, seen by Confluent's Python client
(SchemaRegistryError's http_status_code and error_code) and by raw HTTP (urllib).

    python3 errors_check.py BOOTSTRAP REGISTRY_URL WORK_DIR

Subjects `errors-*`. Each check sends the same bad request both ways and wants the same
HTTP status and error_code from each; the raw answer must also be
`application/vnd.schemaregistry.v1+json` with `{"error_code": int, "message": non-empty}`.
Codes (Confluent's `Errors`): 40401 subject not found, 40402 version not found, 40403
schema not found, 40408 no subject-level compatibility, 409 incompatible, 42201 invalid
schema, 42202 invalid version, 42203 invalid compatibility level. Nothing here changes
the global config (a registry that wrongly took a bad level would affect the other
suites), so the bad level is sent to a subject of this suite.
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import common
from common import Checks, CheckFailed, expect, main_guard
from confluent_kafka.schema_registry import Schema, SchemaReference

bootstrap, url, work = common.args()
checks = Checks("registry")
SUBJECT = "errors-order-value"
NO_SUBJECT = "errors-no-such-subject"
NO_ID = 987654
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

BAD_AVRO = json.dumps({"type": "record", "name": "Bad", "namespace": "com.example",
                       "fields": [{"name": "x", "type": "nosuchtype"}]})
BAD_PROTOBUF = 'syntax = "proto3";\npackage com.example;\nmessage Bad {\n  nosuchtype x = 1;\n}\n'
BAD_JSON_SCHEMA = json.dumps({"type": "nosuchtype"})
# An Avro record using a named type that only a reference could supply.
PRICED = json.dumps({"type": "record", "name": "Priced", "namespace": "com.example",
                     "fields": [{"name": "price", "type": "com.example.Money"}]})


def http(method, path, body=None):
    """(status, parsed JSON body, content type) of one raw request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={
        "Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=common.T) as response:
            status, raw, ctype = response.status, response.read(), response.headers.get(
                "Content-Type", "")
    except urllib.error.HTTPError as e:
        status, raw, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        raise CheckFailed("%s %s: HTTP %d with a body that is not JSON: %r" % (
            method, path, status, raw[:200]))
    return status, parsed, ctype


def raw_error(method, path, body, status, code):
    got_status, parsed, ctype = http(method, path, body)
    what = "%s %s" % (method, path)
    if not isinstance(parsed, dict) or not isinstance(parsed.get("error_code"), int):
        raise CheckFailed("%s: HTTP %d %r, expected an error body with error_code %d" % (
            what, got_status, parsed, code))
    got = (got_status, parsed["error_code"])
    if got != (status, code):
        raise CheckFailed("%s: got HTTP %d error_code %d (%r), expected HTTP %d error_code %d" % (
            what, got[0], got[1], parsed.get("message"), status, code))
    if not isinstance(parsed.get("message"), str) or not parsed["message"]:
        raise CheckFailed("%s: no message in %r" % (what, parsed))
    if not ctype.startswith(CONTENT_TYPE):
        raise CheckFailed("%s: Content-Type %r, expected %s" % (what, ctype, CONTENT_TYPE))


def quoted(subject):
    return urllib.parse.quote(subject, safe="")


def client():
    return common.registry_client(url)


def setup():
    schema_id = client().register_schema(SUBJECT, Schema(common.ORDER_V1, "AVRO"))
    expect(client().get_versions(SUBJECT), [1], "versions of %s" % SUBJECT)
    if schema_id <= 0:
        raise CheckFailed("id %d" % schema_id)


def case(status, code, python_call, method, path, body=None):
    """A check: the Python client's call and the raw request both fail with (status, code)."""
    def run():
        if python_call is not None:
            common.expect_error(python_call, status, code, "SchemaRegistryClient")
        raw_error(method, path, body, status, code)
    return run


def register_case(schema, schema_type, subject="errors-bad-value", references=None):
    refs = references or []
    body = {"schema": schema, "schemaType": schema_type,
            "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                           for r in refs]}
    return case(422, 42201,
                lambda: client().register_schema(subject, Schema(schema, schema_type, refs)),
                "POST", "/subjects/%s/versions" % quoted(subject), body)


def not_registered_afterwards():
    for subject in ("errors-bad-value", "errors-ref-value"):
        common.expect_error(lambda: client().get_versions(subject), 404, 40401,
                            "versions of %s after the refused registrations" % subject)


def bad_level_unchanged():
    common.expect_error(lambda: client().get_compatibility(SUBJECT), 404, 40408,
                        "GET /config/%s after the refused levels" % SUBJECT)
    expect(client().get_compatibility(), "BACKWARD", "the global level")


def body():
    ready = "errors: register Order v1 under %s (for the cases below)" % SUBJECT
    checks.run(ready, setup)
    cases = [
        ("invalid Avro schema (an unknown type) -> 422 / 42201",
         register_case(BAD_AVRO, "AVRO")),
        ("invalid Avro schema (not JSON) -> 422 / 42201",
         register_case("{not json", "AVRO")),
        ("invalid Protobuf schema (an unknown field type) -> 422 / 42201",
         register_case(BAD_PROTOBUF, "PROTOBUF")),
        ("invalid JSON Schema (an unknown type) -> 422 / 42201",
         register_case(BAD_JSON_SCHEMA, "JSON")),
        ("an unknown schemaType (XML) -> 422 / 42201",
         register_case(common.ORDER_V1, "XML")),
        ("a reference to an unknown subject -> 422 / 42201",
         register_case(PRICED, "AVRO", "errors-ref-value",
                       [SchemaReference("com.example.Money", NO_SUBJECT, 1)])),
        ("a reference to an unknown version -> 422 / 42201",
         register_case(PRICED, "AVRO", "errors-ref-value",
                       [SchemaReference("com.example.Money", SUBJECT, 7)])),
        ("an unknown subject -> 404 / 40401 (latest version, versions, lookup)",
         lambda: [case(404, 40401, lambda: client().get_latest_version(NO_SUBJECT),
                       "GET", "/subjects/%s/versions/latest" % NO_SUBJECT)(),
                  case(404, 40401, lambda: client().get_versions(NO_SUBJECT),
                       "GET", "/subjects/%s/versions" % NO_SUBJECT)(),
                  case(404, 40401, lambda: client().lookup_schema(
                      NO_SUBJECT, Schema(common.ORDER_V1, "AVRO")),
                      "POST", "/subjects/%s" % NO_SUBJECT, {"schema": common.ORDER_V1})()]),
        ("an unknown version of a subject -> 404 / 40402",
         case(404, 40402, lambda: client().get_version(SUBJECT, 99),
              "GET", "/subjects/%s/versions/99" % SUBJECT)),
        ("an unknown schema id -> 404 / 40403",
         case(404, 40403, lambda: client().get_schema(NO_ID), "GET", "/schemas/ids/%d" % NO_ID)),
        ("a schema not registered under the subject (lookup) -> 404 / 40403",
         case(404, 40403, lambda: client().lookup_schema(SUBJECT, Schema('"string"', "AVRO")),
              "POST", "/subjects/%s" % SUBJECT, {"schema": '"string"'})),
        ("an unknown compatibility level (SIDEWAYS) -> 422 / 42203",
         case(422, 42203, lambda: client().set_compatibility(SUBJECT, "SIDEWAYS"),
              "PUT", "/config/%s" % SUBJECT, {"compatibility": "SIDEWAYS"})),
        ("invalid version ids (0, -2, abc, 2^31) -> 422 / 42202",
         lambda: [case(422, 42202, lambda: client().get_version(SUBJECT, 0),
                       "GET", "/subjects/%s/versions/0" % SUBJECT)(),
                  case(422, 42202, lambda: client().get_version(SUBJECT, -2),
                       "GET", "/subjects/%s/versions/-2" % SUBJECT)(),
                  case(422, 42202, None, "GET", "/subjects/%s/versions/abc" % SUBJECT)(),
                  case(422, 42202, None, "GET", "/subjects/%s/versions/2147483648" % SUBJECT)()]),
    ]
    for name, run in cases:
        checks.run("errors: " + name, run, deps=[ready])
    checks.run("errors: the refused registrations left no subject behind", not_registered_afterwards,
               deps=[ready])
    checks.run("errors: the refused level left the subject without one (40408), global BACKWARD",
               bad_level_unchanged, deps=[ready])


if __name__ == "__main__":
    sys.exit(main_guard(checks, body))
