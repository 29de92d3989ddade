"""swarm's import guard: in every Python process swarm runs on a run's
worktree (pytest, the import checks, the behaviour probe, and any Python
the tests start), the project's code is imported from the worktree, never
from the user's checkout or an installed copy of the project.

Embedded in the swarm binary and written into the process's sandbox cell
with ``sitecustomize.py`` (which installs the guard, then runs the
interpreter's own ``sitecustomize`` when there is one) and
``_swarm_worktree.json`` beside it. That folder is on ``PYTHONPATH``, so the
guard is in place before ``-m pytest`` runs and before any test, plugin or
``conftest.py`` is imported, after the interpreter's ``.pth`` files ran.

What it does, in order:

* a ``sys.path`` entry inside the user's checkout (an editable install's
  ``.pth`` path, such as ``<checkout>/src``) is replaced by the same folder
  in the worktree, when the worktree has it;
* the worktree's copy of every folder an import finder maps a module to
  (setuptools' and other editable finders' tables) becomes a source root;
* the source roots swarm found (``src/``, the project's declared package
  folders) go first on ``sys.path``;
* a finder first in ``sys.meta_path`` answers for every module the
  worktree's folders on ``sys.path`` hold (standard-library names aside):
  the worktree's copy wins over an installed or editable one, and a
  submodule of such a package that the worktree lacks is not found;
* a module of the project already imported from elsewhere (by a ``.pth``
  file) is forgotten, to be imported again from the worktree.

A submodule of a worktree package that the worktree's folders lack is left
to the other finders, so the project's own import machinery works as it
does for the user (toolz's ``tlz`` builds ``tlz.utils`` from
``toolz.utils`` with a finder of its own); only when what they find is a
file outside the worktree (the checkout's or an installed copy's) is it
not found, as the worktree lacks it.

At exit, every module of the project's own files that still came from
outside the worktree is written to the report file, one JSON line per
process, with its cause; swarm reads it and refuses to judge such a run.
A module of the project's own files is one loaded from the user's checkout
(a file the worktree also has), or a first-party module whose file is a
copy of one the worktree holds (an installed copy). An alias is not:
``sys.modules["requests.packages.urllib3"] = urllib3`` (requests'
``packages.py``) names a third-party module under the project's name, and
that module's own ``__name__`` says so.
"""

import atexit
import importlib.machinery
import importlib.util
import json
import os
import sys

_CONFIG_NAME = "_swarm_worktree.json"
_STATE = {"guard": None}
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)
# The interpreter's start-up hooks (this one among them): never the project's.
_STARTUP = frozenset(["sitecustomize", "usercustomize"])


def _real(path):
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_namespace(spec):
    return spec.origin in (None, "namespace") and spec.submodule_search_locations is not None


def _is_alias(name, module):
    """Whether ``sys.modules[name]`` is a module known under another name
    (``sys.modules["pkg.packages.x"] = x``)."""
    own = getattr(module, "__name__", None)
    return isinstance(own, str) and own != name


def _root_of(path):
    """The folder to put on sys.path for a module file or package folder."""
    if os.path.basename(path) == "__init__.py":
        path = os.path.dirname(path)
    return os.path.dirname(path.rstrip(os.sep))


