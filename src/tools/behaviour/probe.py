"""swarm's behaviour probe: runs the functions of a module at its best state
(the original) and as changed, on the same inputs, and writes what each
returned, raised or refused.

Usage: python probe.py REQUEST.json RESULT.json

Written into a sandbox cell and run there by swarm (src/tools/behaviour);
nothing needs installing. The request names the module, the original source,
the function pairs to compare and the call sites found in the repository.
With `"mode": "api"` it checks a module's public names instead, by Python's
rules as griffe reads them (`__all__`; else what the module defines without a
leading underscore, a redundant alias, and in a package's `__init__` what it
re-exports from the project; a plain import is not API): each must still be
importable from the same module in the changed tree (or from where the task
renamed it; the old name too when the instruction asks to keep it), with the
same parameters and behaviour: functions on the same inputs, renamed names
mapped in the values, classes with the same public attributes, values equal.
Side effects are refused while the module is imported and while a function
runs (an audit hook stops file writes, processes, sockets; stdin reads
fail; anything printed at import counts): a module with such effects at
import is "not checked", a call with them is skipped.

Nothing the module's code raises ends the probe: ``SystemExit`` and
``KeyboardInterrupt`` (a CLI's ``main()``, ``sys.exit``), and ``os._exit``
(replaced while the code runs) are an outcome of their own, "exit", and the
function is reported not checked; anything that escapes the probe itself
still leaves a result saying why nothing was compared. Only a crash (or an
``os._exit`` reached some other way) can end the process without a result,
and swarm reports that as "not checked" too.
"""

import ast
import copy
import importlib
import importlib.util
import inspect
import io
import itertools
import json
import math
import os
import re
import signal
import sys
import time
import types

START = time.monotonic()


class SideEffect(BaseException):
    """Raised by the guard: the code tried something a probe must not do."""


class Timeout(BaseException):
    """Raised by the alarm: a call or an import took too long."""


class HardExit(BaseException):
    """Raised in place of os._exit while the guard is on: the code would end
    the interpreter without unwinding."""


def refuse_hard_exit(*_):
    raise HardExit()


GUARD = {"on": False}
WRITE_MODES = re.compile(r"[wax+]")
BLOCKED = {
    "subprocess.Popen": "starts a process",
    "os.system": "starts a process",
    "os.exec": "starts a process",
    "os.posix_spawn": "starts a process",
    "os.fork": "starts a process",
    "socket.connect": "opens a network connection",
    "socket.bind": "opens a network connection",
    "socket.getaddrinfo": "looks up a network address",
    "os.remove": "deletes files",
    "os.rename": "renames files",
    "os.rmdir": "deletes folders",
    "os.mkdir": "creates folders",
    "shutil.rmtree": "deletes folders",
    "builtins.input": "reads standard input",
}


def audit(event, args):
    if not GUARD["on"]:
        return
    if event == "open":
        mode = args[1] if len(args) > 1 else "r"
        flags = args[2] if len(args) > 2 else 0
        writing = isinstance(mode, str) and WRITE_MODES.search(mode)
        if writing or (isinstance(flags, int) and flags & 0o3):
            raise SideEffect("writes files")
        return
    reason = BLOCKED.get(event)
    if reason:
        raise SideEffect(reason)


class NoStdin(io.TextIOBase):
    def read(self, *_):
        raise SideEffect("reads standard input")

    readline = read


def on_alarm(*_):
    raise Timeout()


