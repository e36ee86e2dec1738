"""Which commands are read-only: per-command option allowlists, read the way getopt reads them.

A segment is read-only only when its program is listed here and *every* option it carries is one
this table names for that program. Options are read like GNU getopt and git's parse-options do:
short options may be clustered (`-iOrm` is `-i -O -r -m`) and a letter that takes a value eats the
rest of its cluster (`-n20`); long options may carry `=value` or take the next word. GNU and git
also accept any unambiguous abbreviation of a long option (`--out` for `--output`); an
abbreviation is never accepted here, because which option it means depends on the full option
list of the installed program, which a table cannot prove. Anything unknown is "might change
something" and is asked about.

Programs whose arguments are a language of their own (`find` expressions, `awk` and `sed`
scripts, `git` subcommands, `tar` modes) have their own checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Options:
    """The options of one program that can't write, run programs or reach the network."""

    short: str = ""  # letters that take no value
    short_valued: str = ""  # letters that take a value (attached or the next word)
    long: frozenset[str] = frozenset()  # `--name` without a value
    long_valued: frozenset[str] = frozenset()  # `--name=V` or `--name V`
    long_optional: frozenset[str] = frozenset()  # `--name` or `--name=V` (never the next word)
    numeric: bool = False  # `-20` (head, tail)
    max_positional: int | None = None
    # Checks the positional arguments (after options) for programs that interpret them.
    positional: Callable[[Sequence[str]], str | None] | None = None
    # Options after positionals are still options (GNU permutes); False for POSIX-style tools.
    permute: bool = True


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def check_options(spec: Options, name: str, args: Sequence[str]) -> str | None:
    """None when every option is allowed, else why not."""
    positional: list[str] = []
    i, n = 0, len(args)
    only_positional = False
    while i < n:
        arg = args[i]
        i += 1
        if only_positional or arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            if not spec.permute:
                only_positional = True
            continue
        if arg == "--":
            only_positional = True
            continue
        if arg.startswith("--"):
            key, eq, _ = arg.partition("=")
            if key in spec.long_valued:
                if not eq:
                    if i >= n:
                        return f"`{name} {key}` needs a value"
                    i += 1
                continue
            if key in spec.long_optional or (key in spec.long and not eq):
                continue
            known = spec.long | spec.long_valued | spec.long_optional
            if any(option.startswith(key) for option in known) and len(key) > 2:
                return f"`{name} {key}` is an abbreviated option (spell it out)"
            return f"`{name} {key}` is not an option Dexter knows to be read-only"
        if spec.numeric and arg[1:].isdigit():
            continue
        letters = arg[1:]
        for offset, letter in enumerate(letters):
            if letter in spec.short_valued:
                if offset == len(letters) - 1:
                    if i >= n:
                        return f"`{name} -{letter}` needs a value"
                    i += 1
                break
            if letter not in spec.short:
                return f"`{name} -{letter}` is not an option Dexter knows to be read-only"
    if spec.max_positional is not None and len(positional) > spec.max_positional:
        return f"`{name}` with {len(positional)} file arguments may write the last one"
    if spec.positional is not None:
        return spec.positional(positional)
    return None


# --- specific languages ------------------------------------------------------------------------

_FIND_TESTS_VALUED = _set(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -user "
    "-group -uid -gid -perm -mtime -atime -ctime -mmin -amin -cmin -newer -anewer -cnewer "
    "-links -inum -samefile -maxdepth -mindepth -lname -ilname -used -printf -regextype "
    "-newermt -newerct -newerat -newermm -fstype -context"
)
_FIND_TESTS = _set(
    "-print -print0 -prune -not ! -o -a -or -and -empty -depth -follow -xdev -mount -true "
    "-false -readable -writable -executable -nouser -nogroup -ls -quit -daystart -noleaf "
    "-ignore_readdir_race -noignore_readdir_race ( ) , -L -H -P"
)


def _find_check(words: Sequence[str]) -> str | None:
    i = 1
    # Leading -L/-H/-P and -D/-O debug options, then start paths, then the expression.
    while i < len(words) and words[i] in ("-L", "-H", "-P"):
        i += 1
    while i < len(words):
        arg = words[i]
        if arg in _FIND_TESTS_VALUED:
            if i + 1 >= len(words):
                return f"`find {arg}` needs a value"
            i += 2
            continue
        if arg in _FIND_TESTS or not (arg.startswith("-") or arg in ("!", "(", ")", ",")):
            i += 1
            continue
        return f"`find {arg}` can write, run programs or is not known to be read-only"
    return None


