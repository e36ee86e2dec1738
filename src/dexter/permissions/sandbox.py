"""The OS sandbox shell commands run in: bubblewrap on Linux, sandbox-exec (Seatbelt) on macOS.

Every command that runs unasked (classified read-only) runs inside it, so a classifier mistake
cannot write, reach the network, outlive the call or read secrets:

- the whole filesystem read-only (`--ro-bind / /`), the workspace read-only too (writable only
  for approved commands, when the user turns that on: `sandbox.approved` in settings);
- no network (`--unshare-net`: a namespace with only its own loopback);
- a private `/tmp`, its own PID namespace and `/proc` (other processes, and their environments,
  are invisible), no capabilities (`--cap-drop ALL`: we may be root), `--die-with-parent` and
  `--new-session`; killing bubblewrap's process group on timeout ends everything inside;
- secrets hidden: credential directories and files under home, `.env*` files in the workspace,
  Dexter's settings, stored keys, gateway tokens and database (an empty directory or `/dev/null`
  mounted over each);
- protected files (`.dexter/`, `.git/hooks`, `.git/config`, shell start-up files) stay read-only
  even when the workspace is writable.

macOS gets a Seatbelt profile with the same intent (deny network and writes outside the allowed
paths, deny reading the secret paths). It cannot be tested on Linux and is kept small.
Where neither exists, `available_sandbox()` is None: `dexter doctor` says so and the permission
policy only auto-allows a short strict list of readers.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dexter.permissions.secrets import (
    DEXTER_DIR,
    DEXTER_SECRET_DIRS,
    DEXTER_SECRET_FILES,
    is_secret_data_name,
    protected_paths_under,
)

SandboxKind = Literal["bubblewrap", "seatbelt"]

# Under home: directories and files that hold credentials.
HOME_SECRET_DIRS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".azure",
    ".password-store",
    ".docker",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".config/op",
    ".cargo/credentials.d",
    ".terraform.d",
)
HOME_SECRET_FILES = (
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".boto",
    ".s3cfg",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".env",
)
# How far into the workspace to look for `.env*` files to hide, and how many entries at most.
_ENV_SCAN_DEPTH = 3
_ENV_SCAN_LIMIT = 5_000
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache"})
_SAFE_ENV = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})


@dataclass(frozen=True)
class SandboxPolicy:
    """What one command's sandbox allows."""

    workspace: Path
    writable: bool = False
    network: bool = False
    home: Path | None = None
    # Dexter's settings file and database (and anything else to hide), wherever DEXTER_HOME is.
    hidden: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    extra_env_files: tuple[Path, ...] = field(default=())


@dataclass(frozen=True)
class Sandbox:
    kind: SandboxKind
    program: str

    @property
    def description(self) -> str:
        if self.kind == "bubblewrap":
            return (
                f"bubblewrap ({self.program}): read-only filesystem, no network, private /tmp "
                "and PID namespace, secrets hidden"
            )
        return f"sandbox-exec ({self.program}): Seatbelt profile, no network, writes confined"

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy, cwd: Path) -> list[str]:
        if self.kind == "bubblewrap":
            return bwrap_argv(self.program, argv, policy, cwd)
        return [self.program, "-p", seatbelt_profile(policy), *argv]


def _home() -> Path | None:
    raw = os.environ.get("HOME")
    return Path(raw) if raw else None


def workspace_env_files(workspace: Path) -> list[Path]:
    """`.env*` files (not `.env.example` and friends) in the workspace, a bounded walk."""
    found: list[Path] = []
    seen = 0
    stack: list[tuple[Path, int]] = [(workspace, 0)]
    while stack and seen < _ENV_SCAN_LIMIT:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if depth < _ENV_SCAN_DEPTH and name not in _SKIP_DIRS:
                    stack.append((Path(entry.path), depth + 1))
                continue
            lowered = name.lower()
            if lowered in _SAFE_ENV:
                continue
            if (
                lowered.startswith(".env")
                or lowered.endswith((".env", ".pem", ".key", ".p12", ".pfx"))
                or is_secret_data_name(lowered)
                or lowered in ("credentials", "credentials.json", ".netrc", ".npmrc", ".pypirc")
                or lowered.startswith(("id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"))
            ):
                found.append(Path(entry.path))
    return found


