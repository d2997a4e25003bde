#!/usr/bin/env python3
"""Writes tests/chat/fixtures/: chat templates, conversations, and what transformers' apply_chat_template
machinery (render_jinja_template, jinja2 3.1) renders for each, for tests/chat/test_chat_templates.c.

Templates: llama.cpp's models/templates/*.jinja (the templates real models ship) for the families named in
POPULAR, plus the tokenizer.chat_template embedded in llama.cpp's vocabulary GGUFs (named gguf-NAME);
all others are rendered too and only counted (--all prints the tally without writing them).
Conversations: CONVS below (system prompt, multi-turn, tool calls with tools, thinking, content parts),
each with add_generation_prompt on and off, and enable_thinking unset / false / true where the template
reads it. strftime_now is pinned to NOW (UTC) on both sides so fixtures do not depend on the date.

Manifest line: case TEMPLATE CONV TOOLS|- FLAGS EXPECTED|!CLASS [MESSAGE]
  FLAGS: g = add_generation_prompt, t/T = enable_thinking false/true (absent: not passed)
  !CLASS: jinja2 raised instead of rendering; CLASS is the exception's class (TemplateError: the template
  called raise_exception, MESSAGE is what it said; TypeError; UndefinedError), which our error must match
usage: scripts/gen_chat_fixtures.py [--templates DIR] [--out DIR] [--all]
"""
import argparse
import datetime
import json
import os
import shutil
import sys

TEMPLATES = ".cache/llamacpp/src-0.3.36/vendor/llama.cpp/models/templates"
NOW = 1767225600  # 2026-01-01 00:00:00 UTC
BOS, EOS = "<s>", "</s>"
POPULAR = [
    "Qwen3.5-4B", "Qwen-Qwen3-0.6B", "Qwen-Qwen2.5-7B-Instruct", "Qwen-QwQ-32B", "Qwen3-Coder",
    "meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct", "meta-llama-Llama-3.3-70B-Instruct",
    "google-gemma-2-2b-it", "google-gemma-4-31B-it",
    "Mistral-Small-3.2-24B-Instruct-2506", "mistralai-Mistral-Nemo-Instruct-2407",
    "deepseek-ai-DeepSeek-V3.1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "microsoft-Phi-3.5-mini-instruct", "HuggingFaceTB-SmolLM3-3B",
]

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}]

CONVS = {
    "system": [{"role": "system", "content": "You are a helpful assistant."},
               {"role": "user", "content": "Hello! What's 2+2?"}],
    "multiturn": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "Hello, how can I help?"},
                  {"role": "user", "content": "Name a prime ≥ 10 — and say “why”.\nTwo lines."}],
    "nosystem": [{"role": "user", "content": "  Tell me a joke.  "}],
    "tools": [{"role": "system", "content": "You can call tools."},
              {"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": "",
               "tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
              {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 18}"},
              {"role": "assistant", "content": "It is 18°C in Paris."},
              {"role": "user", "content": "Thanks"}],
    "thinking": [{"role": "user", "content": "What is 17*3?"},
                 {"role": "assistant", "content": "51", "reasoning_content": "17*3 = 51."},
                 {"role": "user", "content": "And 17*4?"}],
    "parts": [{"role": "system", "content": [{"type": "text", "text": "System in parts."}]},
              {"role": "user", "content": [{"type": "text", "text": "Part one."}, {"type": "text", "text": "Part two."}]}],
}