def _awk_program_reason(program: str) -> str | None:
    """Why an awk program might not be read-only: output redirection, pipes, system(), getline."""
    i, n = 0, len(program)
    depth_brace = 0
    depth_paren = 0
    significant = ""  # the last non-blank character outside literals
    stripped: list[str] = []
    while i < n:
        char = program[i]
        if char == '"':
            j = i + 1
            while j < n and program[j] != '"':
                j += 2 if program[j] == "\\" else 1
            i = j + 1
            stripped.append('""')
            significant = '"'
            continue
        if char == "/" and (significant == "" or significant in "({};,!~&|?:=<>+-*%^\n"):
            # A regular expression literal: awk's own lexer decides the same way.
            j = i + 1
            while j < n and program[j] != "/":
                j += 2 if program[j] == "\\" else 1
            i = j + 1
            stripped.append("//")
            significant = "/"
            continue
        if char == "{":
            depth_brace += 1
        elif char == "}":
            depth_brace = max(0, depth_brace - 1)
        elif char == "(":
            depth_paren += 1
        elif char == ")":
            depth_paren = max(0, depth_paren - 1)
        elif char == "|":
            if program[i : i + 2] == "||":
                stripped.append("||")
                significant = "|"
                i += 2
                continue
            return "awk pipes output to or from a command"
        elif char == ">" and depth_brace > 0 and depth_paren == 0:
            if program[i : i + 2] != ">=":
                return "awk writes output to a file"
        elif char in "@`":
            return "awk uses an extension"
        if not char.isspace():
            significant = char
        stripped.append(char)
        i += 1
    code = "".join(stripped)
    for word in ("system", "getline", "ENVIRON", "PROCINFO", "close", "fflush"):
        if re.search(rf"\b{word}\b", code):
            return f"awk uses {word}"
    return None


def _awk_check(words: Sequence[str]) -> str | None:
    args = list(words[1:])
    i = 0
    program: str | None = None
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-F", "-v"):
            i += 2
            continue
        if arg.startswith(("-F", "-v")) and len(arg) > 2:
            i += 1
            continue
        if arg.startswith("-") and arg != "-":
            return f"`awk {arg}` is not an option Dexter knows to be read-only"
        break
    if i >= len(args):
        return "awk without a program"
    program = args[i]
    # Later `name=value` operands only set variables; files are read.
    return _awk_program_reason(program)


_SED_SIMPLE = set("pdDqQ=lnNhHgGxz{}!PFn")


def sed_script_reason(script: str) -> str | None:
    """Why a sed script might write or run something (`w`, `e`, `s///w`, `s///e`, `r`...)."""
    i, n = 0, len(script)

    def skip_delimited(start: int, delim: str) -> int:
        j = start
        while j < n and script[j] != delim:
            j += 2 if script[j] == "\\" else 1
        if j >= n:
            raise ValueError
        return j + 1

    try:
        while i < n:
            char = script[i]
            if char in " \t;\n":
                i += 1
                continue
            # addresses: numbers, $, /re/, \cREc, first~step, ranges, `!`
            if char.isdigit() or char in "$,~+":
                i += 1
                continue
            if char == "/":
                i = skip_delimited(i + 1, "/")
                while i < n and script[i] in "IM":
                    i += 1
                continue
            if char == "\\" and i + 1 < n:
                i = skip_delimited(i + 2, script[i + 1])
                continue
            if char in ":btT":
                # A label runs to the end of the command.
                j = i + 1
                while j < n and script[j] not in ";\n":
                    j += 1
                i = j
                continue
            if char in "aic":
                return None  # the rest of the script is text to print
            if char in "sy":
                if i + 1 >= n or script[i + 1] in "\\\n":
                    return "sed script not understood"
                delim = script[i + 1]
                j = skip_delimited(i + 2, delim)
                j = skip_delimited(j, delim)
                while j < n and script[j] not in ";\n}" and script[j] not in " \t":
                    if char == "s" and script[j] not in "gpiImM0123456789":
                        return f"sed s///{script[j]} can write or run commands"
                    j += 1
                i = j
                continue
            if char in _SED_SIMPLE:
                i += 1
                continue
            return f"sed command `{char}` can write, read other files or run commands"
    except ValueError:
        return "sed script not understood"
    return None