class _Guard:
    def __init__(self, config):
        self.worktree = _real(config["worktree"])
        checkout = config.get("checkout")
        self.checkout = _real(checkout) if checkout else None
        self.roots = [_real(r) for r in config.get("roots", [])]
        self.report = config.get("report")
        self.first_party = set()
        self._entries = (None, [])

    def counterpart(self, path):
        """The worktree's copy of a path in the user's checkout, when the
        worktree has one."""
        if self.checkout is None or not _inside(path, self.checkout):
            return None
        if _inside(path, self.worktree):
            return None
        rel = os.path.relpath(path, self.checkout)
        candidate = self.worktree if rel == "." else os.path.join(self.worktree, rel)
        return candidate if os.path.exists(candidate) else None

    def in_worktree(self, path):
        return _inside(_real(path), self.worktree)

    def worktree_entries(self):
        """The worktree's folders on sys.path, in order (the working
        directory first when it is in the worktree: -m and -c put it there)."""
        key = tuple(p for p in sys.path if isinstance(p, str))
        if self._entries[0] == key:
            return self._entries[1]
        found = []
        for entry in (os.getcwd(),) + key:
            path = _real(entry or os.getcwd())
            if _inside(path, self.worktree) and path not in found and os.path.isdir(path):
                found.append(path)
        self._entries = (key, found)
        return found

    def install(self):
        for i, entry in enumerate(list(sys.path)):
            if not isinstance(entry, str) or not entry:
                continue
            moved = self.counterpart(_real(entry))
            if moved is not None and os.path.isdir(moved):
                sys.path[i] = moved
        for root in self._mapped_roots():
            if root not in self.roots:
                self.roots.append(root)
        for root in reversed(self.roots):
            if not os.path.isdir(root):
                continue
            while root in sys.path:
                sys.path.remove(root)
            sys.path.insert(0, root)
        self._forget_foreign()
        sys.meta_path.insert(0, _WorktreeFinder(self))
        atexit.register(self.write_report)

    def _mapped_roots(self):
        """The worktree's copies of the folders editable finders map modules
        to (tables of name -> path on the finder or its module)."""
        roots = []
        for finder in list(sys.meta_path):
            owner = sys.modules.get(getattr(finder, "__module__", None) or "")
            holders = [finder, owner]
            if not isinstance(finder, type):
                holders.append(type(finder))
            for holder in holders:
                for value in list(getattr(holder, "__dict__", {}).values()):
                    if not isinstance(value, dict):
                        continue
                    for path in list(value.values()):
                        if not isinstance(path, str) or not os.path.isabs(path):
                            continue
                        moved = self.counterpart(_real(path))
                        if moved is None:
                            continue
                        root = _root_of(moved)
                        if root not in roots:
                            roots.append(root)
        return roots

    def _forget_foreign(self):
        entries = self.worktree_entries()
        for name, module in list(sys.modules.items()):
            top = name.partition(".")[0]
            file = getattr(module, "__file__", None)
            if top in _STDLIB or top in _STARTUP or top.startswith("_swarm"):
                continue
            if _is_alias(name, module):
                continue
            if not isinstance(file, str):
                continue
            real = _real(file)
            if self.in_worktree(real):
                continue
            ours = self.counterpart(real) is not None
            if not ours:
                try:
                    spec = importlib.machinery.PathFinder.find_spec(top, entries)
                except (ImportError, ValueError):
                    spec = None
                ours = spec is not None and not _is_namespace(spec)
            if ours:
                del sys.modules[name]

    def outside(self):
        """Modules of the project's own files loaded from outside the
        worktree, each with its cause."""
        found = []
        for name, module in list(sys.modules.items()):
            if name.startswith("_swarm") or name in _STARTUP or _is_alias(name, module):
                continue
            file = getattr(module, "__file__", None)
            if not isinstance(file, str):
                continue
            real = _real(file)
            if self.in_worktree(real):
                continue
            loader = getattr(module, "__loader__", None)
            loader = type(loader).__name__ if loader is not None else ""
            top = name.partition(".")[0]
            if self.counterpart(real) is not None:
                cause = "checkout"
            elif top in self.first_party and self.copy_of_own_file(name, real):
                cause = "installed"
            else:
                continue
            found.append({"module": name, "path": real, "loader": loader, "cause": cause})
        return found

    def copy_of_own_file(self, name, real):
        """Whether ``real``, the file module ``name`` was loaded from, is a
        copy of a file the worktree holds at the same place in the
        package (an installed copy of the project)."""
        parts = name.split(".")
        base = os.path.basename(real)
        if base.startswith("__init__."):
            rel = os.path.join(*(parts + [base]))
        else:
            if base.partition(".")[0] != parts[-1]:
                return False
            rel = os.path.join(*(parts[:-1] + [base]))
        if not real.endswith(os.sep + rel):
            return False
        for entry in self.worktree_entries() + self.roots:
            if os.path.exists(os.path.join(entry, rel)):
                return True
        return False

    def write_report(self):
        if not self.report:
            return
        found = self.outside()
        if not found:
            return
        try:
            with open(self.report, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"pid": os.getpid(), "outside": found}) + "\n")
        except OSError:
            pass


