"""Tool calls through the official SDKs against a real model (Qwen2.5-Coder-0.5B-Instruct), the full loop:
the model calls the tool, the tool's result goes back in the history (rendered by the model's own
template), and the model answers with it. Both APIs, streamed and not; tool_choice auto, required, a
named function and none. Run by tests/server/cli_server_tools.sh with LLM170_URL. Greedy decoding; what
is checked is what this 0.5B coder model does with one obvious tool: call it with the city, then answer
with the result's temperature (it echoes the call first, so the final check is on the text, which must not
parse as a call, and the figure)."""
import json
import os

import anthropic
import openai

from srvtest import check, run  # noqa: E402

URL = os.environ["LLM170_URL"]
oai = openai.OpenAI(base_url=URL + "/v1", api_key="none", max_retries=0, timeout=600)
ant = anthropic.Anthropic(base_url=URL, api_key="none", max_retries=0, timeout=600)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OAI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
                                               "parameters": SCHEMA}}]
ANT_TOOLS = [{"name": "get_weather", "description": "Get the current weather in a city", "input_schema": SCHEMA}]
ASK = "What is the weather in Paris?"
RESULT = '{"temperature": "24 C", "sky": "sunny"}'


def oai_stream(**kw):
    """Assembles a streamed chat answer the way SDK users do: content, and tool calls by index."""
    content, calls, finish = "", {}, None
    for c in oai.chat.completions.create(stream=True, **kw):
        for ch in c.choices:
            content += ch.delta.content or ""
            for tc in ch.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = ch.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def test_openai_loop():
    msgs = [{"role": "user", "content": ASK}]
    kw = dict(model="any", tools=OAI_TOOLS, temperature=0, max_tokens=64)
    r = oai.chat.completions.create(messages=msgs, **kw)
    m = r.choices[0].message
    check(r.choices[0].finish_reason == "tool_calls" and m.tool_calls, f"a tool call: {m}")
    call = m.tool_calls[0]
    args = json.loads(call.function.arguments)
    check(call.function.name == "get_weather" and "paris" in args.get("city", "").lower(), f"call {call}")
    check(call.id.startswith("call_") and call.type == "function", f"call id/type {call}")
    content, calls, finish = oai_stream(messages=msgs, **kw)
    check(finish == "tool_calls" and len(calls) == 1 and calls[0]["name"] == "get_weather", f"streamed {calls}")
    check(json.loads(calls[0]["arguments"]) == args and calls[0]["id"], f"streamed arguments {calls}")
    print(f"  openai: {call.function.name}({call.function.arguments})")
    msgs += [m.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": RESULT}]
    r = oai.chat.completions.create(messages=msgs, **kw)
    text = r.choices[0].message.content or ""
    check(r.choices[0].finish_reason in ("stop", "length") and "24" in text, f"final answer uses the result: {text!r}")
    print(f"  openai final: {text!r}")


def test_openai_choice():
    msgs = [{"role": "user", "content": ASK}]
    kw = dict(model="any", tools=OAI_TOOLS, temperature=0, max_tokens=64)
    for tc in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        r = oai.chat.completions.create(messages=msgs, tool_choice=tc, **kw)
        m = r.choices[0].message
        check(m.tool_calls and m.tool_calls[0].function.name == "get_weather", f"tool_choice {tc}: {m}")
        _, calls, finish = oai_stream(messages=msgs, tool_choice=tc, **kw)
        check(finish == "tool_calls" and calls and calls[0]["name"] == "get_weather", f"streamed {tc}: {calls}")
    r = oai.chat.completions.create(messages=msgs, tool_choice="none", **{**kw, "max_tokens": 16})
    check(not r.choices[0].message.tool_calls and r.choices[0].message.content, "tool_choice none: text")


def test_anthropic_loop():
    msgs = [{"role": "user", "content": ASK}]
    kw = dict(model="any", tools=ANT_TOOLS, max_tokens=64, extra_body={"temperature": 0})
    m = ant.messages.create(messages=msgs, **kw)
    uses = [b for b in m.content if b.type == "tool_use"]
    check(m.stop_reason == "tool_use" and len(uses) == 1, f"a tool_use block: {m}")
    check(uses[0].name == "get_weather" and "paris" in uses[0].input.get("city", "").lower(), f"tool_use {uses[0]}")
    with ant.messages.stream(messages=msgs, **kw) as st:
        final = st.get_final_message()
    suses = [b for b in final.content if b.type == "tool_use"]
    check(final.stop_reason == "tool_use" and suses and suses[0].input == uses[0].input, f"streamed {final}")
    print(f"  anthropic: {uses[0].name}({uses[0].input})")
    msgs += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": RESULT}]}]
    m = ant.messages.create(messages=msgs, **kw)
    text = "".join(b.text for b in m.content if b.type == "text")
    check(m.stop_reason in ("end_turn", "max_tokens") and "24" in text, f"final answer uses the result: {text!r}")
    print(f"  anthropic final: {text!r}")
    m = ant.messages.create(messages=msgs[:1], tool_choice={"type": "tool", "name": "get_weather"}, **kw)
    check(m.stop_reason == "tool_use", f"tool_choice tool: {m}")


run("test_tools", [test_openai_loop, test_openai_choice, test_anthropic_loop])
