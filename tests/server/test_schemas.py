"""Structured output on a random-weight model: a corpus of JSON schemas (our own, and the examples of
OpenAI's structured-outputs guide in the supported subset) through response_format, at temperature 0 and
1, whole and streamed: every reply must parse and validate. A random model's logits favour no JSON at
all, so every token is the mask's work. Forced tool calls (tool_choice required / named) must come back
as valid calls in both APIs. Unsupported schema features are 400s naming the keyword.

Validation: the jsonschema package where installed, else the small validator below (the subset only)."""
import importlib.metadata
import json
import os

import anthropic
import openai

from srvtest import check, run  # noqa: E402

try:
    import jsonschema

    def validate(schema, doc):
        jsonschema.validate(doc, schema)
        return True
    VALIDATOR = "jsonschema " + importlib.metadata.version("jsonschema")
except ImportError:
    def validate(schema, doc):  # the supported subset
        if "const" in schema:
            return doc == schema["const"]
        if "enum" in schema:
            return doc in schema["enum"]
        t = schema.get("type")
        ok = {"string": lambda: isinstance(doc, str), "integer": lambda: isinstance(doc, int) and doc is not True
              and doc is not False, "number": lambda: isinstance(doc, (int, float)) and not isinstance(doc, bool),
              "boolean": lambda: isinstance(doc, bool), "null": lambda: doc is None,
              "array": lambda: isinstance(doc, list) and all(validate(schema.get("items", {}), x) for x in doc),
              "object": lambda: isinstance(doc, dict) and all(k in doc for k in schema.get("required", [])) and
              all(validate(schema.get("properties", {}).get(k, {}), v) for k, v in doc.items()) and
              (schema.get("additionalProperties", True) or set(doc) <= set(schema.get("properties", {})))}
        return ok[t]() if t else True
    VALIDATOR = "the built-in subset validator"

URL = os.environ["LLM170_URL"]
# under ASan (cli_server.sh sets this) every mask costs ~50x more: a smaller corpus at one temperature
SLOW = os.environ.get("LLM170_SLOW") == "1"
KEY = os.environ["LLM170_KEY"]
MODEL = os.environ["LLM170_MODEL"]
oai = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0, timeout=300)
ant = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0, timeout=300)


def obj(props, required=None, extra=False):
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": extra}


S, I, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
CORPUS = {
    # OpenAI's guide: chain of thought for math tutoring
    "math_reasoning": obj({"steps": {"type": "array", "items": obj({"explanation": S, "output": S})},
                           "final_answer": S}),
    # OpenAI's guide: structured data extraction from research papers
    "research_paper": obj({"title": S, "authors": {"type": "array", "items": S}, "abstract": S,
                           "keywords": {"type": "array", "items": S}}),
    # OpenAI's guide: moderation (its "type": ["string", "null"] category written as an enum with null)
    "moderation": obj({"is_violating": B, "category": {"enum": ["violence", "sexual", "self_harm", None]},
                       "explanation_if_violating": S}),
    # OpenAI's guide: the calendar event of the quickstart
    "calendar_event": obj({"name": S, "date": S, "participants": {"type": "array", "items": S}}),
    # OpenAI's guide: the weather function's parameters with an enum unit
    "weather": obj({"location": S, "unit": {"type": "string", "enum": ["F", "C"]}}),
    # ours
    "person": obj({"name": S, "age": I, "email": S}, required=["name", "age"]),
    "nested": obj({"meta": obj({"id": I, "tags": {"type": "array", "items": S}}), "score": N, "ok": B,
                   "nothing": {"type": "null"}}),
    "enum_numbers": obj({"level": {"enum": [1, 2, 3, 10]}, "ratio": N, "label": {"const": "fixed"}}),
    "matrix": obj({"rows": {"type": "array", "items": {"type": "array", "items": I}}}),
    "optional_only": obj({"a": S, "b": I}, required=[]),
    "free_form": {"type": "object"},
    "empty_strict": obj({}),
}
UNSUPPORTED = [("anyOf", obj({"x": {"anyOf": [S, I]}})), ("$ref", obj({"x": {"$ref": "#/$defs/y"}})),
               ("pattern", obj({"x": {"type": "string", "pattern": "^a"}})),
               ("type lists", obj({"x": {"type": ["string", "null"]}})), ("root", {"type": "array", "items": S})]


