"""`dexter completion bash|zsh|fish`: completion scripts generated from the argument parser.

They complete sub-commands and options at any depth, also after a positional argument (`dexter
data income AAPL --<tab>`); the values of options with a fixed set of choices (`--period`,
`--by`, `--format`); and session and job ids, which the script asks this command for
(`dexter completion --ids sessions`, read-only: it creates nothing). Other option values fall
back to file names.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from dexter.cli.open_runtime import open_runtime

EXIT_OK = 0
ID_KINDS = ("sessions", "jobs")
_ID_LIMIT = 50


def add_completion_parser(commands: Any, root: argparse.ArgumentParser) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description='Print a completion script. For bash, add eval "$(dexter completion bash)" '
        'to ~/.bashrc; for zsh, eval "$(dexter completion zsh)" to ~/.zshrc; for fish, run '
        "dexter completion fish > ~/.config/fish/completions/dexter.fish. It completes "
        "commands, options, option values, and session and job ids.",
    )
    completion.add_argument("shell", nargs="?", choices=["bash", "zsh", "fish"])
    # What the scripts call for ids; not for people.
    completion.add_argument("--ids", choices=ID_KINDS, help=argparse.SUPPRESS)
    completion.set_defaults(command_run=lambda args: _run(root, args))


class _Node:
    """One parser: its sub-commands, options, and what its values are. (A plain class, not a
    dataclass: this module is imported on every start, and dataclasses costs ~5 ms.)"""

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.options: list[str] = []
        # Option string → what its value is: "" for a flag, "@any", "@sessions", "@jobs", or
        # the choices separated by spaces.
        self.values: dict[str, str] = {}
        # What the positional arguments are ("@sessions", "@jobs", choices, or "@any").
        self.positional = ""


def _run(root: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.ids:
        print("\n".join(_ids(args.ids)))
        return EXIT_OK
    if not args.shell:
        from dexter.errors import ConfigError

        raise ConfigError("name a shell: dexter completion bash, zsh or fish.")
    tree = _tree(root, "")
    print(_fish(tree) if args.shell == "fish" else _bash(tree, zsh=args.shell == "zsh"))
    return EXIT_OK


def _id_kind(path: str, action: argparse.Action) -> str | None:
    """Which ids an argument takes, by the command it belongs to: one table, not a flag on
    every parser."""
    dest = action.dest
    if path.split()[:1] == ["cron"] and dest == "id":
        return "@jobs"
    session_args = {
        "": "resume",
        "ask": "ask_resume",
        "sessions show": "id",
        "sessions rm": "ids",
        "report": "ref",
        "usage": "session",
    }
    return "@sessions" if session_args.get(path) == dest else None


def _value(path: str, action: argparse.Action) -> str:
    kind = _id_kind(path, action)
    if kind:
        return kind
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return " ".join(str(choice) for choice in action.choices)
    return "@any"


def _tree(parser: argparse.ArgumentParser, path: str) -> _Node:
    node = _Node()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                node.children[name] = _tree(sub, f"{path} {name}".strip())
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            node.options += [o for o in action.option_strings if o.startswith("--")]
            takes_value = action.nargs != 0
            for option in action.option_strings:
                node.values[option] = _value(path, action) if takes_value else ""
        elif not node.positional:
            node.positional = _value(path, action)
    return node


def _walk(node: _Node, path: str = "") -> list[tuple[str, _Node]]:
    found = [(path, node)]
    for name, child in node.children.items():
        found += _walk(child, f"{path} {name}".strip())
    return found


def _bash(tree: _Node, *, zsh: bool) -> str:
    nodes = _walk(tree)
    children = "\n".join(
        f'        "{path}") echo {shlex.quote(" ".join(node.children))} ;;'
        for path, node in nodes
        if node.children
    )
    options = "\n".join(
        f'        "{path}") echo {shlex.quote(" ".join(node.options))} ;;' for path, node in nodes
    )
    values = "\n".join(
        f'        "{path} {option}") echo {shlex.quote(value or "@flag")} ;;'
        for path, node in nodes
        for option, value in node.values.items()
    )
    positional = "\n".join(
        f'        "{path}") echo {shlex.quote(node.positional)} ;;'
        for path, node in nodes
        if node.positional and node.positional != "@any"
    )
    script = f"""_dexter_children() {{
    case "$1" in
{children}
    esac
}}
_dexter_options() {{
    case "$1" in
{options}
    esac
}}
_dexter_value() {{
    case "$1 $2" in
{values}
        *) echo @flag ;;
    esac
}}
_dexter_positional() {{
    case "$1" in
{positional}
    esac
}}
_dexter_words() {{
    case "$1" in
        @sessions|@jobs) "$2" completion --ids "${{1#@}}" 2>/dev/null ;;
        @any|@flag) ;;
        *) echo "$1" ;;
    esac
}}
_dexter_complete() {{
    local cur path="" word pending="" kind child
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        if [ -n "$pending" ]; then pending=""; continue; fi
        case "$word" in
            -*=*) ;;
            -*) [ "$(_dexter_value "$path" "$word")" != @flag ] && pending="$word" ;;
            *)
                for child in $(_dexter_children "$path"); do
                    if [ "$child" = "$word" ]; then path="${{path:+$path }}$word"; break; fi
                done ;;
        esac
    done
    COMPREPLY=()
    if [ -n "$pending" ]; then
        kind="$(_dexter_value "$path" "$pending")"
        [ "$kind" = @any ] && return
        COMPREPLY=( $(compgen -W "$(_dexter_words "$kind" "${{COMP_WORDS[0]}}")" -- "$cur") )
        return
    fi
    case "$cur" in
        -*) COMPREPLY=( $(compgen -W "$(_dexter_options "$path")" -- "$cur") ); return ;;
    esac
    local words
    words="$(_dexter_children "$path")"
    [ -z "$words" ] && words="$(_dexter_words "$(_dexter_positional "$path")" "${{COMP_WORDS[0]}}")"
    [ -n "$words" ] && COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}}
