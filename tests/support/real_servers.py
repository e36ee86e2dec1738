"""Real model servers on 127.0.0.1 for tests: llama-cpp-python's OpenAI-compatible server running
a small GGUF model (Gemma 3 270M), and a LiteLLM proxy speaking the Anthropic wire in front of it.

Both live in their own virtual environments, outside Dexter's dependencies, prepared by
`scripts/prepare_real_servers.sh` (which `.ci/run` calls wherever the prebuilt llama-cpp-python
wheel is at hand). The script exports where they are (`DEXTER_TEST_LLAMA_PYTHON`,
`DEXTER_TEST_GGUF`, `DEXTER_TEST_LITELLM`); without those variables its default cache folder is
looked in, so a developer who ran it once can just run pytest.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREPARE_SCRIPT = "scripts/prepare_real_servers.sh"
# The window the server runs the model at: small, so that an over-long prompt is cheap to make,
# and large enough for Dexter's system prompt with a few tools.
N_CTX = 8192
# The name Dexter asks for; llama-cpp-python lists the model under this alias.
LLAMA_MODEL = "gemma-3-270m"
# The model group the LiteLLM proxy offers, routed to the llama server.
LITELLM_MODEL = "gemma"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
# Loading the 253 MB model takes 2-3 s and LiteLLM's imports 12-20 s on a quiet machine; both
# take several times longer next to a busy test run. Past this, a server is broken, not slow.
START_DEADLINE = 240.0


@dataclass(frozen=True)
class Tools:
    """Where the prepared environments are; None for what is missing."""

    llama_python: Path | None
    gguf: Path | None
    litellm: Path | None

    def llama_missing(self) -> str | None:
        """Why the llama.cpp server cannot run here, or None when it can."""
        if self.llama_python is None:
            return (
                "llama-cpp-python's server is not prepared (no DEXTER_TEST_LLAMA_PYTHON): run "
                f"{PREPARE_SCRIPT} (needs its prebuilt wheel, see the script)"
            )
        if self.gguf is None:
            return f"the GGUF model is not assembled (no DEXTER_TEST_GGUF): run {PREPARE_SCRIPT}"
        return None

    def litellm_missing(self) -> str | None:
        return self.llama_missing() or (
            None
            if self.litellm is not None
            else f"LiteLLM's proxy is not prepared (no DEXTER_TEST_LITELLM): run {PREPARE_SCRIPT}"
        )


def _existing(path: str | Path | None) -> Path | None:
    if not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_file() else None


def find_tools(environ: Mapping[str, str]) -> Tools:
    """The prepared tools named by the environment, else those in the script's cache folder."""
    cache = Path(
        environ.get("DEXTER_TEST_TOOLS")
        or Path(environ.get("XDG_CACHE_HOME") or Path(environ.get("HOME", "~")) / ".cache")
        / "dexter-test-tools"
    ).expanduser()
    return Tools(
        llama_python=_existing(
            environ.get("DEXTER_TEST_LLAMA_PYTHON") or cache / "llama" / "bin" / "python"
        ),
        gguf=_existing(environ.get("DEXTER_TEST_GGUF") or cache / "models" / MODEL_FILE),
        litellm=_existing(
            environ.get("DEXTER_TEST_LITELLM") or cache / "litellm" / "bin" / "litellm"
        ),
    )


# Read once, at import: the suite's autouse fixture removes DEXTER_* variables inside each test
# and points HOME at a temporary folder.
TOOLS = find_tools(os.environ)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _quiet_environment(home: Path, **extra: str) -> dict[str, str]:
    """A server's environment: no keys or endpoints of the developer's, a home of its own."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(HOME=str(home), NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(extra)
    return env


@dataclass
class ServerProcess:
    """One server started by a test session; `stop` ends it and what it started."""

    name: str
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path
    ready_path: str
    headers: Mapping[str, str]

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, deadline: float = START_DEADLINE) -> float:
        """Poll the server until it answers `ready_path`; the seconds it took to become ready.

        Fails at once, with the end of the server's log, when the process exits."""
        started = time.monotonic()
        request = urllib.request.Request(
            self.base_url + self.ready_path, headers=dict(self.headers)
        )
        while True:
            code = self.process.poll()
            if code is not None:
                hint = ""
                if code == -signal.SIGILL:
                    hint = (
                        " (illegal instruction: the prebuilt wheel needs this machine's CPU "
                        "features; see ../shared/wheels/README.md to rebuild it)"
                    )
                raise RuntimeError(
                    f"{self.name} exited with status {code} before it was ready{hint}:\n"
                    + self.log_tail()
                )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() - started > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.name} was not ready after {deadline:.0f} s:\n" + self.log_tail()
                )
            # The process is starting; ask again shortly (it says nothing we could wait on).
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        # Its own process group: uvicorn's workers go with it.
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)


