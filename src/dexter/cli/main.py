"""`dexter`: argument parsing and dispatch.

Only the standard library is imported at module level so that `dexter --help` starts fast; each
command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

from dexter.cli.argtypes import iso_day, valuation_days
from dexter.cli.completion import add_completion_parser
from dexter.cli.config_command import add_config_parser
from dexter.cli.cron_command import add_cron_parser
from dexter.cli.db_command import add_db_parser
from dexter.cli.eval_command import add_eval_parser
from dexter.cli.gateway_command import add_gateway_parser
from dexter.cli.keys_command import add_keys_parser
from dexter.cli.mcp_command import add_mcp_parser
from dexter.cli.memory_command import add_memory_parser
from dexter.cli.model_command import add_model_parser
from dexter.cli.models_command import add_models_parser
from dexter.cli.permissions_command import add_permissions_parser
from dexter.cli.principals_command import add_principals_parser
from dexter.cli.report_command import add_report_parser
from dexter.cli.watch_command import add_watch_parser
from dexter.cli.web_command import add_web_parser
from dexter.cli.workspace_command import add_workspace_parser

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe

# Raw text, so wrapped by hand to fit an 80-column terminal.
DESCRIPTION = """\
Dexter: an autonomous financial-research agent for the terminal.

Run `dexter` with no command for an interactive session, or `dexter ask
"question"` for one answer. Choose any model with --model provider:model (see
`dexter doctor`)."""

EPILOG = """\
examples:
  dexter ask "How did Apple's gross margin change from FY2023 to FY2025?"
  dexter ask -m anthropic:claude-sonnet-4-6 --json "NVDA revenue CAGR, 3 years"
  dexter tools run calculate \\
    --args '{"operation": "cagr", "start": 100, "end": 150, "years": 3}'
  dexter data income AAPL --period quarterly --limit 8
  dexter data filing-section NVDA --form 10-K --item 1A
  dexter --resume                       # continue the latest conversation
  dexter usage --by phase
  dexter doctor

