"""Structured output through the server on a random-weight model (whose unconstrained output is no JSON
at all, so every token is the mask's work): every schema of the corpus (tests/server/fixtures/schemas.json:
OpenAI's structured-outputs examples and ours, anyOf/oneOf, $ref recursion, patterns, formats, bounds)
through response_format, at temperature 0 and at temperature 1 over several seeds, whole and streamed:
every reply must be closed, parse and validate (the jsonschema package, formats checked). Each unsupported
schema of the corpus is a 400 naming what is unsupported. Forced tool calls (tool_choice required / named)
must come back as valid calls in both APIs, with each tool's parameters (its own $defs) enforced."""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai

from schemacheck import CORPUS, VERSION, errors
from srvtest import check, run

URL = os.environ["LLM170_URL"]
# under ASan (cli_server.sh sets this) every mask costs ~50x more: a smaller corpus, one seed
SLOW = os.environ.get("LLM170_SLOW") == "1"
KEY = os.environ["LLM170_KEY"]
MODEL = os.environ["LLM170_MODEL"]
oai = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0, timeout=600)
ant = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0, timeout=600)

SCHEMAS = dict(CORPUS["valid"])
SCHEMAS["json_object"] = None
if SLOW:
    SCHEMAS = {k: SCHEMAS[k] for k in ("oai_math_reasoning", "oai_linked_list", "discriminated_oneof", "patterns")}
# (temperature, seed) runs per schema, alternately whole and streamed
RUNS = [(0, 1), (0, 1)] + [(1, seed) for seed in range(1, 2 if SLOW else 5)]
MAX_TOKENS = 600  # above the longest shortest completion in this model's tokens (the synth vocabulary is
                  # mostly single bytes; patterns': ~210)


def obj(props, required=None):
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": False}


S, I = {"type": "string"}, {"type": "integer"}


def reply(schema, temperature, seed, stream, max_tokens=MAX_TOKENS):
    rf = {"type": "json_schema", "json_schema": {"name": "t", "schema": schema, "strict": True}} if schema else \
        {"type": "json_object"}
    kw = dict(model=MODEL, messages=[{"role": "user", "content": "Answer in JSON."}], temperature=temperature,
              max_tokens=max_tokens, response_format=rf, seed=seed)
    if not stream:
        r = oai.chat.completions.create(**kw)
        return r.choices[0].message.content, r.choices[0].finish_reason
    text, finish = "", None
    for c in oai.chat.completions.create(stream=True, **kw):
        for ch in c.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return text, finish


def one(job):
    name, k, (temperature, seed) = job
    schema = SCHEMAS[name]
    text, finish = reply(schema, temperature, seed, stream=k % 2 == 1)
    try:
        doc = json.loads(text)
    except ValueError:
        return temperature, f"{name} t={temperature} seed={seed}: not JSON ({finish}): {text!r}"
    bad = ["not an object"] if not isinstance(doc, dict) else errors(schema, doc) if schema else []
    if finish != "stop" or bad:
        return temperature, f"{name} t={temperature} seed={seed} stream={k % 2}: {finish}, {bad}: {text!r}"
    return temperature, None


def test_corpus():
    jobs = [(name, k, run_) for name in SCHEMAS for k, run_ in enumerate(RUNS)]
    with ThreadPoolExecutor(8) as pool:  # the server's slots: requests batch as they would in use
        results = list(pool.map(one, jobs))
    for _, failure in results:
        check(failure is None, failure)
    n = {t: sum(1 for r in RUNS if r[0] == t) * len(SCHEMAS) for t in (0, 1)}
    ok = {t: sum(1 for tt, f in results if tt == t and f is None) for t in (0, 1)}
    print(f"  schema corpus: {len(SCHEMAS)} schemas, whole and streamed: {ok[0]}/{n[0]} valid at temperature 0, "
          f"{ok[1]}/{n[1]} at temperature 1 ({len(RUNS) - 2} seeds) ({VERSION})")


def test_refused():
    for case in CORPUS["refused"]:
        try:
            reply(case["schema"], 0, 1, False, max_tokens=8)
            check(False, f"unsupported schema accepted: {json.dumps(case['schema'])[:200]}")
        except openai.BadRequestError as e:
            check(case["mentions"] in str(e), f"400 names {case['mentions']!r}: {e}")
    print(f"  {len(CORPUS['refused'])} unsupported schemas: 400 naming the construct")


def test_forced_tool_calls():
    params = obj({"city": S, "days": {"type": "integer", "minimum": 1, "maximum": 14}})
    # a second tool whose $refs resolve inside its own parameters
    alert = {"type": "object", "$defs": {"level": {"enum": ["low", "high"]}},
             "properties": {"level": {"$ref": "#/$defs/level"}, "note": {"anyOf": [S, {"type": "null"}]}},
             "required": ["level", "note"], "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": params}},
             {"type": "function", "function": {"name": "alert", "parameters": alert}}]
    by_name = {"forecast": params, "alert": alert}
    msgs = [{"role": "user", "content": "forecast please"}]
    names = set()
    for tc in ({"type": "function", "function": {"name": "forecast"}}, "required"):
        for temperature, seed in RUNS[1:]:
            r = oai.chat.completions.create(model=MODEL, messages=msgs, tools=tools, tool_choice=tc, seed=seed,
                                            max_tokens=MAX_TOKENS, temperature=temperature)
            m = r.choices[0].message
            check(r.choices[0].finish_reason == "tool_calls" and m.tool_calls, f"forced {tc}: {m}")
            call = m.tool_calls[0]
            args = json.loads(call.function.arguments)
            check(call.function.name in by_name and not errors(by_name[call.function.name], args),
                  f"a declared tool with valid arguments: {call}")
            if tc != "required":
                check(call.function.name == "forecast", f"the named tool: {call}")
            else:
                names.add(call.function.name)
    print(f"  tool_choice required: called {sorted(names)}")
    content, calls, finish = "", {}, None
    for c in oai.chat.completions.create(model=MODEL, messages=msgs, tools=tools, max_tokens=MAX_TOKENS, stream=True,
                                         tool_choice={"type": "function", "function": {"name": "forecast"}}):
        for ch in c.choices:
            for tc in ch.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.finish_reason or finish
    check(finish == "tool_calls" and calls[0]["name"] == "forecast" and not errors(params, json.loads(calls[0]["arguments"])),
          f"streamed forced call {calls}")
    atools = [{"name": "forecast", "input_schema": params}]
    m = ant.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=msgs, tools=atools,
                            tool_choice={"type": "tool", "name": "forecast"})
    use = [b for b in m.content if b.type == "tool_use"]
    check(m.stop_reason == "tool_use" and use and not errors(params, use[0].input), f"anthropic forced call {m}")
    with ant.messages.stream(model=MODEL, max_tokens=MAX_TOKENS, messages=msgs, tools=atools,
                             tool_choice={"type": "any"}) as st:
        final = st.get_final_message()
    use = [b for b in final.content if b.type == "tool_use"]
    check(final.stop_reason == "tool_use" and use and use[0].name == "forecast", f"anthropic streamed forced {final}")


run("test_schemas", [test_corpus, test_refused, test_forced_tool_calls])