def render(tmpl, conv, tools, gen, thinking):
    from transformers.utils import chat_template_utils as ctu
    kwargs = {"bos_token": BOS, "eos_token": EOS}
    if thinking is not None:
        kwargs["enable_thinking"] = thinking
    env_tmpl = ctu._compile_jinja_template(tmpl)
    env_tmpl.globals["strftime_now"] = lambda fmt: datetime.datetime.fromtimestamp(NOW, datetime.timezone.utc).strftime(fmt)
    out = ctu.render_jinja_template(conversations=[conv], tools=tools, chat_template=tmpl,
                                    add_generation_prompt=gen, **kwargs)
    return out[0][0] if isinstance(out, tuple) else out[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--templates", default=TEMPLATES)
    ap.add_argument("--out", default="tests/chat/fixtures")
    ap.add_argument("--all", action="store_true", help="also render every other template (tally only)")
    ap.add_argument("--every", action="store_true", help="write fixtures for every template (use with --out)")
    ap.add_argument("--gguf-dir", default=os.path.join(os.path.dirname(TEMPLATES), ""),
                    help="also take tokenizer.chat_template from the ggml-vocab-*.gguf files here (as gguf-NAME)")
    a = ap.parse_args()
    names = sorted(n[:-6] for n in os.listdir(a.templates) if n.endswith(".jinja"))
    # templates embedded in llama.cpp's vocabulary GGUFs (real models' files): extracted to a temp dir
    extra_dir = None
    if a.gguf_dir and os.path.isdir(a.gguf_dir):
        import tempfile
        from gguf import GGUFReader
        extra_dir = tempfile.mkdtemp()
        for g in sorted(os.listdir(a.gguf_dir)):
            if not (g.startswith("ggml-vocab-") and g.endswith(".gguf")):
                continue
            try:
                f = GGUFReader(os.path.join(a.gguf_dir, g)).fields.get("tokenizer.chat_template")
            except Exception:
                continue
            if f is None:
                continue
            name = "gguf-" + g[len("ggml-vocab-"):-len(".gguf")]
            open(os.path.join(extra_dir, name + ".jinja"), "w", encoding="utf-8").write(bytes(f.parts[f.data[0]]).decode())
            names.append(name)
            POPULAR.append(name)
    chosen = [n for n in names if n in POPULAR or a.every]
    missing = set(POPULAR) - set(names)
    if missing:
        print("missing templates:", missing, file=sys.stderr)
    os.makedirs(os.path.join(a.out, "templates"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "conv"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "expected"), exist_ok=True)
    for cname, conv in CONVS.items():
        json.dump(conv, open(os.path.join(a.out, "conv", cname + ".json"), "w"), ensure_ascii=False, indent=1)
    json.dump(TOOLS, open(os.path.join(a.out, "conv", "functions.json"), "w"), indent=1)
    lines, n_ok, n_err = [], 0, 0
    for name in (names if a.all else chosen):
        src = os.path.join(extra_dir if name.startswith("gguf-") else a.templates, name + ".jinja")
        tmpl = open(src, encoding="utf-8").read()
        write = name in chosen
        if write:
            shutil.copy(src, os.path.join(a.out, "templates", name + ".jinja"))
        variants = [None, False, True] if "enable_thinking" in tmpl else [None]
        for cname, conv in CONVS.items():
            tools = TOOLS if cname == "tools" else None
            for gen in (False, True):
                for th in variants:
                    flags = ("g" if gen else "") + ({None: "", False: "t", True: "T"}[th])
                    case = f"{name}.{cname}.{flags or '-'}"
                    try:
                        text = render(tmpl, json.loads(json.dumps(conv)), tools, gen, th)
                        exp = case + ".txt"
                        if write:
                            open(os.path.join(a.out, "expected", exp), "w", encoding="utf-8", newline="").write(text)
                        n_ok += 1
                    except Exception as ex:  # the template refuses this conversation: we must refuse too
                        exp = "!" + type(ex).__name__
                        if type(ex).__name__ == "TemplateError":  # raise_exception: its message, on one line
                            exp += " " + " ".join(str(ex).split())
                        n_err += 1
                        if not write:
                            print(f"  {case}: jinja2 raised {type(ex).__name__}: {str(ex)[:80]}", file=sys.stderr)
                    if write:
                        lines.append(f"case {name} {cname} {'tools' if tools else '-'} {flags or '-'} {exp}\n")
    if lines:
        open(os.path.join(a.out, "manifest.txt"), "w").writelines(lines)
    print(f"{len(chosen)} templates written, {len(lines)} cases ({n_ok} rendered, {n_err} raised by jinja2)")


if __name__ == "__main__":
    main()
