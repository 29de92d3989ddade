"""swarm's pylint driver: one pylint run, reported file by file.

Run as `python -c <bootstrap>` with this text in SWARM_PYLINT_DRIVER and
pylint's own arguments. pylint runs through its `Run` class, so the user's
configuration (pylintrc, pyproject.toml, setup.cfg, tox.ini) applies as it
would on the command line. After a marker line it prints one JSON object:

- "messages": every message with the fields of pylint's json2 output, the
  path relative to the working directory, and "counted": false for those
  that came before pylint reset its counters to start checking (problems
  in the configuration): they are shown but not in the score;
- "statements": the statements pylint counted in each file it checked (a
  file it could not parse counts none);
- "evaluation": the configuration's score expression.

That is all the score needs, file by file, so swarm can lint in batches
and from a cache and still give the score one run over all files gives.
Works with pylint 2.12 to 4.x (it uses `Run.LinterClass`,
`PyLinter.check_astroid_module` and the reporter interface).
"""
import json
import os
import sys

MARKER = "@@swarm-pylint-report@@"


def relative(path):
    """A path relative to the working directory, without a leading `./`."""
    if not path:
        return ""
    if os.path.isabs(path):
        try:
            path = os.path.relpath(path)
        except ValueError:
            return path
    while path.startswith("./"):
        path = path[2:]
    return path


def main(argv):
    from pylint.lint import PyLinter, Run
    from pylint.reporters import BaseReporter

    statements = {}
    messages = []
    # Messages before this index came before the counters were reset.
    counted_from = [0]

    class Recorder(BaseReporter):
        """Keeps every message; displays nothing."""

        name = "swarm-recorder"

        def __init__(self):
            BaseReporter.__init__(self, output=sys.stderr)

        def handle_message(self, msg):
            path = getattr(msg, "abspath", None) or getattr(msg, "path", "")
            messages.append(
                {
                    "type": getattr(msg, "category", ""),
                    "symbol": getattr(msg, "symbol", ""),
                    "message": getattr(msg, "msg", ""),
                    "messageId": getattr(msg, "msg_id", ""),
                    "line": getattr(msg, "line", None),
                    "column": getattr(msg, "column", None),
                    "path": relative(path),
                    "counted": True,
                }
            )

        def display_messages(self, layout):
            pass

        def display_reports(self, layout):
            pass

        def _display(self, layout):
            pass

    class Linter(PyLinter):
        """Counts the statements of each file it checks."""

        def open(self):
            PyLinter.open(self)
            counted_from[0] = len(messages)

        def check_astroid_module(self, ast_node, *args, **kwargs):
            walker = kwargs.get("walker", args[0] if args else None)
            before = walker.nbstatements
            result = PyLinter.check_astroid_module(self, ast_node, *args, **kwargs)
            path = relative(getattr(ast_node, "file", None) or self.current_file)
            statements[path] = statements.get(path, 0) + walker.nbstatements - before
            return result

    class DriverRun(Run):
        LinterClass = Linter

    run = DriverRun(argv, reporter=Recorder(), exit=False)
    for message in messages[: counted_from[0]]:
        message["counted"] = False
    evaluation = getattr(run.linter.config, "evaluation", None)
    sys.stdout.write("\n" + MARKER + "\n")
    json.dump(
        {"messages": messages, "statements": statements, "evaluation": evaluation},
        sys.stdout,
    )
    sys.stdout.write("\n")
    sys.stdout.flush()


main(sys.argv[1:])