"""
    if zsh:
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    return script + "complete -o default -F _dexter_complete dexter"


def _fish(tree: _Node) -> str:
    lines = ["complete -c dexter -f"]
    for path, node in _walk(tree):
        words = path.split()
        if not words:
            seen = "__fish_use_subcommand"
        else:
            seen = "; and ".join(f"__fish_seen_subcommand_from {word}" for word in words)
        # Sub-commands only where one may come (right after the parent); options anywhere below.
        here = f"{seen}; and test (count (commandline -opc)) -eq {len(words) + 1}"
        for name in node.children:
            lines.append(f"complete -c dexter -n '{here}' -a {shlex.quote(name)}")
        for option in node.options:
            value = node.values.get(option, "")
            flag = f"complete -c dexter -n '{seen}' -l {option[2:]}"
            if value in ("@sessions", "@jobs"):
                flag += f" -x -a '(dexter completion --ids {value[1:]})'"
            elif value == "@any":
                flag += " -r -F"
            elif value:
                flag += f" -x -a {shlex.quote(value)}"
            lines.append(flag)
        if node.positional in ("@sessions", "@jobs") and not node.children:
            lines.append(
                f"complete -c dexter -n '{seen}' -a '(dexter completion --ids "
                f"{node.positional[1:]})'"
            )
    return "\n".join(lines)


def _ids(kind: str) -> list[str]:
    """Recent session ids or job ids, newest first; nothing (and nothing created) when no
    database exists or it cannot be read."""
    from dexter.config import load_settings
    from dexter.runtime import Runtime

    sql = (
        "SELECT id FROM sessions ORDER BY updated_at DESC LIMIT ?"
        if kind == "sessions"
        else "SELECT id FROM cron_jobs WHERE kind = 'job' ORDER BY created_at DESC LIMIT ?"
    )
    runtime: Runtime | None = None
    try:
        runtime = open_runtime(load_settings(tolerate_corrupt=True))
        store = runtime.existing_store()
        return [str(row[0]) for row in store.query(sql, (_ID_LIMIT,))] if store else []
    except Exception:  # completion must never print an error into the command line
        return []
    finally:
        if runtime is not None:
            runtime.close_local()


__all__ = ["add_completion_parser"]