class _WorktreeFinder:
    """First in sys.meta_path: the worktree's copy of a module wins."""

    def __init__(self, guard):
        self.guard = guard

    def find_spec(self, fullname, path=None, target=None):
        guard = self.guard
        top = fullname.partition(".")[0]
        if path is None:
            if top in _STDLIB or top in _STARTUP or top.startswith("_swarm"):
                return None
            entries = guard.worktree_entries()
            spec = importlib.machinery.PathFinder.find_spec(fullname, entries)
            if spec is None:
                return self._moved_to_worktree(fullname)
            if _is_namespace(spec):
                # A namespace portion: the other portions on sys.path join it
                # (and a regular package elsewhere wins, as Python has it).
                rest = [e for e in sys.path if isinstance(e, str) and _real(e or ".") not in entries]
                return importlib.machinery.PathFinder.find_spec(fullname, entries + rest)
            guard.first_party.add(top)
            return spec
        if top not in guard.first_party:
            return None
        locations = [p for p in path if isinstance(p, str)]
        if not locations or not all(guard.in_worktree(p) for p in locations):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, locations)
        if spec is None:
            return self._not_in_worktree(fullname, path, target)
        return spec

    def _not_in_worktree(self, fullname, path, target):
        """A submodule of a worktree package that its folders lack: what
        the other finders make of it (a module the project's own finder
        creates), None when none does, not found when what they find is a
        file outside the worktree."""
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is None:
                continue
            origin = spec.origin
            if (
                spec.has_location
                and isinstance(origin, str)
                and os.path.isabs(origin)
                and not self.guard.in_worktree(origin)
            ):
                raise ModuleNotFoundError("No module named %r" % fullname, name=fullname)
            return spec
        return None

    def _moved_to_worktree(self, fullname):
        """The worktree's copy of a top-level module that sys.path finds
        in the user's checkout (through a link tree, say): None when it is
        found elsewhere or not at all."""
        guard = self.guard
        if guard.checkout is None:
            return None
        elsewhere = [e for e in sys.path if isinstance(e, str)]
        try:
            found = importlib.machinery.PathFinder.find_spec(fullname, elsewhere)
        except (ImportError, ValueError):
            return None
        if found is None or not isinstance(found.origin, str) or _is_namespace(found):
            return None
        moved = guard.counterpart(_real(found.origin))
        if moved is None:
            return None
        root = _root_of(moved)
        spec = importlib.machinery.PathFinder.find_spec(fullname, [root])
        if spec is None:
            return None
        if root not in sys.path:
            sys.path.insert(0, root)
        guard.first_party.add(fullname)
        return spec

    def invalidate_caches(self):
        self.guard._entries = (None, [])


def report_now():
    """Writes the guard's report now: for a process that ends with
    ``os._exit`` (swarm's pytest plugin does, once the results are
    written), where no ``atexit`` handler runs."""
    guard = _STATE["guard"]
    if guard is not None:
        guard.write_report()


def install():
    """Installs the guard once, from the configuration beside this file;
    the guard (None without a configuration)."""
    if _STATE["guard"] is not None:
        return _STATE["guard"]
    config_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _CONFIG_NAME)
    try:
        with open(config_path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return None
    guard = _Guard(config)
    _STATE["guard"] = guard
    guard.install()
    return guard


def chain_sitecustomize(own_file):
    """Runs the interpreter's own sitecustomize, which ours shadows."""
    own_dir = _real(os.path.dirname(os.path.abspath(own_file)))
    entries = [e for e in sys.path if isinstance(e, str) and _real(e or os.getcwd()) != own_dir]
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", entries)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # pylint: disable=broad-except
        # What site.py itself does with a failing sitecustomize.
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n")
        sys.stderr.write("%s: %s\n" % (type(err).__name__, err))