exit status: 0 answered, 1 failed, 2 usage or configuration error (an
unwritable DEXTER_HOME included), 130 cancelled, 141 output pipe closed
(`dexter … | head`)."""


def _parser() -> argparse.ArgumentParser:
    # argparse looks each of its strings up in the gettext catalogues while the tree is built,
    # ~550 times, each time re-reading the locale variables and probing the disk for catalogue
    # files (~7 ms of every start, `--help` included). The answers cannot change within a
    # process, so each is looked up once while building; parsing and help use argparse as it is.
    translate = getattr(argparse, "_", None)
    if translate is None:  # a Python whose argparse no longer looks strings up this way
        return _build_parser()
    argparse._ = functools.cache(translate)  # type: ignore[attr-defined]
    try:
        return _build_parser()
    finally:
        argparse._ = translate  # type: ignore[attr-defined]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dexter",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=_RootHelp,
    )
    parser.add_argument(
        "--version", action=_Version, help="show the version and how Dexter was installed"
    )
    parser.add_argument(
        "--no-color", action="store_true", help="no colours or styles (as does NO_COLOR=1)"
    )
    parser.add_argument(
        "--debug", action="store_true", help="also print the log (dexter.log) to stderr"
    )
    model_help = (
        "model as provider:model, e.g. openai:gpt-5.6-sol (default: DEXTER_MODEL or settings)"
    )
    parser.add_argument("-m", "--model", metavar="MODEL", help=model_help)
    resume_help = "continue a saved session (default: the latest; see `dexter sessions list`)"
    parser.add_argument("--resume", nargs="?", const="latest", metavar="ID", help=resume_help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    ask = commands.add_parser(
        "ask",
        help="ask one question and stream the answer",
        description="Ask one question; the answer streams to stdout, tool activity to stderr.",
    )
    ask.add_argument(
        "question",
        nargs="*",
        help="the question (quote it, or pass several words); none or - reads it from stdin",
    )
    ask.add_argument("-m", "--model", dest="ask_model", metavar="MODEL", help=model_help)
    ask.add_argument("--json", action="store_true", help="print one JSON event per line")
    ask.add_argument(
        "-c",
        "--continue",
        dest="ask_resume",
        action="store_const",
        const="latest",
        help="continue the latest saved session",
    )
    ask.add_argument("--session", dest="ask_resume", metavar="ID", help="continue session ID")
    ask.add_argument(
        "--max-iterations", type=int, metavar="N", help="model rounds before answering (default 10)"
    )
    ask.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="also write a report of the answer: memo.md, memo.html, memo.pdf or memo.xlsx",
    )
    ask.add_argument(
        "--research",
        action="store_true",
        help="research answer profile: figures exactly as filed, every calculation shown",
    )
    ask.add_argument(
        "--as-of",
        dest="as_of",
        metavar="DATE",
        help="research as of DATE (YYYY-MM-DD): filings, facts and search hits filed later are "
        "hidden, and the prompt's date is DATE",
    )
    ask.add_argument(
        "--no-verify",
        dest="no_verify",
        action="store_true",
        help="do not check the answer's figures against the data (overrides the verify setting)",
    )

    tools = commands.add_parser("tools", help="list or run tools directly, without a model")
    tool_commands = tools.add_subparsers(dest="tools_command", metavar="ACTION", required=True)
    tools_list = tool_commands.add_parser("list", help="list the registered tools")
    tools_list.add_argument("--json", action="store_true", help="print names, flags and schemas")
    tools_list.add_argument(
        "--channel",
        default="cli",
        choices=("cli", "ask", "gateway", "cron", "mcp", "openbb", "web", "eval"),
        help="list what an agent on this channel binds (default: cli, the interactive session)",
    )
    tools_run = tool_commands.add_parser("run", help="run one tool with JSON arguments")
    tools_run.add_argument("name", help="tool name (see `dexter tools list`)")
    tools_run.add_argument("--args", default="{}", metavar="JSON", help="arguments as JSON object")
    tools_run.add_argument("--json", action="store_true", help="print the result as JSON")

    _add_data_parser(commands)
    _add_store_parsers(commands)
    add_permissions_parser(commands)
    add_principals_parser(commands)
    add_memory_parser(commands)
    add_keys_parser(commands)
    add_models_parser(commands)
    add_config_parser(commands)
    add_completion_parser(commands, parser)
    add_mcp_parser(commands)
    add_eval_parser(commands)
    add_report_parser(commands)
    add_model_parser(commands)
    add_cron_parser(commands)
    add_watch_parser(commands)
    add_web_parser(commands)
    add_workspace_parser(commands)
    add_gateway_parser(commands)
    add_db_parser(commands)

    doctor = commands.add_parser("doctor", help="show which providers and keys are configured")
    doctor.add_argument("-m", "--model", dest="doctor_model", metavar="MODEL", help=model_help)
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument(
        "--check",
        action="store_true",
        help="also ask each model endpoint (one tiny request each) whether it serves the model",
    )
    doctor.add_argument(
        "--health",
        action="store_true",
        help="only check that settings load and the database answers; exit 0 healthy, 1 not "
        "(for a container's HEALTHCHECK)",
    )
    doctor.add_argument(
        "--all",
        dest="show_all",
        action="store_true",
        help="every provider in full (default: those set up, and the rest on one line)",
    )
    _wrap_whole_words(parser)
    return parser


class _WholeWords(argparse.HelpFormatter):
    """Help wrapped at spaces only: the default also breaks after hyphens, which cut
    `YYYY-MM-DD.md` and `--max-iterations` across two lines."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        text = " ".join(text.split())
        return textwrap.wrap(text, width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        text = " ".join(text.split())
        return textwrap.fill(
            text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
        )


class _RootHelp(argparse.RawDescriptionHelpFormatter):
    """The top-level help: its description and examples are laid out by hand (kept as they
    are); its option help is wrapped at spaces only, as everywhere else."""

    _split_lines = _WholeWords._split_lines


def _wrap_whole_words(parser: argparse.ArgumentParser) -> None:
    """Every sub-command's help wraps at spaces only (subparsers do not inherit the root's
    formatter, and setting it on each of ~80 `add_parser` calls would be easy to forget)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.formatter_class = _WholeWords
                _wrap_whole_words(sub)


class _Version(argparse.Action):
    """`dexter --version`: the version and how this copy was installed (uv tool, pipx, a
    checkout), worked out only when asked, so that parsing stays fast."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from dexter.install import describe_installation

        print(describe_installation())
        parser.exit()


def _add_data_parser(commands: Any) -> None:
    data = commands.add_parser(
        "data",
        help="financial data without a model: statements, filings, insiders, holdings …",
        description="Fetch financial data directly. SEC EDGAR needs no key (set "
        "DEXTER_SEC_USER_AGENT); Financial Datasets is used when FINANCIAL_DATASETS_API_KEY "
        "is set.",
    )
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str, *, ticker: bool = True) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(
            name, help=help_text, description=f"{help_text[0].upper()}{help_text[1:]}."
        )
        if ticker:
            sub.add_argument("ticker", help="ticker, CIK or company name (quote names)")
        _json_or_csv(sub)
        sub.add_argument(
            "--as-of",
            dest="as_of",
            metavar="DATE",
            help="as of DATE (YYYY-MM-DD): nothing filed later is shown",
        )
        return sub

    for name, what in (
        ("income", "income statements"),
        ("balance", "balance sheets"),
        ("cashflow", "cash flow statements"),
        ("metrics", "financial ratios"),
    ):
        sub = action(name, f"{what}: the latest periods, oldest to newest")
        sub.add_argument("--period", choices=["annual", "quarterly", "ttm"], default="annual")
        sub.add_argument(
            "--limit", type=int, default=4, metavar="N", help="latest periods (default 4)"
        )
        sub.add_argument("--chart", action="store_true", help="draw the main lines below the table")
        if name == "metrics":
            sub.add_argument(
                "--on",
                action="append",
                type=valuation_days,
                metavar="DATE",
                help="valuation on DATE (repeatable; FROM..TO = every month-end between) from "
                "that day's close and the statements filed by then",
            )
    filings = action("filings", "recent filings with links")
    filings.add_argument("--form", action="append", metavar="FORM", help="e.g. 10-K (repeatable)")
    filings.add_argument("--limit", type=int, default=10, metavar="N", help="at most 1000")
    filings.add_argument(
        "--from", dest="filed_from", type=iso_day, metavar="DATE", help="filed on/after"
    )
    filings.add_argument(
        "--to", dest="filed_to", type=iso_day, metavar="DATE", help="filed on/before"
    )
    filings.add_argument(
        "--item", action="append", metavar="ITEM", help="8-K item, e.g. 2.02 (repeatable)"
    )
    documents = action("documents", "every document in one filing, with its type")
    documents.add_argument("accession", help="accession number, e.g. 0000320193-24-000123")
    document = action("document", "one document of any filing as text (exhibits, cover page)")
    document.add_argument("accession", help="accession number")
    document.add_argument(
        "--document",
        default="primary",
        help="primary (default), cover, an exhibit type such as EX-99.1, or a file name",
    )
    document.add_argument("--offset", type=int, default=0, metavar="N", help="start character")
    document.add_argument(
        "--max-chars", type=int, default=None, metavar="N", help="characters (default: all)"
    )
    search = action("search", "EDGAR full-text search over every filing since 2001", ticker=False)
    search.add_argument("query", help='words or a "quoted phrase"')
    search.add_argument("--form", action="append", metavar="FORM", help="e.g. 8-K (repeatable)")
    search.add_argument("--from", dest="start", type=iso_day, metavar="DATE", help="filed on/after")
    search.add_argument("--to", dest="end", type=iso_day, metavar="DATE", help="filed on/before")
    search.add_argument("--company", help="only this company (ticker, CIK or name)")
    search.add_argument("--offset", type=int, default=0, metavar="N", help="hits to skip")
    section = action("filing-section", "one item of a 10-K or 10-Q as clean text")
    section.add_argument("--form", default="10-K", help="10-K (default) or 10-Q")
    section.add_argument("--item", required=True, help='e.g. 1A, 7, "MD&A", "risk factors"')
    section.add_argument("--year", type=int, help="fiscal year filed (default: latest)")
    section.add_argument("--accession", help="a specific accession number")
    insiders = action("insider-trades", "insider transactions from Forms 4 and 5")
    insiders.add_argument("--limit", type=int, default=20, metavar="N")
    holdings = action("holdings", "a 13F filer's reported holdings", ticker=False)
    holdings.add_argument("--filer", required=True, metavar="CIK", help="13F filer CIK or name")
    shown = holdings.add_mutually_exclusive_group()
    shown.add_argument(
        "--limit", type=int, default=50, metavar="N", help="largest N positions (default 50)"
    )
    shown.add_argument(
        "--all", dest="limit", action="store_const", const=None, help="every position"
    )
    facts = action("facts", "the raw XBRL series for one concept")
    facts.add_argument("concept", help="e.g. Revenues or us-gaap:NetIncomeLoss")
    prices = action(
        "prices",
        "daily, weekly or monthly prices (Yahoo Finance without a key; symbols such "
        "as WSU.DE or EURUSD=X too)",
    )
    prices.add_argument(
        "--from", "--start", dest="start", type=iso_day, help="YYYY-MM-DD (default: 30 days ago)"
    )
    prices.add_argument(
        "--to", "--end", dest="end", type=iso_day, help="YYYY-MM-DD (default: today)"
    )
    prices.add_argument(
        "--interval", choices=["1d", "1wk", "1mo"], default="1d", help="bar length (default 1d)"
    )
    action("quote", "the latest price (as of a date with --as-of: that day's close)")
    news = action("news", "recent company news (needs a news provider)")
    news.add_argument("--limit", type=int, default=10, metavar="N")
    segments = action(
        "segments", "revenue and operating income by segment, geography and product (XBRL)"
    )
    segments.add_argument("--period", choices=["annual", "quarterly"], default="annual")
    segments.add_argument("--limit", type=int, default=4, metavar="N")
    segments.add_argument("--year", type=int, help="fiscal year of the 10-K/10-Q (default: latest)")
    screen = action(
        "screen", "rank companies by one reported value (SEC XBRL frames)", ticker=False
    )
    screen.add_argument("--concept", default="Revenues", help="XBRL concept (default Revenues)")
    screen.add_argument("--period", required=True, help="CY2024 (annual), CY2024Q4 or CY2024Q4I")
    screen.add_argument("--unit", default="USD")
    screen.add_argument("--min", type=float, dest="min_value", metavar="VALUE")
    screen.add_argument("--max", type=float, dest="max_value", metavar="VALUE")
    screen.add_argument("--limit", type=int, default=25, metavar="N")


