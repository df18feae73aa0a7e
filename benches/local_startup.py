"""Startup before/after local-server detection (issue 15), two builds run alternately so load
drift hits both alike. Usage:

    BEFORE=path/to/old/coding-agent AFTER=target/release/coding-agent \
    MOCK=target/release/mock-llm python3 benches/local_startup.py 60
"""
import json, os, statistics, subprocess, sys, tempfile, time
mock = os.environ.get("MOCK", "target/release/mock-llm")
scripts = tempfile.mkdtemp()
s1_replies = []
for _ in range(1000):
    s1_replies.append({"tool_calls": [{"name": "bash", "arguments": {"command": "echo hello"}}]})
    s1_replies.append({"text": "It printed hello."})
json.dump({"replies": s1_replies}, open(os.path.join(scripts, "s1.json"), "w"))
json.dump({"replies": [{"text": "Hello."}] * 1000}, open(os.path.join(scripts, "hi.json"), "w"))
def serve(script, extra=()):
    p = subprocess.Popen([mock, "--script", script, *extra], stdout=subprocess.PIPE, text=True)
    return p, p.stdout.readline().strip().split()[-1]
base_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("CODING_AGENT") and k != "OLLAMA_HOST"}
N = int(sys.argv[1])
def scenario(name, builds, args, env_extra, script, expect=0, emulate=(), config=None):
    p, url = serve(script, emulate)
    setups = []
    for label, binary in builds:
        home = tempfile.mkdtemp(); work = tempfile.mkdtemp()
        if config:
            open(os.path.join(home, "config.toml"), "w").write(config.replace("URL", url))
        env = dict(base_env, CODING_AGENT_HOME=home, **{k: v.replace("ORIGIN", url[:-3]) for k, v in env_extra.items()})
        setups.append((label, binary, env, work, []))
    for _ in range(N):
        for label, binary, env, work, times in setups:
            t = time.perf_counter()
            out = subprocess.run([binary, *[a.replace("URL", url) for a in args]], env=env, cwd=work, capture_output=True, text=True)
            times.append((time.perf_counter() - t) * 1000)
            assert out.returncode == expect, (name, label, out.returncode, out.stderr[-600:])
    p.kill()
    for label, _, _, _, times in setups:
        times.sort()
        print(f"{name:<52} {label:<7} median {statistics.median(times):5.1f} ms  min {times[0]:5.1f}  max {times[-1]:6.1f}", flush=True)
both = [("before", os.environ["BEFORE"]), ("after", os.environ.get("AFTER", "target/release/coding-agent"))]
s1 = ["-p", "run echo hello", "--base-url", "URL", "--model", "bench"]
hosted = '[providers.openai]\nbase_url = "URL"\n'
scenario("S1, key set, no model named (openai via config)", both, ["-p", "run echo hello"], {"OPENAI_API_KEY": "sk-x"}, os.path.join(scripts, "s1.json"), config=hosted)
scenario("S1 as benched (--base-url mock, --model)", both, s1, {}, os.path.join(scripts, "s1.json"))
scenario("S1 as benched + --context-window (no /props)", both[1:], s1 + ["--context-window", "128000"], {}, os.path.join(scripts, "s1.json"))
scenario("no key, no flag: Ollama detected", both[1:], ["-p", "run echo hello"], {"CODING_AGENT_LOCAL_PROBES": "ORIGIN"}, os.path.join(scripts, "s1.json"), emulate=("--emulate", "ollama:qwen3:8b:40960"))
scenario("no key, no flag, nothing listening: exit 2", both, ["-p", "hi"], {}, os.path.join(scripts, "hi.json"), expect=2)