def _sed_check(words: Sequence[str]) -> str | None:
    args = list(words[1:])
    scripts: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in ("-e", "--expression"):
            if i >= len(args):
                return "sed -e needs a script"
            scripts.append(args[i])
            i += 1
        elif arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and len(arg) > 2:
            scripts.append(arg[2:])
        elif arg in ("-l", "--line-length"):
            i += 1
        elif arg in ("--posix", "--debug", "--quiet", "--silent", "--regexp-extended",
                     "--separate", "--unbuffered", "--null-data", "--sandbox"):  # fmt: skip
            continue
        elif arg.startswith("-") and arg != "-" and not arg.startswith("--"):
            bad = next((c for c in arg[1:] if c not in "nEsruz"), None)
            if bad is not None:
                return f"`sed -{bad}` can edit files in place or read a script file"
        elif arg.startswith("--"):
            return f"`sed {arg.split('=', 1)[0]}` is not an option Dexter knows to be read-only"
        else:
            positional.append(arg)
    if not scripts:
        if not positional:
            return "sed without a script"
        scripts.append(positional[0])
    for script in scripts:
        reason = sed_script_reason(script)
        if reason is not None:
            return reason
    return None


def _tar_check(words: Sequence[str]) -> str | None:
    args = list(words[1:])
    if not args:
        return "tar without a mode"
    first = args[0]
    if not first.startswith("-"):
        args[0] = "-" + first  # old-style `tar tzf x.tgz`
    modes = set()
    archive: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in ("--list",):
            modes.add("t")
        elif arg in ("--file",):
            if i < len(args):
                archive.append(args[i])
            i += 1
        elif arg.startswith("--file="):
            archive.append(arg.split("=", 1)[1])
        elif arg in ("--verbose", "--gzip", "--bzip2", "--xz", "--zstd", "--auto-compress",
                     "--numeric-owner", "--full-time", "--wildcards", "--no-wildcards",
                     "--force-local", "--utc"):  # fmt: skip
            continue
        elif arg.startswith("--"):
            return f"`tar {arg.split('=', 1)[0]}` is not an option Dexter knows to be read-only"
        elif arg.startswith("-") and arg != "-":
            letters = arg[1:]
            for offset, letter in enumerate(letters):
                if letter == "f":
                    value = letters[offset + 1 :]
                    if value:
                        archive.append(value)
                    elif i < len(args):
                        archive.append(args[i])
                        i += 1
                    break
                if letter == "t":
                    modes.add("t")
                elif letter not in "vzjJaZ":
                    return f"`tar -{letter}` can write or run programs"
    if modes != {"t"}:
        return "tar without -t (list) can extract or create archives"
    if any(":" in name for name in archive):
        return "tar reads `host:file` archives over the network"
    return None


# --- git ---------------------------------------------------------------------------------------