if SLOW:
    CORPUS = {k: CORPUS[k] for k in ("math_reasoning", "moderation")}
TEMPERATURES = (1,) if SLOW else (0, 1)
MAX_TOKENS = 80 if SLOW else 120  # above the longest shortest-completion (moderation: 67 bytes)


def reply(schema, temperature, stream):
    rf = {"type": "json_schema", "json_schema": {"name": "t", "schema": schema, "strict": True}} if schema else \
        {"type": "json_object"}
    kw = dict(model=MODEL, messages=[{"role": "user", "content": "Answer in JSON."}], temperature=temperature,
              max_tokens=MAX_TOKENS, response_format=rf, seed=7)
    if not stream:
        r = oai.chat.completions.create(**kw)
        return r.choices[0].message.content, r.choices[0].finish_reason
    text, finish = "", None
    for c in oai.chat.completions.create(stream=True, **kw):
        for ch in c.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return text, finish


def test_corpus():
    counts = {}
    for temperature in TEMPERATURES:
        n_ok = 0
        for name, schema in list(CORPUS.items()) + [("json_object", None)]:
            for stream in (False, True):
                text, finish = reply(schema, temperature, stream)
                try:
                    doc = json.loads(text)
                except ValueError:
                    doc = None
                good = isinstance(doc, dict) and (schema is None or validate(schema, doc))
                check(good, f"{name} t={temperature} stream={stream}: {text!r} ({finish})")
                n_ok += good
        counts[temperature] = n_ok
    n = 2 * (len(CORPUS) + 1)
    print(f"  schema corpus: {len(CORPUS) + 1} schemas x (whole, streamed): " +
          ", ".join(f"{counts[t]}/{n} valid at temperature {t}" for t in TEMPERATURES) + f" ({VALIDATOR})")
    for what, schema in UNSUPPORTED:
        try:
            reply(schema, 0, False)
            check(False, f"unsupported {what} accepted")
        except openai.BadRequestError as e:
            check(what.split()[0] in str(e) or "root" in str(e), f"400 names {what}: {e}")


def test_forced_tool_calls():
    params = obj({"city": S, "days": I})
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": params}},
             {"type": "function", "function": {"name": "noop", "parameters": obj({})}}]
    msgs = [{"role": "user", "content": "forecast please"}]
    for tc in ({"type": "function", "function": {"name": "forecast"}}, "required"):
        for temperature in TEMPERATURES:
            r = oai.chat.completions.create(model=MODEL, messages=msgs, tools=tools, tool_choice=tc,
                                            max_tokens=MAX_TOKENS, temperature=temperature)
            m = r.choices[0].message
            check(r.choices[0].finish_reason == "tool_calls" and m.tool_calls, f"forced {tc}: {m}")
            call = m.tool_calls[0]
            args = json.loads(call.function.arguments)
            check(call.function.name in ("forecast", "noop"), f"a declared name: {call}")
            if tc != "required":
                check(call.function.name == "forecast" and validate(params, args), f"named call's arguments {args}")
    content, calls, finish = "", {}, None
    for c in oai.chat.completions.create(model=MODEL, messages=msgs, tools=tools, max_tokens=MAX_TOKENS, stream=True,
                                         tool_choice={"type": "function", "function": {"name": "forecast"}}):
        for ch in c.choices:
            for tc in ch.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.finish_reason or finish
    check(finish == "tool_calls" and calls[0]["name"] == "forecast" and validate(params, json.loads(calls[0]["arguments"])),
          f"streamed forced call {calls}")
    atools = [{"name": "forecast", "input_schema": params}]
    m = ant.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=msgs, tools=atools,
                            tool_choice={"type": "tool", "name": "forecast"})
    use = [b for b in m.content if b.type == "tool_use"]
    check(m.stop_reason == "tool_use" and use and validate(params, use[0].input), f"anthropic forced call {m}")
    with ant.messages.stream(model=MODEL, max_tokens=MAX_TOKENS, messages=msgs, tools=atools,
                             tool_choice={"type": "any"}) as st:
        final = st.get_final_message()
    use = [b for b in final.content if b.type == "tool_use"]
    check(final.stop_reason == "tool_use" and use and use[0].name == "forecast", f"anthropic streamed forced {final}")


run("test_schemas", [test_corpus, test_forced_tool_calls])
