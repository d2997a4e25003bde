#!/usr/bin/env python3
"""Writes the 20 code-editing prompts of the speculative decoding measurement (docs/benchmarks.md,
"Speculative decoding"), one JSON string per line, each a ChatML conversation ready for
`llm170 infer --prompt` (Qwen2.5-Coder-Instruct's template, no system prompt beyond the default).
Answers to these repeat much of the prompt (the code with small edits): where n-gram drafting pays."""
import json
import sys

CODE = [
    ("python", "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n\n\ndef variance(xs):\n    m = mean(xs)\n    total = 0\n    for x in xs:\n        total += (x - m) ** 2\n    return total / len(xs)\n"),
    ("python", "def parse_line(line):\n    parts = line.strip().split(',')\n    name = parts[0]\n    age = int(parts[1])\n    city = parts[2]\n    return {'name': name, 'age': age, 'city': city}\n\n\ndef parse_file(path):\n    rows = []\n    with open(path) as f:\n        for line in f:\n            rows.append(parse_line(line))\n    return rows\n"),
    ("c", "int count_words(const char *s) {\n    int x = 0;\n    int in_word = 0;\n    while (*s) {\n        if (*s == ' ' || *s == '\\n' || *s == '\\t') {\n            in_word = 0;\n        } else if (!in_word) {\n            in_word = 1;\n            x++;\n        }\n        s++;\n    }\n    return x;\n}\n"),
    ("javascript", "function groupBy(items, key) {\n  const x = {};\n  for (const item of items) {\n    const k = item[key];\n    if (!x[k]) {\n      x[k] = [];\n    }\n    x[k].push(item);\n  }\n  return x;\n}\n\nfunction countBy(items, key) {\n  const groups = groupBy(items, key);\n  const out = {};\n  for (const k of Object.keys(groups)) {\n    out[k] = groups[k].length;\n  }\n  return out;\n}\n"),
    ("python", "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n        self.items.append(item)\n\n    def pop(self):\n        return self.items.pop()\n\n    def peek(self):\n        return self.items[-1]\n\n    def is_empty(self):\n        return len(self.items) == 0\n\n    def size(self):\n        return len(self.items)\n"),
    ("python", "def fizzbuzz(n):\n    x = []\n    for i in range(1, n + 1):\n        if i % 15 == 0:\n            x.append('FizzBuzz')\n        elif i % 3 == 0:\n            x.append('Fizz')\n        elif i % 5 == 0:\n            x.append('Buzz')\n        else:\n            x.append(str(i))\n    return x\n"),
    ("c", "static int binary_search(const int *a, int n, int key) {\n    int lo = 0, hi = n - 1;\n    while (lo <= hi) {\n        int mid = (lo + hi) / 2;\n        if (a[mid] == key)\n            return mid;\n        if (a[mid] < key)\n            lo = mid + 1;\n        else\n            hi = mid - 1;\n    }\n    return -1;\n}\n"),
    ("python", "def merge(a, b):\n    out = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n            out.append(b[j])\n            j += 1\n    out.extend(a[i:])\n    out.extend(b[j:])\n    return out\n\n\ndef merge_sort(xs):\n    if len(xs) <= 1:\n        return xs\n    mid = len(xs) // 2\n    return merge(merge_sort(xs[:mid]), merge_sort(xs[mid:]))\n"),
    ("javascript", "async function fetchUsers(api) {\n  const response = await fetch(api + '/users');\n  const data = await response.json();\n  const x = [];\n  for (const user of data) {\n    if (user.active) {\n      x.push({ id: user.id, name: user.name, email: user.email });\n    }\n  }\n  return x;\n}\n"),
    ("python", "import os\n\n\ndef list_files(root, ext):\n    x = []\n    for dirpath, dirnames, filenames in os.walk(root):\n        for name in filenames:\n            if name.endswith(ext):\n                x.append(os.path.join(dirpath, name))\n    return sorted(x)\n\n\ndef total_size(paths):\n    return sum(os.path.getsize(p) for p in paths)\n"),
]

TASKS = [
    "Add docstrings to every function in this {lang} code. Reply with the full code only.",
    "Rename the variable x to count everywhere in this {lang} code. Reply with the full code only.",
    "Add type hints or type annotations where the language allows, and keep everything else unchanged. Reply with the full code only:",
    "Add a short comment above each loop in this {lang} code explaining what it does. Reply with the full code only.",
]

def main():
    out = []
    for i in range(20):
        lang, code = CODE[i % len(CODE)]
        task = TASKS[(i // len(CODE)) * 2 + (i % 2)].format(lang=lang)
        user = f"{task}\n\n```{lang}\n{code}```"
        out.append("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                   f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
    for p in out:
        sys.stdout.write(json.dumps(p) + "\n")

if __name__ == "__main__":
    main()
