"""The `bash` tool: run a shell command in the workspace, bounded in time and output.

The command runs as `bash -c` in its own session (process group), so a timeout or a cancelled run
stops the command *and* everything it started: SIGTERM to the group, then SIGKILL after a grace
period. Output (stdout and stderr, interleaved) is capped, keeping its head and tail.

Whether a command may run is decided by the permission gate; this tool adds the walls behind it:
- a command the classifier calls read-only (the ones that run unasked) runs in the OS sandbox
  (`dexter.permissions.sandbox`): read-only filesystem and workspace, no network, private /tmp
  and PID namespace, secrets hidden. Approved commands run outside it unless `sandbox_approved`
  (then: workspace writable, protected files still read-only);
- the child's environment is an allowlist (`child_env`), so provider keys never reach it;
- output is scanned for known secret values and redacted before anyone sees it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dexter.permissions.sandbox import Sandbox, SandboxPolicy, available_sandbox
from dexter.permissions.secrets import (
    DEXTER_SECRET_FILES,
    Redactor,
    child_env,
    is_secret_name,
    process_redactor,
)
from dexter.tools.base import (
    READS_ANYTHING,
    TOUCHES_EVERYTHING,
    Resources,
    Tool,
    ToolContext,
    ToolFailure,
    ToolResult,
)
from dexter.tools.fs.paths import display_path, resolve_in_workspace

__all__ = ["BashArgs", "BashTool", "is_secret_name", "scrubbed_env"]

DEFAULT_TIMEOUT_SECONDS = 60.0
MAX_TIMEOUT_SECONDS = 600.0
MAX_OUTPUT_CHARS = 30_000
# Past this much output the command is stopped: only the head and tail would be shown anyway.
MAX_TOTAL_OUTPUT_BYTES = 8 * 1024 * 1024
GRACE_SECONDS = 2.0
_READ_CHUNK = 65_536
_POLL_SECONDS = 0.05
# After a kill, how long to wait for the pipe to close (a process that left the group may hold it).
_DRAIN_SECONDS = 1.0

SandboxChoice = Literal["auto"] | Sandbox | None


def scrubbed_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a command gets: allowlisted variables only (see `child_env`)."""
    return child_env(env)


class BashArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The bash command to run.")
    timeout_seconds: float = Field(
        DEFAULT_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description=f"Stop the command after this many seconds (default "
        f"{DEFAULT_TIMEOUT_SECONDS:g}, at most {MAX_TIMEOUT_SECONDS:g}).",
    )
    cwd: str | None = Field(
        None, description="Directory to run in, relative to the workspace (default: workspace)."
    )


