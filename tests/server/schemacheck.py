"""What the structured-output tests share: the schema corpus (fixtures/schemas.json) and a jsonschema
validator per schema, formats checked. The jsonschema package leaves some formats unchecked without extra
packages (rfc3339-validator, isoduration, fqdn): those are checked here by the standard library and the
RFCs' grammars."""
import datetime
import importlib.metadata
import ipaddress
import json
import os
import re

import jsonschema

CORPUS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "schemas.json")
CORPUS = json.load(open(CORPUS_PATH, encoding="utf-8"))
VERSION = "jsonschema " + importlib.metadata.version("jsonschema")
FORMATS = jsonschema.FormatChecker()


def _rfc3339(pattern, parse):
    """A checker: s must match the RFC 3339 pattern, then parse (Z read as +00:00)."""
    def check_(s):
        if not re.fullmatch(pattern, s):
            raise ValueError(s)
        parse(s.replace("Z", "+00:00"))
        return True
    return check_


FORMATS.checks("date-time", raises=ValueError)(
    _rfc3339(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", datetime.datetime.fromisoformat))
FORMATS.checks("time", raises=ValueError)(
    _rfc3339(r"\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", datetime.time.fromisoformat))


@FORMATS.checks("duration")
def _duration(s):  # RFC 3339 appendix A
    return re.fullmatch(r"P(\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?"
                        r"|PT(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|P\d+W", s) is not None


@FORMATS.checks("hostname")
def _hostname(s):  # RFC 1123
    return len(s) <= 253 and all(re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", p) for p in s.split("."))


@FORMATS.checks("ipv6", raises=ValueError)
def _ipv6(s):
    return ipaddress.IPv6Address(s) is not None


_validators = {}


def errors(schema, doc):
    """The validation errors of doc against schema (a list of messages; empty: valid)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _validators:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validators[key] = cls(schema, format_checker=FORMATS)
    return [e.message for e in _validators[key].iter_errors(doc)]