_GIT_LOG_DIFF = Options(
    short="pusiwbRmcqzMCBDWtTrNlP",
    short_valued="nULSG",
    numeric=True,
    long=_set(
        "--oneline --stat --shortstat --numstat --name-only --name-status --graph --decorate "
        "--all --reverse --first-parent --no-merges --merges --follow --cached --staged "
        "--color --no-color --abbrev-commit --no-abbrev-commit --summary --raw --cc --patch "
        "--no-patch --full-history --simplify-by-decoration --branches --tags --remotes "
        "--left-right --cherry-pick --cherry-mark --boundary --topo-order --date-order "
        "--author-date-order --relative-date --exit-code --quiet --check --minimal "
        "--histogram --patience --no-renames --ignore-all-space --ignore-space-change "
        "--ignore-space-at-eol --ignore-blank-lines --function-context --no-ext-diff "
        "--no-textconv --mailmap --use-mailmap --no-mailmap --source --parents --children "
        "--ancestry-path --null --full-index --binary --abbrev --no-prefix --patch-with-stat "
        "--compact-summary --name-rev --no-walk --do-walk --show-linear-break --regexp-ignore-case "
        "--all-match --invert-grep --basic-regexp --extended-regexp --fixed-strings "
        "--perl-regexp --remove-empty --dense --sparse --no-decorate --log-size --no-notes "
        "--text --irreversible-delete --ignore-submodules --no-color-moved --show-pulls "
        "--single-worktree --reflog --walk-reflogs --not --pickaxe-all --pickaxe-regex"
    ),
    long_valued=_set(
        "--max-count --skip --since --until --after --before --author --committer --grep "
        "--format --pretty --date --diff-filter --unified --since-as-filter --min-parents "
        "--max-parents --encoding --decorate-refs --decorate-refs-exclude --exclude "
        "--glob --stat-width --stat-count --stat-name-width --inter-hunk-context --src-prefix "
        "--dst-prefix --line-prefix --word-diff-regex --color-words --anchored --relative "
        "--skip-to --rotate-to --find-object"
    ),
    long_optional=_set(
        "--decorate --color --word-diff --dirstat --find-renames --find-copies --abbrev "
        "--color-moved --relative --stat --ignore-submodules --pretty --format --notes "
        "--diff-merges --submodule --break-rewrites --branches --tags --remotes"
    ),
)
_GIT_GREP = Options(
    short="nivlLcEFPhHwoqzIra",
    short_valued="efABCm",
    numeric=True,
    long=_set(
        "--count --name-only --files-with-matches --files-without-match --line-number "
        "--ignore-case --word-regexp --invert-match --cached --untracked --recurse-submodules "
        "--heading --break --full-name --quiet --all-match --and --or --not --extended-regexp "
        "--fixed-strings --perl-regexp --basic-regexp --only-matching --null --column "
        "--show-function --function-context --no-index --exclude-standard --text --color "
        "--no-color --recursive --no-recursive -I --no-exclude-standard --index"
    ),
    long_valued=_set("--max-depth --context --before-context --after-context --threads -e"),
    long_optional=_set("--color"),
)
_GIT_SUBCOMMANDS: dict[str, Options] = {
    "log": _GIT_LOG_DIFF,
    "show": _GIT_LOG_DIFF,
    "diff": _GIT_LOG_DIFF,
    "whatchanged": _GIT_LOG_DIFF,
    "diff-tree": _GIT_LOG_DIFF,
    "diff-files": _GIT_LOG_DIFF,
    "diff-index": _GIT_LOG_DIFF,
    "rev-list": Options(
        short="n",
        short_valued="",
        numeric=True,
        long=_GIT_LOG_DIFF.long | _set("--count --objects --all --left-only --right-only"),
        long_valued=_GIT_LOG_DIFF.long_valued,
        long_optional=_GIT_LOG_DIFF.long_optional,
    ),
    "grep": _GIT_GREP,
    "status": Options(
        short="sbvzu",
        long=_set(
            "--short --branch --long --show-stash --verbose --ahead-behind "
            "--no-ahead-behind --renames --no-renames --null"
        ),
        long_optional=_set(
            "--porcelain --untracked-files --ignored --ignore-submodules --column --find-renames"
        ),
    ),
    "blame": Options(
        short="wMCesltpfnb",
        short_valued="L",
        long=_set(
            "--porcelain --line-porcelain --root --show-name --show-number "
            "--show-email --incremental --minimal --reverse --first-parent"
        ),
        long_valued=_set("--date --contents --since"),
        long_optional=_set("--abbrev"),
    ),
    "annotate": Options(short="wMCesl", short_valued="L"),
    "shortlog": Options(
        short="nsec",
        long=_set("--numbered --summary --email --committer --all --no-merges"),
        long_valued=_set("--since --until --author --group --format"),
    ),
    "rev-parse": Options(
        long=_set(
            "--show-toplevel --abbrev-ref --verify --quiet --git-dir --show-prefix "
            "--show-cdup --is-inside-work-tree --is-bare-repository --absolute-git-dir "
            "--symbolic-full-name --symbolic --all --branches --tags --remotes "
            "--git-common-dir --show-superproject-working-tree --is-inside-git-dir"
        ),
        long_optional=_set("--short --abbrev-ref"),
        short="q",
    ),
    "describe": Options(
        long=_set("--tags --always --long --all --exact-match --first-parent --contains"),
        long_valued=_set("--match --exclude --candidates"),
        long_optional=_set("--abbrev"),
    ),
    "ls-files": Options(
        short="cdmoiskutvfz",
        short_valued="x",
        long=_set(
            "--cached --deleted --modified --others --ignored --stage --killed "
            "--unmerged --exclude-standard --full-name --directory --no-empty-directory "
            "--error-unmatch --eol --recurse-submodules --debug"
        ),
        long_valued=_set("--exclude --with-tree --format"),
        long_optional=_set("--abbrev"),
    ),
    "ls-tree": Options(
        short="rdtlz",
        long=_set("--name-only --name-status --full-name --full-tree --long --object-only"),
        long_valued=_set("--format"),
        long_optional=_set("--abbrev"),
    ),
    "cat-file": Options(short="ptsea", long=_set("--textconv-no --follow-symlinks")),
    "name-rev": Options(
        long=_set("--name-only --all --tags --always --no-undefined"),
        long_valued=_set("--refs --exclude"),
    ),
    "merge-base": Options(short="a", long=_set("--all --octopus --independent --is-ancestor")),
    "show-ref": Options(
        short="dsq",
        long=_set("--head --heads --tags --dereference --verify --quiet --branches"),
        long_optional=_set("--hash --abbrev"),
    ),
    "for-each-ref": Options(
        long_valued=_set(
            "--format --sort --count --contains --no-contains --merged "
            "--no-merged --points-at --exclude"
        ),
        long=_set("--shell --perl --python --tcl --ignore-case"),
    ),
    "count-objects": Options(short="vH", long=_set("--verbose --human-readable")),
    "show-branch": Options(short="ar", long=_set("--all --remotes --list --current")),
    "check-ignore": Options(short="qvn", long=_set("--quiet --verbose --non-matching")),
    "version": Options(long=_set("--build-options")),
}
_GIT_SAFE_GLOBALS = frozenset(
    {
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--bare",
    }
)
_GIT_BRANCH_LIST = frozenset(
    {
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "--list",
        "-l",
        "--show-current",
        "--no-color",
        "--color",
        "--merged",
        "--no-merged",
    }
)


