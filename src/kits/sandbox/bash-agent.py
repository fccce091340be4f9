"""A plain bash agent: the smallest harness Clotho ships (Python's standard library only).

Usage: python3 bash-agent.py <max steps> <task>. It reads OPENAI_BASE_URL and OPENAI_MODEL, speaks mini-swe-agent's
text protocol (one fenced bash block per reply; `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` to finish), runs each
command in the working folder and answers with its return code and output. Exits 0 when it submits, 3 when its steps
run out, and with the model's error (1) when the session refuses a call.
"""

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

SYSTEM = (
    "You are a helpful assistant that can interact with a computer. Your response must contain exactly ONE bash code "
    "block with ONE command (or commands connected with && or ||), after a THOUGHT section. When you are done, run "
    "`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` alone."
)
ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def ask(messages):
    body = json.dumps({"model": os.environ.get("OPENAI_MODEL", "policy"), "messages": messages}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=body,
        headers={"content-type": "application/json", "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)["choices"][0]["message"]["content"] or ""


def main():
    max_steps, task = int(sys.argv[1]), sys.argv[2]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    for _ in range(max_steps):
        try:
            reply = ask(messages)
        except urllib.error.HTTPError as error:
            print(f"the model's session refused the call: {error.code} {error.read().decode()}", file=sys.stderr)
            return 1
        messages.append({"role": "assistant", "content": reply})
        actions = ACTION.findall(reply)
        if len(actions) != 1:
            messages.append({"role": "user", "content": f"Format error: found {len(actions)} bash blocks, expected exactly one."})
            continue
        command = actions[0]
        if command.strip().startswith("echo " + SUBMIT):
            return 0
        try:
            done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
            observation = f"<returncode>{done.returncode}</returncode>\n<output>\n{done.stdout}{done.stderr}</output>"
        except subprocess.TimeoutExpired:
            observation = "<returncode>-1</returncode>\n<output>\nthe command timed out after 30 s\n</output>"
        messages.append({"role": "user", "content": observation})
    return 3


if __name__ == "__main__":
    sys.exit(main())
