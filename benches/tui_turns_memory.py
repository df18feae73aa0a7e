"""Memory of the inline TUI over a conversation of several long answers (issue 14: nothing may
grow with the length of the conversation beyond the conversation itself). Six turns, each a
100 KB markdown answer (headings, lists, fenced Rust), in a 120x50 pty; prints VmRSS and VmHWM
after each turn. Its own CODING_AGENT_HOME and working directory. Needs pexpect. Usage (ARGS
adds flags, e.g. ARGS=--alt-screen for the alternate screen):

    MOCK=target/release/mock-llm python3 benches/tui_turns_memory.py target/release/coding-agent
"""
import json, os, re, subprocess, sys, tempfile, time

import pexpect

binary = sys.argv[1]
mock = os.environ.get("MOCK", "target/release/mock-llm")


def markdown(size):
    out, i = [], 0
    while sum(map(len, out)) < size:
        out.append(
            f"## Section {i}\n\nThis paragraph explains step {i} with **bold** words, `inline code` "
            f"and a [link](https://example.com/{i}). It goes on long enough to wrap across a couple "
            f"of lines in a normal terminal window.\n\n- first point of {i}\n- second point with "
            f"`code`\n- third point\n\n```rust\nfn step_{i}(x: u32) -> u32 {{\n    x * {i} + 1\n}}\n```\n\n"
        )
        i += 1
    return "".join(out)[:size]


script = os.path.join(tempfile.mkdtemp(), "turns.json")
reply = {"text": markdown(100_000), "chunk_size": 2000, "delay_ms": 1}
json.dump({"replies": [reply] * 6}, open(script, "w"))
server = subprocess.Popen([mock, "--script", script], stdout=subprocess.PIPE, text=True)
url = server.stdout.readline().strip().split()[-1]
env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("CODING_AGENT")}
env.update(CODING_AGENT_HOME=tempfile.mkdtemp(), CODING_AGENT_LOCAL_PROBES="", TERM="xterm-256color")
flags = ["--base-url", f"{url}/v1", "--model", "mock", "--trust"] + os.environ.get("ARGS", "").split()
child = pexpect.spawn(binary, flags,
                      cwd=tempfile.mkdtemp(), env=env, dimensions=(50, 120), encoding="utf-8")
seen = []


def pump(done, limit):
    end = time.time() + limit
    while time.time() < end:
        try:
            seen.append(child.read_nonblocking(65536, timeout=0.1))
        except pexpect.TIMEOUT:
            pass
        if done():
            return


def memory():
    status = open(f"/proc/{child.pid}/status").read()
    return [int(re.search(rf"{k}:\s+(\d+)", status).group(1)) / 1024 for k in ("VmRSS", "VmHWM")]


pump(lambda: "Type a message" in "".join(seen[-20:]), 10)
for turn in range(6):
    seen.clear()
    child.send(f"turn {turn}\r")
    time.sleep(0.5)
    # The editor's hint comes back when the run is over.
    pump(lambda: "Type a message" in "".join(seen[-5:]), 60)
    time.sleep(0.5)
    rss, hwm = memory()
    print(f"after turn {turn + 1}: RSS {rss:.1f} MB, peak {hwm:.1f} MB", flush=True)
child.send("\x04")
child.expect(pexpect.EOF, timeout=10)
server.kill()