def _spawn(
    name: str,
    argv: list[str],
    *,
    workdir: Path,
    env: dict[str, str],
    port: int,
    ready_path: str,
    headers: Mapping[str, str] | None = None,
) -> ServerProcess:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ServerProcess(
        name, process, f"http://127.0.0.1:{port}", log, ready_path, dict(headers or {})
    )


def start_llama(tools: Tools, workdir: Path) -> ServerProcess:
    """Start llama-cpp-python's server on a free port (not yet ready: see `wait_ready`).

    `chatml-function-calling`: the GGUF has no chat template of its own, and this format is
    the one of llama-cpp-python's that passes tools (see ../shared/wheels/README.md)."""
    assert tools.llama_python is not None and tools.gguf is not None
    port = free_port()
    argv = [
        str(tools.llama_python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(tools.gguf),
        "--model_alias",
        LLAMA_MODEL,
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        str(N_CTX),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    home = workdir / "llama-home"
    home.mkdir(exist_ok=True)
    return _spawn(
        "llama-cpp-python server",
        argv,
        workdir=workdir,
        # Its threads sleep while they wait for each other instead of spinning: the other test
        # worker has the other core, and two spinning threads with one core between them take
        # several times the CPU for the same prompt.
        env=_quiet_environment(home, OMP_WAIT_POLICY="PASSIVE"),
        port=port,
        ready_path="/v1/models",
    )


# What a user of LiteLLM in front of an OpenAI-compatible local server writes (with the window
# the upstream runs the model at, which LiteLLM then states at /model/info). Without
# use_chat_completions_url_for_anthropic_messages, LiteLLM 1.106 sends /v1/messages for an
# `openai/` model to the Responses API (POST /v1/responses), which local servers lack.
LITELLM_CONFIG = """\
model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{upstream_model}
      api_base: {upstream}/v1
      api_key: none
    model_info:
      max_input_tokens: {window}
litellm_settings:
  use_chat_completions_url_for_anthropic_messages: true
"""

# LiteLLM fetches price lists and presets from the internet at start unless told to use the
# copies it ships; tests reach nothing beyond 127.0.0.1.
_LITELLM_OFFLINE = {
    name: "True"
    for name in (
        "LITELLM_LOCAL_MODEL_COST_MAP",
        "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
        "LITELLM_LOCAL_BLOG_POSTS",
        "LITELLM_LOCAL_AUTOROUTER_PRESETS",
        "LITELLM_LOCAL_POLICY_TEMPLATES",
    )
}


def start_litellm(tools: Tools, workdir: Path, upstream: str) -> tuple[ServerProcess, str]:
    """Start a LiteLLM proxy for `upstream` (a llama server's base URL) on a free port; returns it
    with the proxy's key. LiteLLM refuses to start without a master key, so clients send one."""
    assert tools.litellm is not None
    port = free_port()
    key = "sk-test-" + secrets.token_hex(16)
    config = workdir / "litellm.yaml"
    config.write_text(
        LITELLM_CONFIG.format(
            model=LITELLM_MODEL, upstream_model=LLAMA_MODEL, upstream=upstream, window=N_CTX
        )
    )
    home = workdir / "litellm-home"
    home.mkdir(exist_ok=True)
    argv = [
        str(tools.litellm),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--telemetry",
        "False",
    ]
    env = _quiet_environment(home, LITELLM_MASTER_KEY=key, **_LITELLM_OFFLINE)
    server = _spawn(
        "LiteLLM proxy",
        argv,
        workdir=workdir,
        env=env,
        port=port,
        ready_path="/v1/models",
        headers={"Authorization": f"Bearer {key}"},
    )
    return server, key
