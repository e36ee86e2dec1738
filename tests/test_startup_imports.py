"""What a scripted `dexter ask` loads: only what its run uses.

Offering a tool must not import what only running it needs (HTML parsers for `web_fetch`, the
cron runner, the SEC document parsers, numpy for memory that is off). The run happens in a fresh
interpreter, so `sys.modules` at its end is exactly what the command imported.

The default `ask` (memory on, as users run it) recalls what it remembers into the prompt and
offers the memory tools, but loads the vector stack (numpy, the embedding model) only when a
search needs it; and a proxy set in the environment, or TLS, costs nothing for a model server
reached directly over plain http.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from dexter.cli import process
from tests.support.wire_server import WireServer, sse
from tests.test_cli import USAGE_CHUNK, chunk

# Imported only by the code that needs them; none of it runs in a calculate-only answer.
NOT_ON_THE_ASK_PATH = [
    "yaml",  # skills whose frontmatter is written plainly, as the bundled ones are
    "numpy",  # memory's index and similarity checks (memory is off here)
    "lxml",  # web_fetch's extraction
    "readability",
    "markdownify",
    "bs4",
    "logging.handlers",  # the log file, opened by the first record (none here)
    "dexter.memory.index",
    "dexter.memory.flush",
    "dexter.cron.runner",  # the cron tool's `run` action
    "dexter.cron.store",  # the cron tools' job store and schedule rules, when one runs
    "dexter.cron.schedule",
    "dexter.data.sec.facts",  # SEC parsers, imported by the provider method that uses each
    "dexter.data.sec.filing_docs",
    "dexter.data.sec.documents",
]

# Also not on a default ask's path, memory on: recall into the prompt needs none of them.
NOT_ON_THE_DEFAULT_ASK_PATH = [
    "numpy",  # vectors: loaded by the first memory search that has an embedder
    "onnxruntime",  # the local embedding model
    "tokenizers",
    "dexter.memory.flush",  # runs before a compaction, never in a short answer
    "rich.live",  # the spinner, on a terminal only (this run writes to a pipe)
    "rich.spinner",
    "rich.table",
]

SCRIPT = """
import json, sys
from dexter.cli.main import main
code = main(["ask", "--model", "openai:gpt-test", "What is 150 * 1.1?"])
from dexter import httpclient
print(json.dumps({
    "code": code,
    "loaded": [m for m in sys.argv[1:] if m in sys.modules],
    "tls_contexts": httpclient.shared_tls_context.cache_info().currsize,
}))
"""


def _script_calculate(wire_server: WireServer) -> None:
    call = {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "calculate",
                    "arguments": json.dumps({"operation": "evaluate", "expression": "150 * 1.1"}),
                },
            }
        ]
    }
    wire_server.push(
        sse([chunk(call), chunk({}, "tool_calls"), USAGE_CHUNK]),
        sse([chunk({"content": "It is 165."}), chunk({}, "stop"), USAGE_CHUNK]),
    )


def test_a_scripted_ask_imports_only_what_it_runs(tmp_path: Path, wire_server: WireServer) -> None:
    _script_calculate(wire_server)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEXTER_")}
    env |= {
        "DEXTER_HOME": str(tmp_path / "home"),
        "DEXTER_MEMORY": "off",
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": wire_server.url + "/v1",
    }
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *NOT_ON_THE_ASK_PATH],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    *answer, report = result.stdout.strip().splitlines()
    outcome = json.loads(report)
    assert outcome["code"] == 0, result.stderr
    assert answer == ["It is 165."]
    assert "calculate" in result.stderr  # the tool really ran
    assert outcome["loaded"] == []


def test_a_default_ask_recalls_memory_without_the_vector_stack_proxies_or_tls(
    tmp_path: Path, wire_server: WireServer
) -> None:
    home = tmp_path / "home"
    (home / "memory").mkdir(parents=True)
    (home / "memory" / "MEMORY.md").write_text(
        "## Preferences\n- Wants answers as short bullet points.\n", encoding="utf-8"
    )
    _script_calculate(wire_server)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEXTER_")}
    env |= {
        "DEXTER_HOME": str(home),
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": wire_server.url + "/v1",
        # A corporate machine's proxies, with the local server exempt: never used, never built.
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    modules = [*NOT_ON_THE_ASK_PATH, *NOT_ON_THE_DEFAULT_ASK_PATH]
    modules.remove("dexter.memory.index")  # memory is on: its index is there, closed
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *dict.fromkeys(modules)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    *answer, report = result.stdout.strip().splitlines()
    outcome = json.loads(report)
    assert outcome["code"] == 0, result.stderr
    assert answer == ["It is 165."]
    system = json.dumps(wire_server.requests[0].json()["messages"][0])
    assert "short bullet points" in system  # memory was on: recalled into the prompt
    tools = {t["function"]["name"] for t in wire_server.requests[0].json()["tools"]}
    assert "memory_search" in tools
    assert outcome["loaded"] == []
    assert outcome["tls_contexts"] == 0  # plain http to the model server: no TLS set up


def test_collection_resumes_once_and_only_after_the_process_paused_it() -> None:
    frozen = gc.get_freeze_count()
    process.resume()  # in-process callers (tests, embedders) never paused: nothing changes
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    try:
        process.pause()
        assert not gc.isenabled()
        process.resume()
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen  # start-up's objects are out of later collections
        process.resume()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


# `dexter --help` imports every command's parser; none of them may pull in the machinery their
# commands run on (a module-level `import asyncio` alone cost 25 ms of a 50 ms budget).
NOT_ON_THE_HELP_PATH = [
    "asyncio",
    "ssl",
    "h11",
    "httpcore",
    "pydantic",
    "rich.console",
    "numpy",
    "dataclasses",
]

HELP_SCRIPT = """
import json, sys
from dexter.cli.main import main
try:
    main(["--help"])
except SystemExit:
    pass
print(json.dumps([m for m in sys.argv[1:] if m in sys.modules]))
"""


def test_help_imports_no_command_machinery() -> None:
    result = subprocess.run(
        [sys.executable, "-c", HELP_SCRIPT, *NOT_ON_THE_HELP_PATH],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert json.loads(result.stdout.splitlines()[-1]) == []