def guarded(fn, seconds):
    """fn() with the guard on, stdout captured and an alarm: (result, printed)."""
    out = io.StringIO()
    saved = sys.stdout, sys.stderr, sys.stdin
    hard_exit = os._exit
    sys.stdout, sys.stderr, sys.stdin = out, out, NoStdin()
    os._exit = refuse_hard_exit
    signal.setitimer(signal.ITIMER_REAL, seconds)
    GUARD["on"] = True
    try:
        return fn(), out.getvalue()
    finally:
        GUARD["on"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        os._exit = hard_exit
        sys.stdout, sys.stderr, sys.stdin = saved


def import_problem(load, seconds):
    """Why loading a module is not safe to probe, or None."""
    try:
        _, printed = guarded(load, seconds)
    except SideEffect as err:
        return "its import %s" % err
    except Timeout:
        return "its import takes longer than %ss" % seconds
    except SystemExit:
        return "its import exits"
    except BaseException as err:  # pylint: disable=broad-except
        return "its import raises %s: %s" % (type(err).__name__, err)
    if printed:
        return "its import prints"
    return None


ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def shown(value):
    try:
        text = repr(value)
    except Exception as err:  # pylint: disable=broad-except
        text = "<repr raised %s>" % type(err).__name__
    text = ADDRESS.sub("", text)
    return text if len(text) <= 300 else text[:300] + "..."


def outcome_of(fn, args, kwargs, seconds):
    """What one call did: value, raised, timeout or side_effect."""
    def call():
        result = fn(*args, **kwargs)
        if inspect.isgenerator(result):
            result = list(itertools.islice(result, 1000))
        return result

    try:
        value, printed = guarded(call, seconds)
    except SideEffect as err:
        return {"kind": "side_effect", "shown": str(err)}
    except Timeout:
        return {"kind": "timeout", "shown": "no result within %ss" % seconds}
    except RecursionError:
        return {"kind": "raised", "type": "RecursionError", "shown": "raises RecursionError"}
    except Exception as err:  # pylint: disable=broad-except
        name = type(err).__name__
        return {"kind": "raised", "type": name, "shown": "raises %s" % name}
    except HardExit:
        return {"kind": "exit", "type": "os._exit", "shown": "calls os._exit"}
    except BaseException as err:  # pylint: disable=broad-except
        # SystemExit, KeyboardInterrupt, GeneratorExit: the call would end
        # the interpreter, not return.
        name = type(err).__name__
        return {"kind": "exit", "type": name, "shown": "raises %s" % name}
    text = shown(value)
    if printed:
        text += " and prints %s" % shown(printed)
    return {
        "kind": "value",
        "value": value,
        "type": type(value).__name__,
        "shown": text,
        "printed": printed,
        "args_after": shown((args, kwargs)),
    }


def same(before, after):
    if before["kind"] != after["kind"]:
        return False
    if before["kind"] == "raised":
        return before["type"] == after["type"]
    if before["kind"] != "value":
        return True
    if before["type"] != after["type"] or before["args_after"] != after["args_after"]:
        return False
    if before["printed"] != after["printed"]:
        return False
    a, b = before["value"], after["value"]
    try:
        if a == b:
            return True
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
    except Exception:  # pylint: disable=broad-except
        pass
    return before["shown"] == after["shown"] and "object>" not in before["shown"]


LIST_NAMES = re.compile(r"(values|items|numbers|nums|data|xs|ys|seq|scores|list|lst|arr|array|elements|entries|.*s)$")
INT_NAMES = re.compile(r"^(n|i|j|k|count|size|index|idx|num|limit|times|width|height|length|depth|level|year|month|day|start|end|step|bits)$")
FLOAT_NAMES = re.compile(r"^(x|y|z|value|ratio|rate|amount|price|total|weight|factor|celsius|fahrenheit|temp|temperature|percent|p|q|score)$")
STR_NAMES = re.compile(r"(^|_)(name|text|string|s|word|line|path|prefix|suffix|key|label|title|message|msg|sep|char|url|file|filename|pattern)$")
BOOL_NAMES = re.compile(r"^(is_|has_|flag|verbose|enabled|strict|reverse|debug)")

SAMPLES = {
    "int": [0, 1, 7, -3, 1024],
    "float": [0.0, 1.5, -2.25, 100.0],
    "str": ["", "abc", "Hello World", "a.log"],
    "bool": [True, False],
    "list": [[1, 2, 3], [2.5, -1.0, 4.0], [], [7], [3, 1, 2, 2]],
    "dict": [{}, {"a": 1, "b": 2}],
}


def kind_of(param):
    ann = param.annotation
    if ann is not inspect.Parameter.empty:
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
        text = str(text).lower()
        for kind in ("bool", "int", "float", "str", "dict"):
            if text.startswith(kind):
                return kind
        if text.startswith(("list", "sequence", "iterable", "tuple", "typing.list", "typing.sequence")):
            return "list"
    if param.default is not inspect.Parameter.empty and param.default is not None:
        kind = type(param.default).__name__
        if kind in SAMPLES:
            return kind
        if kind == "tuple":
            return "list"
    name = param.name.lower()
    if BOOL_NAMES.match(name):
        return "bool"
    if INT_NAMES.match(name):
        return "int"
    if FLOAT_NAMES.match(name):
        return "float"
    if STR_NAMES.search(name):
        return "str"
    if LIST_NAMES.match(name):
        return "list"
    return "int"


def sample_inputs(fn, limit):
    """Type-guided argument lists for fn: (text, args) pairs."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = [
        p for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is inspect.Parameter.empty
    ]
    if any(p.kind == p.KEYWORD_ONLY and p.default is inspect.Parameter.empty for p in params):
        return []
    pools = [SAMPLES[kind_of(p)] for p in positional]
    count = max([len(pool) for pool in pools] + [1])
    inputs = []
    for i in range(min(count, limit)):
        args = [pool[i % len(pool)] for pool in pools]
        inputs.append(args)
    return inputs


def literal_call(text):
    """(args, kwargs) of a call text whose arguments are all literals."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError("not a call")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    if len(kwargs) != len(node.keywords):
        raise ValueError("** arguments")
    return args, kwargs


def call_text(name, args, kwargs):
    parts = [shown(a) for a in args] + ["%s=%s" % (k, shown(v)) for k, v in kwargs.items()]
    return "%s(%s)" % (name, ", ".join(parts))


def load_changed(request):
    sys.path[:0] = [request["import_root"], request["root"]]
    module = {}

    def load():
        module["it"] = importlib.import_module(request["module"])

    problem = import_problem(load, request["import_timeout"])
    if problem:
        return None, problem
    # A second import from scratch must work too.
    sys.modules.pop(request["module"], None)
    problem = import_problem(load, request["import_timeout"])
    if problem:
        return None, "it cannot be imported twice: " + problem
    return module["it"], None


def fresh_module(request):
    name = request["module"]
    module = types.ModuleType(name)
    module.__file__ = request["path"]
    module.__package__ = name.rpartition(".")[0]
    return module


def load_original(request, changed_source):
    """The original module; when its text does not compile, the changed module
    with each original function put back (the "spliced" original)."""
    module = fresh_module(request)
    try:
        code = compile(request["original"], request["path"], "exec", dont_inherit=True)
        spliced = False
    except SyntaxError:
        code = compile(changed_source, request["path"], "exec", dont_inherit=True)
        spliced = True
    problem = import_problem(lambda: exec(code, module.__dict__), request["import_timeout"])
    if problem:
        return None, spliced, set(), problem
    missing = set()
    if spliced:
        for pair in request["pairs"]:
            try:
                fcode = compile(pair["original_source"], request["path"], "exec", dont_inherit=True)
                exec(fcode, module.__dict__)  # pylint: disable=exec-used
            except Exception:  # pylint: disable=broad-except
                missing.add(pair["original"])
    return module, spliced, missing, None


def probe(request):
    result = {"module": request["module"], "functions": [], "not_checked": None, "spliced": False}
    with open(request["path"], encoding="utf-8") as handle:
        changed_source = handle.read()
    changed, problem = load_changed(request)
    if problem:
        result["not_checked"] = "as changed, " + problem
        return result
    original, spliced, missing, problem = load_original(request, changed_source)
    result["spliced"] = spliced
    if problem:
        result["not_checked"] = "at the best state, " + problem
        return result
    sites = {}
    for site in request["calls"]:
        sites.setdefault(site["function"], []).append(site["call"])
    for pair in request["pairs"]:
        entry = {"function": pair["changed"], "calls": [], "not_checked": None}
        result["functions"].append(entry)
        before_fn = getattr(original, pair["original"], None)
        after_fn = getattr(changed, pair["changed"], None)
        if pair["original"] in missing:
            entry["not_checked"] = "its text at the best state does not compile on its own"
            continue
        if not (inspect.isfunction(before_fn) and inspect.isfunction(after_fn)):
            entry["not_checked"] = "not a plain function in both versions"
            continue
        inputs = []
        for text in sites.get(pair["original"], []) + sites.get(pair["changed"], []):
            try:
                args, kwargs = literal_call(text)
            except (ValueError, SyntaxError, TypeError):
                continue
            inputs.append(("call site", args, kwargs))
        for args in sample_inputs(before_fn, request["max_samples"]):
            inputs.append(("sample", args, {}))
        seen = set()
        for source, args, kwargs in inputs[: request["max_calls"]]:
            if time.monotonic() - START > request["deadline"]:
                entry["not_checked"] = "the check ran out of time (%ss)" % request["deadline"]
                break
            text = call_text(pair["changed"], args, kwargs)
            if text in seen:
                continue
            seen.add(text)
            before = outcome_of(before_fn, copy.deepcopy(args), copy.deepcopy(kwargs), request["call_timeout"])
            after = outcome_of(after_fn, copy.deepcopy(args), copy.deepcopy(kwargs), request["call_timeout"])
            if before["kind"] == "exit" and entry["not_checked"] is None:
                how = "calls" if before["type"] == "os._exit" else "raises"
                entry["not_checked"] = "calling it %s %s, which ends the interpreter" % (
                    how, before["type"])
            entry["calls"].append({
                "call": text,
                "source": source,
                "before_kind": before["kind"],
                "after_kind": after["kind"],
                "before": before["shown"],
                "after": after["shown"],
                "same": same(before, after),
            })
    return result


def inside(path, root):
    path = os.path.realpath(path or "")
    return path == root or path.startswith(root + os.sep)


def project_module(node, root):
    """Whether an `import from` names a module of the project."""
    if node.level > 0:
        return True
    if not node.module:
        return False
    try:
        spec = importlib.util.find_spec(node.module)
        return bool(spec and spec.origin and inside(spec.origin, root))
    except Exception:  # pylint: disable=broad-except
        return False


def declared_names(source, root, package):
    """The public names a module's text gives, by Python's rules as griffe
    reads them: what it defines or assigns without a leading underscore;
    of what it imports, only a redundant alias (`import x as x`,
    `from m import x as x`) or, in a package's `__init__`, a name imported
    from the project (a re-export). A plain import in a module is not its
    API. `__all__`, when the module has one, replaces all of this."""
    tree = ast.parse(source)
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            names.append(node.target.id)
        elif isinstance(node, ast.Import):
            names.extend(a.asname for a in node.names if a.asname and a.asname == a.name)
        elif isinstance(node, ast.ImportFrom):
            exported = package and project_module(node, root)
            for alias in node.names:
                if alias.name == "*":
                    continue
                if exported or alias.asname == alias.name:
                    names.append(alias.asname or alias.name)
    seen = []
    for name in names:
        if not name.startswith("_") and name not in seen:
            seen.append(name)
    return seen


def renamed_text(text, renames):
    """`text` with every renamed name (its last dotted part) in its new
    form: a repr that differs only by a rename the task asked for is the
    same value."""
    for old, new in renames.items():
        short_old = old.rpartition(".")[2]
        short_new = new.rpartition(".")[2]
        if short_old != short_new:
            text = re.sub(r"\b%s\b" % re.escape(short_old), short_new, text)
    return text


def parameters(fn):
    """(name, kind, default) of fn's parameters, or None."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [
        (p.name, p.kind.name, None if p.default is inspect.Parameter.empty else shown(p.default))
        for p in params
    ]


def signature_break(before, after):
    """How after's parameters break callers of before, or None: a parameter
    removed, renamed, reordered or of another kind, a default removed or
    changed, a new one without a default."""
    old, new = parameters(before), parameters(after)
    if old is None or new is None or old == new:
        return None
    old_names = [p[0] for p in old]
    new_names = [p[0] for p in new]
    gone = [n for n in old_names if n not in new_names]
    if gone:
        return "parameter(s) %s removed" % ", ".join(gone)
    if new_names[: len(old_names)] != old_names:
        return "parameters reordered: (%s), now (%s)" % (", ".join(old_names), ", ".join(new_names))
    for (name, kind, default), (_, new_kind, new_default) in zip(old, new):
        if kind != new_kind:
            return "parameter %s was %s, now %s" % (name, kind.lower(), new_kind.lower())
        if default != new_default:
            return "parameter %s default was %s, now %s" % (name, default, new_default)
    required = [
        p[0] for p in new[len(old):]
        if p[2] is None and p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")
    ]
    if required:
        return "new required parameter(s) %s" % ", ".join(required)
    return None


def lookup(changed, name):
    """The object a public name now stands for: `name` in the changed module,
    or a dotted `module.Name` it was renamed to."""
    if "." in name:
        module_name, _, attr = name.rpartition(".")
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    return getattr(changed, name)


def mapped(outcome, renames):
    """A call's outcome at the best state as the renames the task asked for
    would show it: its repr and type name in their new form. A value the
    same but for a renamed class compares by its repr."""
    if not renames or outcome["kind"] not in ("value", "raised"):
        return outcome
    outcome = dict(outcome)
    outcome["shown"] = renamed_text(outcome["shown"], renames)
    outcome["type"] = renamed_text(outcome["type"], renames)
    if outcome["kind"] == "value":
        outcome["args_after"] = renamed_text(outcome["args_after"], renames)
        if renamed_text(type(outcome["value"]).__name__, renames) != type(outcome["value"]).__name__:
            outcome["value"] = Unequal()
    return outcome


class Unequal:
    """Stands for a value of a renamed class: equal to nothing, so the
    outcomes compare by their (renamed) reprs."""

    def __eq__(self, other):
        return False

    __hash__ = None


def compare_function(before_fn, after_fn, label, sites, request):
    inputs = []
    for text in sites:
        try:
            args, kwargs = literal_call(text)
        except (ValueError, SyntaxError, TypeError):
            continue
        inputs.append(("call site", args, kwargs))
    for args in sample_inputs(before_fn, request["max_samples"]):
        inputs.append(("sample", args, {}))
    calls, differences, seen = 0, [], set()
    for source, args, kwargs in inputs[: request["max_calls"]]:
        if time.monotonic() - START > request["deadline"]:
            break
        text = call_text(label, args, kwargs)
        if text in seen:
            continue
        seen.add(text)
        before = outcome_of(before_fn, copy.deepcopy(args), copy.deepcopy(kwargs), request["call_timeout"])
        after = outcome_of(after_fn, copy.deepcopy(args), copy.deepcopy(kwargs), request["call_timeout"])
        before = mapped(before, request["renames"])
        if before["kind"] in ("timeout", "side_effect") or after["kind"] == "side_effect":
            continue
        if not same(before, after):
            if before["kind"] == "raised" and after["kind"] == "raised" and source != "call site":
                continue
            if before["kind"] == "value" and "object>" in before["shown"]:
                # An object without equality or a repr of its own: nothing to compare by.
                continue
        calls += 1
        if not same(before, after):
            differences.append("%s was %s, now %s" % (text, before["shown"], after["shown"]))
    return calls, differences


def compare_name(name, original, changed, request, sites):
    renamed = request["renames"].get(name, name)
    entry = {"name": name, "now": renamed, "status": "same", "detail": "", "calls": 0}
    before = getattr(original, name, None)
    if before is None and renamed != name:
        # The best-state text ran with the renames applied (it imported
        # the old name): the object is there under its new name.
        before = getattr(original, renamed.rpartition(".")[2], None)
    kept = renamed != name and name in request.get("keep", [])
    if kept and not hasattr(changed, name):
        entry["status"] = "missing"
        entry["detail"] = "the instruction asks to keep %s; it is no longer here" % name
        return entry
    try:
        after = lookup(changed, renamed)
    except Exception as err:  # pylint: disable=broad-except
        if not kept:
            entry["status"] = "missing"
            entry["detail"] = "%s: %s" % (type(err).__name__, err)
            return entry
        # Kept under its old name only: compared there.
        entry["now"] = name
        after = getattr(changed, name)
    if inspect.isfunction(before) or inspect.isclass(before):
        broken = signature_break(before, after) if callable(after) else None
        if broken:
            entry["status"] = "different"
            entry["detail"] = broken
            return entry
    if inspect.isfunction(before):
        if not callable(after):
            entry["status"] = "different"
            entry["detail"] = "was a function, now %s" % type(after).__name__
            return entry
        calls, differences = compare_function(before, after, renamed, sites.get(name, []), request)
        entry["calls"] = calls
        if differences:
            entry["status"] = "different"
            entry["detail"] = "; ".join(differences[:3])
        elif not calls:
            entry["status"] = "not_compared"
            entry["detail"] = "no call could be compared"
    elif inspect.isclass(before):
        if not inspect.isclass(after):
            entry["status"] = "different"
            entry["detail"] = "was a class, now %s" % type(after).__name__
            return entry
        lost = sorted(a for a in vars(before) if not a.startswith("_") and not hasattr(after, a))
        if lost:
            entry["status"] = "different"
            entry["detail"] = "lost " + ", ".join(lost)
    elif not (inspect.ismodule(before) or callable(before)):
        same_value = False
        try:
            same_value = bool(before == after)
        except Exception:  # pylint: disable=broad-except
            pass
        if not same_value and renamed_text(shown(before), request["renames"]) != shown(after):
            entry["status"] = "different"
            entry["detail"] = "was %s, now %s" % (shown(before), shown(after))
    return entry


def load_original_text(request):
    """The module as its best-state text defines it, run in the changed tree:
    (module, None), or (None, why not). When that text no longer imports
    (it imported a name the task renamed), it is run with the renames
    applied, as it would read had the rename been made there too."""
    problem = None
    for source in (request["original"], renamed_text(request["original"], request["renames"])):
        module = fresh_module(request)
        try:
            code = compile(source, request["path"], "exec", dont_inherit=True)
        except SyntaxError:
            return None, "its text at the best state does not compile"
        problem = import_problem(lambda: exec(code, module.__dict__), request["import_timeout"])  # pylint: disable=cell-var-from-loop
        if not problem:
            return module, None
        if not request["renames"]:
            break
    return None, "at the best state, " + problem


def probe_api(request):
    """Every public name of the module's original text, looked up at the same
    path in the changed tree (or where the task renamed it) and compared."""
    result = {"module": request["module"], "names": [], "not_checked": None}
    sys.path[:0] = [request["import_root"], request["root"]]
    root = os.path.realpath(request["root"])
    package = os.path.basename(request["path"]) == "__init__.py"
    names = declared_names(request["original"], root, package)
    original, problem = load_original_text(request)
    if problem:
        result["not_checked"] = problem
        return result
    listed = getattr(original, "__all__", None)
    if isinstance(listed, (list, tuple)):
        names = [n for n in listed if isinstance(n, str)]
    holder = {}

    def load():
        holder["it"] = importlib.import_module(request["module"])

    failure = None
    try:
        _, printed = guarded(load, request["import_timeout"])
    except (Exception, SideEffect, Timeout, SystemExit) as err:  # pylint: disable=broad-except
        # A module renamed or deleted whole: what moved elsewhere is still
        # compared there; what stayed is missing.
        failure = "the module no longer imports: %s" % type(err).__name__
    sites = {}
    for site in request["calls"]:
        sites.setdefault(site["function"], []).append(site["call"])
    for name in names:
        now = request["renames"].get(name, name)
        if failure is not None and "." not in now:
            result["names"].append({
                "name": name, "now": now, "status": "missing", "detail": failure, "calls": 0,
            })
            continue
        result["names"].append(compare_name(name, original, holder.get("it"), request, sites))
    return result


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    sys.setrecursionlimit(2000)
    sys.dont_write_bytecode = True
    sys.addaudithook(audit)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        result = probe_api(request) if request.get("mode") == "api" else probe(request)
        text = json.dumps(result)
    except BaseException as err:  # pylint: disable=broad-except
        # Whatever escaped (the module's code at its second import, an
        # exit from a place the calls do not guard): nothing was compared.
        GUARD["on"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        text = json.dumps({
            "module": request["module"],
            "functions": [],
            "names": [],
            "not_checked": "the probe stopped: %s: %s" % (type(err).__name__, shown(err)),
            "spliced": False,
        })
    GUARD["on"] = False
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