def secret_paths(policy: SandboxPolicy) -> tuple[list[Path], list[Path]]:
    """(directories, files) to hide from a sandboxed command, existing ones only."""
    dirs: list[Path] = []
    files: list[Path] = []
    home = policy.home or _home()
    if home is not None:
        dirs += [home / name for name in HOME_SECRET_DIRS]
        files += [home / name for name in HOME_SECRET_FILES]
    files += workspace_env_files(policy.workspace)
    files += list(policy.extra_env_files)
    for path in policy.hidden:
        (dirs if path.is_dir() else files).append(path)
    database_dirs = {policy.workspace / DEXTER_DIR, *(p.parent for p in policy.hidden)}
    if home is not None:
        database_dirs.add(home / DEXTER_DIR)
    for directory in database_dirs:
        # Settings, stored keys, gateway tokens and sessions, and the database.
        files += [directory / name for name in DEXTER_SECRET_FILES]
        dirs += [directory / name for name in DEXTER_SECRET_DIRS]
        try:
            files += [p for p in directory.glob("*.db*") if p.is_file()]
        except OSError:
            pass
    return _existing(dirs, directory=True), _existing(files, directory=False)


def _existing(paths: Iterable[Path], *, directory: bool) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for path in paths:
        try:
            real = Path(os.path.realpath(path))
            ok = real.is_dir() if directory else (real.exists() and not real.is_dir())
        except OSError:
            continue
        if ok and str(real) not in seen:
            seen.add(str(real))
            out.append(real)
    return out


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


# No capabilities, a read-only `/`, fresh `/dev` and `/proc`: the base of every bubblewrap
# sandbox, and what the availability probe starts, so the two cannot drift apart.
_BWRAP_ROOT = ("--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")


def bwrap_argv(program: str, argv: Sequence[str], policy: SandboxPolicy, cwd: Path) -> list[str]:
    workspace = Path(os.path.realpath(policy.workspace))
    args = [
        program,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        *_BWRAP_ROOT,
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
        "--tmpfs",
        "/dev/shm",
    ]
    if not policy.network:
        args.append("--unshare-net")
    tmp = Path("/tmp")
    args += ["--bind" if policy.writable else "--ro-bind", str(workspace), str(workspace)]
    if policy.writable:
        protected = [*protected_paths_under(workspace), *policy.protected]
        for path in _existing(protected, directory=True) + _existing(protected, directory=False):
            args += ["--ro-bind", str(path), str(path)]
    dirs, files = secret_paths(policy)
    for path in dirs:
        if _under(path, tmp) and not _under(path, workspace):
            continue  # already gone: /tmp is private
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in files:
        if _under(path, tmp) and not _under(path, workspace):
            continue
        args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--chdir", str(cwd), "--", *argv]
    return args


def _quote_sb(path: Path | str) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(policy: SandboxPolicy) -> str:
    """A Seatbelt profile: reads anywhere but secrets, writes only where allowed, no network."""
    dirs, files = secret_paths(policy)
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec process-fork signal sysctl-read mach-lookup)",
        "(allow file-read*)",
        '(allow file-write* (literal "/dev/null") (literal "/dev/tty"))',
        '(allow file-write* (subpath "/private/tmp") (subpath "/private/var/folders"))',
    ]
    if policy.writable:
        lines.append(f"(allow file-write* (subpath {_quote_sb(policy.workspace)}))")
        for path in protected_paths_under(policy.workspace):
            lines.append(f"(deny file-write* (subpath {_quote_sb(path)}))")
    for path in dirs:
        lines.append(f"(deny file-read* (subpath {_quote_sb(path)}))")
    for path in files:
        lines.append(f"(deny file-read* (literal {_quote_sb(path)}))")
    if not policy.network:
        lines.append("(deny network*)")
    return "\n".join(line for line in lines if line)


def _probe_bwrap(program: str) -> str | None:
    """None when bubblewrap can start a sandbox here, else why not."""
    try:
        done = subprocess.run(
            [
                program,
                "--die-with-parent",
                "--unshare-pid",
                "--unshare-net",
                *_BWRAP_ROOT,
                "--",
                "true",
            ],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0] or "failed"
    return None


@functools.cache
def detect_sandbox() -> tuple[Sandbox | None, str]:
    """The sandbox this machine offers, and a sentence about it (for `dexter doctor`)."""
    if os.environ.get("DEXTER_SANDBOX", "").strip().lower() in ("off", "none", "0"):
        return None, "turned off by DEXTER_SANDBOX=off"
    if sys.platform.startswith("linux"):
        program = shutil.which("bwrap")
        if program is None:
            return None, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
        problem = _probe_bwrap(program)
        if problem is not None:
            return None, f"bubblewrap cannot create a sandbox here ({problem})"
        sandbox = Sandbox("bubblewrap", program)
        return sandbox, sandbox.description
    if sys.platform == "darwin":
        program = shutil.which("sandbox-exec") or "/usr/bin/sandbox-exec"
        if Path(program).exists():
            sandbox = Sandbox("seatbelt", program)
            return sandbox, sandbox.description
        return None, "sandbox-exec is missing"
    return None, f"no OS sandbox is supported on {sys.platform}"


def available_sandbox() -> Sandbox | None:
    return detect_sandbox()[0]
