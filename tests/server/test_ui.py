"""The web chat page (GET /) in a real headless browser: Debian's chromium driven by chromedriver over the
W3C WebDriver protocol (plain HTTP+JSON, so no client package). Loads the page, gives it the API key, sends
a message and waits for the streamed answer with its tokens/s line; then starts a long answer and stops it,
and the server must free the slot (the stop cancels the generation). Saves a screenshot where
LLM170_SHOT says. Run by tests/server/cli_server_ui.sh with LLM170_URL, LLM170_KEY, LLM170_DRIVER (the
chromedriver URL)."""
import base64
import json
import os
import time
import urllib.request

from srvtest import check, run  # noqa: E402

URL, KEY, DRIVER = os.environ["LLM170_URL"], os.environ["LLM170_KEY"], os.environ["LLM170_DRIVER"]
SHOT = os.environ.get("LLM170_SHOT")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
session = None


def wd(method, path, body=None):
    """One WebDriver command; returns its value."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(DRIVER + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=180) as r:  # a browser starting on a busy machine is slow
        return json.loads(r.read())["value"]


def find(css):
    v = wd("POST", f"/session/{session}/element", {"using": "css selector", "value": css})
    check(ELEMENT in v, f"element {css}: {v}")
    return v[ELEMENT]


def js(script, *args):
    return wd("POST", f"/session/{session}/execute/sync", {"script": script, "args": list(args)})


def type_into(css, text, clear=True):
    el = find(css)
    if clear:
        wd("POST", f"/session/{session}/element/{el}/clear", {})
    wd("POST", f"/session/{session}/element/{el}/value", {"text": text})


def click(css):
    wd("POST", f"/session/{session}/element/{find(css)}/click", {})


def wait(cond, limit, what):
    t0 = time.time()
    while time.time() - t0 < limit:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    check(False, f"timed out after {limit} s waiting for {what}")


def metric(name):
    req = urllib.request.Request(URL + "/metrics", headers={"Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(req, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])


def last_assistant():
    return js("const m = [...document.querySelectorAll('.msg.assistant')].pop();"
              "return m ? {body: m.querySelector('.body').innerText, stats: m.querySelector('.stats').innerText} : null;")


def test_chat_page():
    global session
    caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,760"]}}}}
    session = wd("POST", "/session", caps)["sessionId"]
    try:
        wd("POST", f"/session/{session}/url", {"url": URL + "/"})
        check(js("return document.title") == "llm170 chat", "the page loads")
        type_into("#key", KEY)
        js("document.getElementById('key').dispatchEvent(new Event('change'))")
        type_into("#temp", "0")
        type_into("#maxtok", os.environ.get("LLM170_FIRST_TOKENS", "12"))
        type_into("#input", "Hello! Write a haiku about the sea.")
        click("#send")
        done = wait(lambda: (lambda m: m if m and "tokens" in m["stats"] else None)(last_assistant()), 300,
                    "the streamed answer")
        check(len(done["body"].strip()) > 0 and "tokens/s" in done["stats"], f"answer and its speed: {done}")
        print(f"  answer streamed: {done['stats']}")
        # a long answer, stopped once it has started
        cancelled = metric("llm170_requests_cancelled_total")
        type_into("#maxtok", "4000")
        type_into("#input", "Tell me a very long story.")
        click("#send")
        wait(lambda: js("return document.querySelectorAll('.msg.assistant').length") == 2 and
             (last_assistant() or {}).get("body", "").strip() and not js(
            "return document.getElementById('stop').disabled"), 120, "the long answer to start")
        click("#stop")
        stopped = wait(lambda: (lambda m: m if m and "stopped" in m["stats"] else None)(last_assistant()), 30,
                       "the stopped answer")
        check("(stopped)" in stopped["stats"], f"stopped: {stopped}")
        wait(lambda: metric("llm170_requests_cancelled_total") == cancelled + 1 and metric("llm170_slots_busy") == 0,
             30, "the server to cancel the stopped generation")
        n_msgs = js("return document.querySelectorAll('.msg').length")
        check(n_msgs == 4, f"4 messages on the page, got {n_msgs}")
        # the conversation survives a reload (kept in the browser)
        wd("POST", f"/session/{session}/refresh", {})
        check(js("return document.querySelectorAll('.msg').length") == 4, "history kept across a reload")
        if SHOT:
            with open(SHOT, "wb") as f:
                f.write(base64.b64decode(wd("GET", f"/session/{session}/screenshot")))
            print(f"  screenshot: {SHOT}")
    finally:
        wd("DELETE", f"/session/{session}")


run("test_ui", [test_chat_page])