def entry() -> int:
    """The process entry point: the `dexter` script and `python -m dexter`."""
    from dexter.cli import codecache, process

    process.pause()
    try:
        return main(cache_generated_code=True)
    finally:
        codecache.save()
        process.at_exit()


def main(argv: Sequence[str] | None = None, *, cache_generated_code: bool = False) -> int:
    """Run one command. `cache_generated_code` (the process entry only) serves the code that
    dataclasses generate from `dexter.cli.codecache`."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    problem = _undecodable(arguments)
    if problem:
        print(f"dexter: {problem}", file=sys.stderr)
        return EXIT_USAGE
    args = _parse(_parser(), arguments)
    if cache_generated_code:
        from dexter.cli import codecache

        codecache.enable()
    from dexter.log import configure_logging

    configure_logging(debug=args.debug)
    if args.no_color:
        import os

        # rich and textual both honour NO_COLOR (https://no-color.org).
        os.environ["NO_COLOR"] = "1"
    restore_styles = _plain_styles_without_colour()
    try:
        _pipe_errors_reach_main()
        return _dispatch(args)
    except KeyboardInterrupt:
        print("\nCancelled.", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return _reader_went_away()
    except OSError as error:
        print(f"dexter: {_describe_os_error(error)}", file=sys.stderr)
        return EXIT_USAGE if _under_home(error) else EXIT_FAILED
    except Exception as error:
        return _report(error)
    finally:
        restore_styles()


def _plain_styles_without_colour() -> Callable[[], None]:
    """With NO_COLOR (or --no-color), output carries no escape codes at all: rich drops only
    colours for NO_COLOR and keeps bold, dim and italic, which a reader who asked for plain text
    (a screen reader, a log, a terminal that shows them badly) does not want either. Every
    Console made without an explicit colour system gets none; the returned call undoes it (for
    callers of `main()` in-process)."""
    import os

    if not os.environ.get("NO_COLOR"):
        return lambda: None
    from rich.console import Console

    defaults = Console.__init__.__kwdefaults__
    if defaults is None or "color_system" not in defaults:  # a rich that changed its signature
        return lambda: None
    before = defaults["color_system"]
    defaults["color_system"] = None

    def restore() -> None:
        defaults["color_system"] = before

    return restore


def _parse(parser: argparse.ArgumentParser, arguments: list[str]) -> argparse.Namespace:
    """`parse_args`, except that an option no command knows is reported by the command it was
    given to, with that command's usage (argparse's own reports it from the top, with the usage
    of `dexter`, which lists none of the subcommand's options)."""
    args, unknown = parser.parse_known_args(arguments)
    if unknown:
        _chosen(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost subcommand parser that `args` went through."""
    current = parser
    while True:
        chooser = next(
            (a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None
        )
        name = getattr(args, chooser.dest, None) if chooser is not None else None
        if chooser is None or name not in chooser.choices:
            return current
        current = chooser.choices[name]


def _report(error: Exception) -> int:
    """The one place an error becomes what the user reads: a DexterError is its message (and
    hint) with its exit code; anything else is a bug, logged with its traceback, never shown."""
    from dexter.errors import DexterError
    from dexter.log import redact

    if isinstance(error, DexterError):
        # Its message may quote what a server sent back, a key included.
        print(f"dexter: {redact(str(error))}", file=sys.stderr)
        return error.exit_code
    import logging

    from dexter.log import log_path

    logging.getLogger("dexter").error("unexpected error", exc_info=error)
    detail = redact(f"{type(error).__name__}: {error}")
    print(f"dexter: unexpected error: {detail}, details in {log_path()}", file=sys.stderr)
    return EXIT_FAILED


def _undecodable(arguments: Sequence[str]) -> str | None:
    """Arguments that were not UTF-8 arrive with lone surrogates (PEP 383); nothing downstream
    (SQLite, JSON, the model) can carry them, so they are refused here, by position."""
    for position, argument in enumerate(arguments, 1):
        bad = next((ch for ch in argument if "\udc80" <= ch <= "\udcff"), None)
        if bad is not None:
            byte = ord(bad) - 0xDC00
            return (
                f"argument {position} is not valid UTF-8 (byte 0x{byte:02x}); "
                "pass text in UTF-8 (check your terminal's or script's encoding)."
            )
    return None


def _pipe_errors_reach_main() -> None:
    """rich answers a closed pipe with its own `SystemExit(1)`; its documented hook is made to
    raise instead, so every closed pipe ends the same way (exit 141, no message)."""
    from rich.console import Console

    def raise_it(self: Console) -> None:
        raise BrokenPipeError

    Console.on_broken_pipe = raise_it  # type: ignore[method-assign]


def _reader_went_away() -> int:
    """`dexter … | head`: the reader closed the pipe. Stop quietly, as other tools do; point
    stdout at /dev/null so the interpreter's final flush does not raise a second time."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _home() -> str:
    import os
    from pathlib import Path

    from dexter.config import default_home

    return str(default_home(Path.cwd(), os.environ))


def _under_home(error: OSError) -> bool:
    home = _home()
    return bool(home and error.filename and str(error.filename).startswith(home))


def _describe_os_error(error: OSError) -> str:
    what = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename else ""
    if _under_home(error):
        return (
            f"cannot write to the Dexter home directory{where}: {what}. Set DEXTER_HOME to a "
            "writable directory."
        )
    return f"{what}{where}."


def _dispatch(args: argparse.Namespace) -> int:
    if args.command != "ask":
        # `ask` resumes collection itself once its agent is built (see dexter.cli.process).
        from dexter.cli import process

        process.resume()
    if args.command == "ask":
        from dexter.cli.ask import read_question, run_ask

        return run_ask(
            read_question(args.question),
            model=args.ask_model or args.model,
            as_json=args.json,
            max_iterations=args.max_iterations,
            resume=args.ask_resume or args.resume,
            output=args.output,
            research=args.research,
            as_of=args.as_of,
            verify=False if args.no_verify else None,
        )
    if args.command == "tools":
        from dexter.cli.tools_command import run_tools_command

        return run_tools_command(args)
    if args.command == "data":
        from dexter.cli.data_command import run_data_command

        return run_data_command(args)
    if args.command == "memory":
        return int(args.memory_run(args))
    if getattr(args, "command_run", None) is not None:
        return int(args.command_run(args))
    if args.command == "mcp":
        from dexter.cli.mcp_command import run_mcp_command

        return run_mcp_command(args)
    if args.command == "model":
        from dexter.cli.model_command import run_model_command

        return run_model_command(args)
    if args.command == "report":
        from dexter.cli.report_command import run_report_command

        return run_report_command(args)
    if args.command in ("cron", "heartbeat", "daemon"):
        return int(args.cron_run(args))
    if args.command == "watch":
        return int(args.watch_run(args))
    if args.command == "eval":
        return int(args.eval_run(args))
    if args.command == "gateway":
        return int(args.gateway_run(args))
    if args.command == "permissions":
        from dexter.cli.permissions_command import run_permissions_command

        return run_permissions_command(args)
    if args.command in ("sessions", "usage"):
        return int(args.store_run(args))
    if args.command == "doctor" and args.health:
        from dexter.cli.health import run_health

        return run_health()
    if args.command == "doctor":
        from dexter.cli.doctor_command import run_doctor_command

        return run_doctor_command(
            args.doctor_model or args.model,
            as_json=args.json,
            check=args.check,
            show_all=args.show_all,
        )
    if not _on_terminals():
        # One line that fits 80 columns: a cron mail or a log shows it whole.
        message = 'no terminal for the interactive session; use dexter ask "…" instead.'
        print(f"dexter: {message}", file=sys.stderr)
        return EXIT_USAGE
    from dexter.cli.interactive_command import run_interactive_command

    return run_interactive_command(args.model, resume=args.resume)


def _on_terminals() -> bool:
    """Whether the full-screen session can run: it reads keys from stdin and draws on stderr
    (as textual does). Without both on a terminal (`echo q | dexter`, a cron line, `dexter
    2>log`) it would write escape codes nobody sees and wait for keys forever."""
    try:
        return all(s is not None and s.isatty() for s in (sys.stdin, sys.__stderr__))
    except (OSError, ValueError):  # closed or detached
        return False


def _add_store_parsers(commands: Any) -> None:
    """`dexter sessions list|show` and `dexter usage`; each sets `store_run` for dispatch."""

    def lazy(module: str, function: str) -> Any:
        # Handlers import rich and sqlite only when the command runs, keeping `--help` fast.
        def run(args: argparse.Namespace) -> int:
            import importlib

            return int(getattr(importlib.import_module(module), function)(args))

        return run

    sessions = commands.add_parser(
        "sessions",
        help="list, show, search or remove past sessions",
        description="Past conversations, newest first. Resume one with `dexter --resume ID`.",
    )
    sessions.set_defaults(store_run=lazy("dexter.cli.sessions_command", "run_sessions_command"))
    actions = sessions.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="recent sessions with turns, tokens and cost")
    listing.add_argument("--limit", type=int, default=20, metavar="N", help="rows (default 20)")
    listing.add_argument(
        "--principal",
        metavar="ID",
        help="only the sessions of this principal, e.g. telegram:222 (default: everyone's)",
    )
    _json_or_csv(listing)
    show = actions.add_parser("show", help="one session as Markdown: questions, answers, usage")
    show.add_argument("id", help="session id or a unique prefix of it")
    show.add_argument("--json", action="store_true", help="print JSON")
    search = actions.add_parser("search", help="sessions whose questions or answers mention TEXT")
    search.add_argument("text", help="words to look for (case-insensitive)")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="rows (default 20)")
    _json_or_csv(search)
    remove = actions.add_parser("rm", help="delete sessions (the usage ledger keeps their cost)")
    remove.add_argument("ids", nargs="+", metavar="ID", help="session ids or unique prefixes")
    remove.add_argument("--yes", action="store_true", help="don't ask for confirmation")

    usage = commands.add_parser(
        "usage",
        help="tokens and estimated cost, by model, tool, phase, day or principal",
        description="Tokens and estimated cost from the ledger: main loop, routers, compaction, "
        "memory, sub-agents and judge. Costs are estimates from list prices (override them with "
        '"prices" in settings.json).',
    )
    usage.set_defaults(store_run=lazy("dexter.cli.usage_command", "run_usage_command"))
    usage.add_argument("--session", metavar="ID", help="only this session (id or prefix)")
    usage.add_argument(
        "--by",
        choices=["model", "tool", "phase", "day", "session", "principal"],
        default="phase",
        help="how to group rows (default: phase)",
    )
    _json_or_csv(usage)


def _json_or_csv(parser: argparse.ArgumentParser) -> None:
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")
    output.add_argument("--csv", action="store_true", help="print CSV instead of a table")


if __name__ == "__main__":
    sys.exit(main())