def git_subcommand(words: Sequence[str]) -> tuple[int | None, str | None]:
    """(index of the subcommand or None, why a global option is unsafe or None)."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        arg = words[i]
        if arg in _GIT_SAFE_GLOBALS:
            i += 1
        elif arg == "-C":
            i += 2
        else:
            # -c, --config-env, --git-dir, --work-tree, --exec-path, --paginate ...
            return None, f"`git {arg.split('=', 1)[0]}` changes how git runs"
    return (i if i < len(words) else None), None


def _git_check(words: Sequence[str]) -> str | None:
    sub, unsafe = git_subcommand(words)
    if unsafe is not None:
        return unsafe
    if sub is None:
        return "git without a subcommand"
    name, rest = words[sub], list(words[sub + 1 :])
    spec = _GIT_SUBCOMMANDS.get(name)
    if spec is not None:
        return check_options(spec, f"git {name}", rest)
    if name == "branch" and all(arg in _GIT_BRANCH_LIST for arg in rest):
        return None
    if name == "tag" and (
        not rest or (rest[0] in ("-l", "--list") and all(not a.startswith("-") for a in rest[1:]))
    ):
        return None
    if name == "remote" and rest in ([], ["-v"], ["--verbose"]):
        return None
    if name == "stash" and rest[:1] == ["list"] and len(rest) == 1:
        return None
    if (
        name == "stash"
        and rest[:1] == ["show"]
        and all(a in ("-p", "--stat") or not a.startswith("-") for a in rest[1:])
    ):
        return None
    if name == "worktree" and rest == ["list"]:
        return None
    if name == "reflog" and (not rest or rest[0] == "show"):
        return check_options(_GIT_LOG_DIFF, "git reflog", rest[1:] if rest else [])
    return f"`git {name}` with these arguments can change things"


def _no_plus_commands(positional: Sequence[str]) -> str | None:
    # `less +!cmd file` / `more +cmd` run a command at start-up.
    for arg in positional:
        if arg.startswith("+"):
            return f"`{arg}` runs a pager command at start-up"
    return None


def _ps_positional(positional: Sequence[str]) -> str | None:
    # BSD-style letters (`ps aux`); `e` prints every process's environment.
    for arg in positional:
        if not arg.isalpha() or not set(arg) <= set("auxwfjlvrTHSmMcnZ"):
            return f"`ps {arg}` may print other processes' environments"
    return None


_NPM_LOCAL = Options(
    short="alp",
    long=_set("--all --json --long --parseable --global --production --dev --omit --link"),
    long_valued=_set("--depth --omit --include"),
)
_NPM_LOCAL_SUBCOMMANDS = frozenset({"ls", "list", "ll", "la", "root", "prefix", "explain", "why"})


def _npm_check(words: Sequence[str]) -> str | None:
    # Only subcommands that read the local tree: `view`, `info`, `outdated`, `ping` … reach the
    # registry, and `--registry=URL` points them anywhere.
    if len(words) < 2 or words[1] not in _NPM_LOCAL_SUBCOMMANDS:
        return "`npm` with these arguments installs, runs scripts or reaches the network"
    return check_options(_NPM_LOCAL, f"npm {words[1]}", list(words[2:]))


# --- the table ---------------------------------------------------------------------------------


def _no_v_option(words: Sequence[str]) -> str | None:
    # `printf -v NAME` assigns a shell variable (PATH, say) for the commands after it.
    for arg in words[1:2]:
        if arg.startswith("-"):
            return "`printf -v` assigns a shell variable"
    return None


def _jq_positional(positional: Sequence[str]) -> str | None:
    if positional and re.search(r"\$ENV|\benv\b|\binput_filename\b|\$__prog", positional[0]):
        return "jq reads the environment"
    return None


_GREP = Options(
    short="EFGPivwxyclLoqsbHhnTZzraRIUu",
    short_valued="efmABCdD",
    numeric=True,
    long=_set(
        "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --ignore-case "
        "--no-ignore-case --invert-match --word-regexp --line-regexp --count --color "
        "--files-without-match --files-with-matches --only-matching --quiet --silent "
        "--no-messages --byte-offset --with-filename --no-filename --line-number "
        "--initial-tab --null --null-data --text --recursive --dereference-recursive "
        "--binary --line-buffered --no-line-number"
    ),
    long_valued=_set(
        "--regexp --file --max-count --after-context --before-context --context --include "
        "--exclude --exclude-dir --exclude-from --label --binary-files --devices --directories"
    ),
    long_optional=_set("--color --colour"),
)
_RG = Options(
    short="iSsFwxvclnNoqHIuLaUPe0",
    short_valued="egtTABCmMjE",
    long=_set(
        "--files --ignore-case --smart-case --case-sensitive --fixed-strings --word-regexp "
        "--line-regexp --invert-match --count --count-matches --files-with-matches "
        "--files-without-match --line-number --no-line-number --only-matching --quiet "
        "--with-filename --no-filename --no-ignore --hidden --follow --unrestricted "
        "--multiline --pcre2 --json --vimgrep --heading --no-heading --column --stats "
        "--no-messages --sort-files --trim --null --text --binary --type-list --no-config "
        "--ignore-vcs --no-ignore-vcs --one-file-system --passthru --debug"
    ),
    long_valued=_set(
        "--regexp --glob --iglob --type --type-not --max-count --max-depth --after-context "
        "--before-context --context --max-columns --sort --sortr --color --colors --encoding "
        "--threads --replace --field-match-separator --max-filesize --path-separator"
    ),
)
_LS = Options(
    short="1aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ",
    short_valued="IwT",
    long=_set(
        "--all --almost-all --human-readable --si --recursive --reverse --size --classify "
        "--directory --dereference --inode --numeric-uid-gid --no-group --literal "
        "--group-directories-first --full-time --author --escape --hide-control-chars "
        "--show-control-chars --quote-name --context --file-type --ignore-backups"
    ),
    long_valued=_set(
        "--ignore --hide --width --tabsize --block-size --format --sort --time --time-style "
        "--quoting-style --indicator-style"
    ),
    long_optional=_set("--color --colour --hyperlink --classify"),
)
_SORT = Options(
    short="bdfgiMhnRrVcCsumz",
    short_valued="ktS",
    long=_set(
        "--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort "
        "--ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort --random-sort "
        "--reverse --version-sort --stable --unique --merge --zero-terminated --check"
    ),
    long_valued=_set("--key --field-separator --buffer-size --parallel --sort --random-source"),
    long_optional=_set("--check"),
)
_HEAD_TAIL = Options(
    short="qvz",
    short_valued="nc",
    numeric=True,
    long=_set("--quiet --silent --verbose --zero-terminated"),
    long_valued=_set("--lines --bytes"),
)
# md5sum, sha1sum, sha256sum and sha512sum: the coreutils checksum tools share their options.
_SUMS = Options(short="bctwz", long=_set("--check --tag --quiet --status --strict"))
_TREE = Options(
    short="adlfxpsugDFqNQrtvUCnhJXAS",
    short_valued="LPI",
    long=_set("--dirsfirst --noreport --du --si --prune --matchdirs --ignore-case --gitignore"),
    long_valued=_set("--filelimit --sort --charset"),
)
_JQ = Options(
    short="rcnsejaSCMRh",
    short_valued="",
    long=_set(
        "--raw-output --compact-output --null-input --slurp --exit-status --join-output "
        "--ascii-output --sort-keys --color-output --monochrome-output --raw-input --tab "
        "--seq --stream --args --jsonargs --raw-output0 --unbuffered"
    ),
    long_valued=_set("--indent"),
    positional=_jq_positional,
)


# Program -> the options it may be given without writing, running programs or reaching out.
SPECS: dict[str, Options] = {
    "ls": _LS,
    "dir": _LS,
    "cat": Options(
        short="AbeEnstTuv",
        long=_set("--number --number-nonblank --show-all --squeeze-blank --show-ends --show-tabs"),
    ),
    "tac": Options(short="br", short_valued="s", long_valued=_set("--separator")),
    "head": _HEAD_TAIL,
    "tail": _HEAD_TAIL,
    "wc": Options(short="clmwL", long=_set("--bytes --chars --lines --words --max-line-length")),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sort": _SORT,
    "uniq": Options(
        short="cdDiuz",
        short_valued="fsw",
        long=_set("--count --repeated --unique --ignore-case --zero-terminated"),
        long_valued=_set("--skip-fields --skip-chars --check-chars --group --all-repeated"),
        max_positional=1,
    ),
    "cut": Options(
        short="snz",
        short_valued="bcdf",
        long=_set("--only-delimited --complement --zero-terminated"),
        long_valued=_set("--bytes --characters --delimiter --fields --output-delimiter"),
    ),
    "tr": Options(short="cCdst", long=_set("--complement --delete --squeeze-repeats")),
    "nl": Options(short="p", short_valued="bdfhilnsvw"),
    "rev": Options(),
    "od": Options(short="bcdfiloxsv", short_valued="AjNtSw"),
    "hexdump": Options(short="bcCdovx", short_valued="enNs"),
    "strings": Options(short="afw", short_valued="ntne", numeric=True),
    "seq": Options(short="w", short_valued="fs", numeric=True),
    "stat": Options(
        short="LftF",
        short_valued="c",
        long=_set("--dereference --file-system --terse"),
        long_valued=_set("--format --printf"),
    ),
    "file": Options(
        short="bhiLNnkrsz0",
        short_valued="eFP",
        long=_set(
            "--brief --mime --mime-type --mime-encoding --dereference "
            "--no-dereference --keep-going --raw --special-files "
            "--uncompress --no-pad --print0"
        ),
        long_valued=_set("--exclude --separator"),
    ),
    "date": Options(
        short="uRI",
        short_valued="dr",
        long=_set("--utc --universal --rfc-email"),
        long_valued=_set("--date --reference"),
        long_optional=_set("--iso-8601 --rfc-3339"),
    ),
    "du": Options(
        short="achHksSmLxb0lD",
        short_valued="dBt",
        long=_set(
            "--all --human-readable --summarize --total --apparent-size "
            "--si --count-links --dereference --one-file-system"
        ),
        long_valued=_set("--max-depth --block-size --threshold --exclude"),
    ),
    "df": Options(
        short="ahHiklPTx",
        short_valued="Bt",
        long=_set(
            "--all --human-readable --si --inodes --local --portability --print-type --total"
        ),
        long_valued=_set("--block-size --type --exclude-type --output"),
    ),
    "which": Options(short="a"),
    "type": Options(short="aftpP"),
    "basename": Options(
        short="az", short_valued="s", long=_set("--multiple --zero"), long_valued=_set("--suffix")
    ),
    "dirname": Options(short="z"),
    "realpath": Options(
        short="esqLPmz",
        long=_set("--canonicalize-existing --quiet --canonicalize-missing --no-symlinks"),
        long_valued=_set("--relative-to --relative-base"),
    ),
    "readlink": Options(short="femnqsvz"),
    "md5sum": _SUMS,
    "sha1sum": _SUMS,
    "sha256sum": _SUMS,
    "sha512sum": _SUMS,
    "b2sum": Options(short="bctwz", short_valued="l"),
    "shasum": Options(short="bctp0", short_valued="a"),
    "cksum": Options(),
    "comm": Options(
        short="123iz",
        long=_set("--check-order --nocheck-order --total"),
        long_valued=_set("--output-delimiter"),
    ),
    "column": Options(short="tnxeJ", short_valued="csoNRlE"),
    "diff": Options(
        short="qsuyciwbBEtTNaprdlq",
        short_valued="UCIDxXS",
        numeric=True,
        long=_set(
            "--brief --report-identical-files --unified --side-by-side "
            "--ignore-case --ignore-all-space --ignore-space-change "
            "--ignore-blank-lines --text --recursive --new-file --minimal "
            "--normal --expand-tabs --strip-trailing-cr --suppress-common-lines "
            "--no-dereference --speed-large-files"
        ),
        long_valued=_set("--label --exclude --ignore-matching-lines --width"),
        long_optional=_set("--color --unified --context"),
    ),
    "cmp": Options(
        short="blsz", short_valued="in", long=_set("--print-bytes --verbose --silent --quiet")
    ),
    "ps": Options(
        short="AaefFjlLuxwHTrMZ",
        short_valued="ostpGgUCq",
        long=_set("--forest --no-headers --headers"),
        long_valued=_set("--sort --format --pid --ppid --user"),
        positional=_ps_positional,
    ),
    "hostname": Options(
        short="fsiIdA", long=_set("--fqdn --short --ip-address --domain"), max_positional=0
    ),
    "uptime": Options(short="ps", long=_set("--pretty --since")),
    "free": Options(
        short="bkmghtwl", long=_set("--human --total --wide --si --bytes --kibi --mebi --gibi")
    ),
    "whoami": Options(),
    "uname": Options(
        short="asnrvmpio",
        long=_set("--all --kernel-name --nodename --kernel-release --kernel-version --machine"),
    ),
    "id": Options(short="gGnruz"),
    "groups": Options(),
    "pwd": Options(short="LP"),
    "echo": Options(short="neE", permute=False),
    "printf": Options(permute=False),  # `-v` is checked by _no_v_option
    "true": Options(),
    "false": Options(),
    "nproc": Options(long=_set("--all")),
    "arch": Options(),
    "locale": Options(short="akmv"),
    "tty": Options(short="s"),
    "expand": Options(short="i", short_valued="t"),
    "unexpand": Options(short="a", short_valued="t"),
    "fold": Options(short="bs", short_valued="w"),
    "fmt": Options(short="cstu", short_valued="wpg", numeric=True),
    "paste": Options(short="sz", short_valued="d"),
    "join": Options(short="iz", short_valued="aejotv12"),
    "look": Options(short="bdf", short_valued="t"),
    "cal": Options(short="13jmyw"),
    "sleep": Options(),
    "test": Options(permute=False, short="abcdefghkLnprsStuwxzGON", short_valued=""),
    "tree": _TREE,
    "jq": _JQ,
    "less": Options(short="NnSRrFXiIeEMm", short_valued="xy", positional=_no_plus_commands),
    "more": Options(positional=_no_plus_commands),
    "zcat": Options(short="fq"),
    "bzcat": Options(),
    "xzcat": Options(),
    "xxd": Options(short="pieEu", short_valued="clsgo", max_positional=1),
    "basenc": Options(
        short="diw", long=_set("--base64 --base64url --base32 --base32hex --base16 --decode")
    ),
    "base64": Options(
        short="diw", long=_set("--decode --ignore-garbage"), long_valued=_set("--wrap")
    ),
    "env": Options(),  # bare `env` prints the environment; asked below
    "numfmt": Options(long_valued=_set("--from --to --format --field --padding --suffix")),
    "cd": Options(short="LP", max_positional=1),
    "getconf": Options(),
    "lsb_release": Options(short="aidrc"),
    "printenv": Options(),
}
# Programs in SPECS that are asked about anyway (they print the environment).
_PRINTS_ENVIRONMENT = frozenset({"env", "printenv"})
_SPECIAL: dict[str, Callable[[Sequence[str]], str | None]] = {
    "find": _find_check,
    "awk": _awk_check,
    "gawk": _awk_check,
    "mawk": _awk_check,
    "sed": _sed_check,
    "tar": _tar_check,
    "git": _git_check,
    "printf": _no_v_option,
    "npm": _npm_check,
}


def words_reason(name: str, words: Sequence[str]) -> str | None:
    """None when `words` (program `name`, then its arguments) only reads, else why not."""
    if name in _PRINTS_ENVIRONMENT:
        return f"`{name}` prints the environment"
    special = _SPECIAL.get(name)
    if special is not None:
        reason = special(words)
        if reason is not None or name != "printf":
            return reason
    spec = SPECS.get(name)
    if spec is None:
        return f"`{name}` is not a known read-only command"
    return check_options(spec, name, list(words[1:]))


KNOWN_READERS = frozenset(SPECS) | frozenset(_SPECIAL)
__all__ = [
    "KNOWN_READERS",
    "SPECS",
    "Options",
    "check_options",
    "sed_script_reason",
    "words_reason",
]
