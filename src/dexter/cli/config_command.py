"""`dexter config path|show|edit` and `dexter completion bash|zsh|fish`."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Values under keys like these are shown as "(set)", so `config show` is safe to paste.
_SECRET = re.compile(r"(key|token|secret|password)", re.IGNORECASE)


def add_config_parser(commands: Any) -> None:
    config = commands.add_parser(
        "config",
        help="where settings live, what they say, and an editor on them",
        description="settings.json in the Dexter home (DEXTER_HOME, default ./.dexter).",
    )
    config.set_defaults(command_run=_run)
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    actions.add_parser("path", help="print the settings file's path")
    show = actions.add_parser("show", help="print the settings file (secrets hidden)")
    show.add_argument("--json", action="store_true", help="print JSON only")
    actions.add_parser("edit", help="open the settings file in $VISUAL or $EDITOR, then check it")


def add_completion_parser(commands: Any, root: argparse.ArgumentParser) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description='Print a completion script. bash: eval "$(dexter completion bash)" in '
        '~/.bashrc; zsh: eval "$(dexter completion zsh)" in ~/.zshrc; fish: dexter completion '
        "fish > ~/.config/fish/completions/dexter.fish",
    )
    completion.add_argument("shell", choices=["bash", "zsh", "fish"])
    completion.set_defaults(command_run=lambda args: _completion(root, args.shell))


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("(set)" if _SECRET.search(str(k)) and isinstance(v, str) else _redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _run(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings, read_settings_file

    settings = load_settings(tolerate_corrupt=True)
    path = settings.settings_path
    if args.config_command == "path":
        print(path)
        return EXIT_OK
    if args.config_command == "show":
        data = read_settings_file(path)  # a corrupt file is a ConfigError with its line
        if args.json:
            print(json.dumps(_redact(data), indent=2, ensure_ascii=False))
        elif not data:
            print(f"{path}: no settings yet (defaults apply). `dexter config edit` to add some.")
        else:
            print(f"# {path}")
            print(json.dumps(_redact(data), indent=2, ensure_ascii=False))
        return EXIT_OK
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    if not path.exists():
        from dexter.atomicfile import PRIVATE, private_dir, write_text

        private_dir(path.parent)
        write_text(path, "{\n}\n", mode=PRIVATE)
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=False)
    except FileNotFoundError:
        raise ConfigError(f"editor {editor!r} not found; set VISUAL or EDITOR.") from None
    try:
        read_settings_file(path)
    except ConfigError as error:
        print(f"dexter: {error} Run `dexter config edit` again to fix it.", file=sys.stderr)
        return EXIT_USAGE
    print(f"{path} parses.")
    return EXIT_OK


def _tree(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Options and sub-commands of `parser`, recursively, for the completion scripts."""
    options: list[str] = []
    children: dict[str, Any] = {}
    for action in parser._actions:
        options += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                children[name] = _tree(sub)
    return {"options": options, "children": children}


def _paths(tree: dict[str, Any], prefix: str = "") -> dict[str, list[str]]:
    """`"data income"` → the words that may follow it."""
    words = {prefix: [*tree["children"], *tree["options"]]}
    for name, child in tree["children"].items():
        words.update(_paths(child, f"{prefix} {name}".strip()))
    return words


def _completion(root: argparse.ArgumentParser, shell: str) -> int:
    words = _paths(_tree(root))
    if shell == "fish":
        lines = ["complete -c dexter -f"]
        for path, following in words.items():
            depth = len(path.split()) if path else 0
            condition = (
                "__fish_use_subcommand"
                if not path
                else f"__fish_seen_subcommand_from {path.split()[-1]}; "
                f"and test (count (commandline -opc)) -eq {depth + 1}"
            )
            for word in following:
                flag = f"-l {word[2:]}" if word.startswith("--") else f"-a {shlex.quote(word)}"
                lines.append(f"complete -c dexter -n '{condition}' {flag}")
        print("\n".join(lines))
        return EXIT_OK
    cases = "\n".join(
        f'        "{path}") words="{" ".join(following)}" ;;' for path, following in words.items()
    )
    script = f"""_dexter_complete() {{
    local cur path="" word
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$word" in -*) ;; *) path="${{path:+$path }}$word" ;; esac
    done
    local words=""
    case "$path" in
{cases}
    esac
    COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}}
"""
    if shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    print(script + "complete -o default -F _dexter_complete dexter")
    return EXIT_OK
