"""What a scripted `dexter ask` loads: only what its run uses.

Offering a tool must not import what only running it needs (HTML parsers for `web_fetch`, the
cron runner, the SEC document parsers, numpy for memory that is off). The run happens in a fresh
interpreter, so `sys.modules` at its end is exactly what the command imported.
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

SCRIPT = """
import json, sys
from dexter.cli.main import main
code = main(["ask", "--model", "openai:gpt-test", "What is 150 * 1.1?"])
print(json.dumps({"code": code, "loaded": [m for m in sys.argv[1:] if m in sys.modules]}))
"""


def test_a_scripted_ask_imports_only_what_it_runs(tmp_path: Path, wire_server: WireServer) -> None:
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