class BashTool(Tool[BashArgs]):
    name: ClassVar[str] = "bash"
    brief: ClassVar[str] = "run a shell command in the workspace"
    description: ClassVar[str] = (
        "Run a bash command in the workspace. Returns its output (stdout and stderr together) "
        "and exit code. Read-only commands (ls, cat, grep, git log …) may run "
        "without asking; anything else needs the user's approval.\n"
        f"Times out after timeout_seconds (default {DEFAULT_TIMEOUT_SECONDS:g}, max "
        f"{MAX_TIMEOUT_SECONDS:g}), stopping the command and its child processes. Output over "
        f"{MAX_OUTPUT_CHARS:,} characters keeps its beginning and end. There is no input "
        "(stdin is empty) and API keys and other secrets are not in the environment. "
        "Commands that run without asking run in a sandbox: read-only files, no network, "
        "secret files hidden, nothing left running afterwards."
    )
    Args: ClassVar[type[BaseModel]] = BashArgs
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = True

    def __init__(
        self,
        workspace: Path | None = None,
        *,
        grace_seconds: float = GRACE_SECONDS,
        sandbox: SandboxChoice = "auto",
        sandbox_approved: bool | None = None,
        hidden: Sequence[Path] = (),
        redactor: Redactor | None = None,
        env: Mapping[str, str] | None = None,
    ):
        """`sandbox`: "auto" finds bubblewrap / sandbox-exec, None runs without one.
        `sandbox_approved`: run approved commands in the sandbox too, with the workspace writable
        (default: the DEXTER_SANDBOX_APPROVED environment variable).
        `hidden`: more secret files to hide (Dexter's settings and database wherever its home is).
        `env`: the environment to pick allowlisted variables from (default: the process's)."""
        self.workspace = (workspace or Path.cwd()).resolve()
        self.grace_seconds = grace_seconds
        self._sandbox = sandbox
        if sandbox_approved is None:
            flag = os.environ.get("DEXTER_SANDBOX_APPROVED", "").strip().lower()
            sandbox_approved = flag in ("1", "true", "yes", "on")
        self.sandbox_approved = sandbox_approved
        home = os.environ.get("DEXTER_HOME", "").strip()
        # Dexter's own secrets and database, wherever DEXTER_HOME puts them.
        own = [Path(home) / name for name in DEXTER_SECRET_FILES] if home else []
        self.hidden = (*own, *hidden)
        self.redactor = redactor if redactor is not None else process_redactor()
        self._env = env

    @property
    def sandbox(self) -> Sandbox | None:
        if self._sandbox == "auto":
            self._sandbox = available_sandbox()
        return self._sandbox

    def _argv(self, command: str, cwd: Path) -> tuple[list[str], str]:
        """The program to start and a label for the sandbox it runs in."""
        from dexter.permissions.classify import command_is_read_only
        from dexter.permissions.shell import parse_command

        argv = ["bash", "-c", command]
        read_only = command_is_read_only(parse_command(command))
        sandbox = self.sandbox
        if sandbox is None or not (read_only or self.sandbox_approved):
            return argv, ""
        policy = SandboxPolicy(
            workspace=self.workspace,
            writable=not read_only,
            network=not read_only,
            home=Path(os.environ["HOME"]) if os.environ.get("HOME") else None,
            hidden=self.hidden,
        )
        label = "sandbox: read-only" if read_only else "sandbox: workspace writable"
        return sandbox.wrap(argv, policy, cwd), label

    def resources(self, args: BashArgs) -> Resources:
        # Ordered against everything unless the permission classifier proves it read-only.
        from dexter.permissions.classify import command_is_read_only
        from dexter.permissions.shell import parse_command

        parsed = parse_command(args.command)
        if parsed.parseable and command_is_read_only(parsed):
            return READS_ANYTHING
        return TOUCHES_EVERYTHING

    async def run(self, args: BashArgs, ctx: ToolContext) -> ToolResult:
        cwd = self.workspace
        if args.cwd is not None and args.cwd.strip() not in ("", "."):
            cwd = resolve_in_workspace(self.workspace, args.cwd)
            if not cwd.is_dir():
                raise ToolFailure(
                    f"cwd {display_path(self.workspace, cwd)} is not a directory in the workspace"
                )
        redact = self.redactor
        ctx.progress(redact(f"$ {args.command}"))
        argv, sandbox_label = self._argv(args.command, cwd)
        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=cwd,
                env=child_env(self._env if self._env is not None else os.environ),
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolFailure(f"could not start bash: {exc.strerror or exc}") from None
        assert process.stdout is not None
        capture = _Capture(MAX_OUTPUT_CHARS // 2, MAX_OUTPUT_CHARS // 2)
        reader = asyncio.create_task(_pump(process.stdout, capture, ctx, redact))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(args.timeout_seconds):
                    await reader
                    if not capture.overflow:
                        await process.wait()
            except TimeoutError:
                timed_out = True
            if timed_out or capture.overflow:
                await _terminate(process, self.grace_seconds)
                # Read to EOF so the pipe closes; output written before the kill is kept.
                await _drain(process.stdout, None if capture.overflow else capture)
        except asyncio.CancelledError:
            reader.cancel()
            _terminate_soon(process.pid, self.grace_seconds)
            raise
        duration = time.monotonic() - started
        result = _result(
            process.returncode, duration, capture, timed_out, args.timeout_seconds, sandbox_label
        )
        return ToolResult(redact(result.content), result.is_error, result.data)


class _Capture:
    """Keeps the first `head` and last `tail` bytes of a stream, and counts the rest."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.overflow = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        if self.total <= self.head_limit + self.tail_limit:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        # Cut at character boundaries: an incomplete tail of the head and the continuation
        # bytes that start the tail are dropped rather than shown as replacement characters.
        head = codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.head))
        tail = bytes(self.tail).lstrip(bytes(range(0x80, 0xC0))).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        return f"{head}\n\n… [{omitted:,} bytes of output omitted] …\n\n{tail}"


async def _pump(
    stream: asyncio.StreamReader, capture: _Capture, ctx: ToolContext, redact: Redactor
) -> None:
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            return
        capture.add(chunk)
        lines = [line for line in chunk.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            ctx.progress(redact(lines[-1])[:120])
        if capture.total > MAX_TOTAL_OUTPUT_BYTES:
            capture.overflow = True
            return


async def _drain(stream: asyncio.StreamReader, capture: _Capture | None) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            while chunk := await stream.read(_READ_CHUNK):
                if capture is not None:
                    capture.add(chunk)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send `sig` to the process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - the group's id was reused by someone else
        return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _terminate(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the whole group; SIGKILL whatever is left after `grace` seconds."""
    pgid = process.pid  # start_new_session makes the child its group's leader
    if _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process.returncode is not None and not _group_alive(pgid):
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), _POLL_SECONDS)
        _signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), grace)


def _terminate_soon(pgid: int, grace: float) -> None:
    """For a cancelled call, which must not wait: SIGTERM now, SIGKILL from a timer thread."""
    if not _signal_group(pgid, signal.SIGTERM):
        return

    def finish() -> None:
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)

    timer = threading.Timer(grace, finish)
    timer.daemon = True
    timer.start()


def _result(
    returncode: int | None,
    duration: float,
    capture: _Capture,
    timed_out: bool,
    timeout: float,
    sandbox_label: str = "",
) -> ToolResult:
    output = capture.text().rstrip("\n") or "(no output)"
    took = f"{duration:.2f} s" + (f" · {sandbox_label}" if sandbox_label else "")
    if timed_out:
        status = f"timed out after {timeout:g} s; the command and its child processes were stopped"
    elif capture.overflow:
        status = (
            f"output passed {MAX_TOTAL_OUTPUT_BYTES // (1024 * 1024)} MiB; the command was stopped"
        )
    elif returncode is not None and returncode < 0:
        status = f"killed by signal {_signal_name(-returncode)}"
    else:
        status = f"exit code {returncode}"
    exit_code = returncode if not (timed_out or capture.overflow) else None
    return ToolResult(
        content=f"{output}\n[{status} · {took}]",
        is_error=exit_code != 0,
        data={
            "exit_code": exit_code,
            "duration_seconds": round(duration, 3),
            "timed_out": timed_out,
            "truncated": capture.total > capture.head_limit + capture.tail_limit,
            "output_bytes": capture.total,
            "sandbox": sandbox_label.removeprefix("sandbox: ") or None,
        },
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
