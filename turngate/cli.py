"""`evals <subcommand>`: the one installed command. Each subcommand is a thin argparse front end
(turngate/commands/) over library functions. Ctrl-C during start-up and a missing dependency are
made one line and exit 2 before any subcommand's heavy imports."""
from __future__ import annotations

import importlib
import sys

from turngate.core import cli_support as cli

# subcommand -> the module whose main(argv) runs it
COMMANDS = {
    "gate": "turngate.commands.regression",
    "compare": "turngate.commands.compare",
    "show": "turngate.commands.show",
    "regrade": "turngate.commands.regrade",
    "report": "turngate.commands.report",
    "calibrate": "turngate.commands.calibrate",
    "calibrate-judge": "turngate.commands.calibrate_judge",
    "simulate": "turngate.commands.simulate",
    "merge": "turngate.commands.merge",
    "review": "turngate.commands.review",
    "mutate": "turngate.commands.mutate",
}

SUMMARY = {
    "gate": "run the dataset through an agent version and judge it against the bars (exit 0/1/2)",
    "compare": "compare two results files (or versions) pair by pair",
    "show": "a results file's verdict, or one row's transcript and scores",
    "regrade": "judge a results file again, with its own bars unless told otherwise",
    "report": "an HTML report of a results file",
    "calibrate": "run the accepted version and write the bars and the reference",
    "calibrate-judge": "measure a judge against human labels",
    "simulate": "simulated users against an agent; failures become dataset rows",
    "merge": "merge the shards of one gate into one results file and verdict",
    "review": "read failing runs in a local page: notes, labels, failure modes, their export",
    "mutate": "mutation testing of the prompt and settings: which edits would the gate not notice",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {SUMMARY[name]}" for name in COMMANDS]
    return "usage: evals <command> [options]   (evals <command> --help for its options)\n\ncommands:\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli.exit_quietly_on_interrupt()
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return cli.EXIT_PASS if args else cli.EXIT_UNJUDGED
    name, rest = args[0], args[1:]
    module = COMMANDS.get(name) or COMMANDS.get(name.replace("_", "-"))
    if module is None:
        sys.stderr.write(f"error: evals: unknown command {name!r} (one of: {', '.join(COMMANDS)})\n")
        return cli.EXIT_UNJUDGED
    cli.set_invoked(name.replace("_", "-"))
    return importlib.import_module(module).main(rest)


def run(argv: list[str] | None = None) -> None:
    """The console script, and a project's own launcher (`run(["gate", *sys.argv[1:]])`): main(),
    then the process ends with its exit code (cli_support.end_process), so a SIGTERM while
    Python shuts down is still one line and exit 2, never the OS's 143."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's --help (0) and usage errors (2)
        code = exc.code
        if isinstance(code, str):
            sys.stderr.write(code + "\n")
            code = cli.EXIT_UNJUDGED
    cli.end_process(code if isinstance(code, int) else cli.EXIT_PASS if code is None else cli.EXIT_UNJUDGED)
