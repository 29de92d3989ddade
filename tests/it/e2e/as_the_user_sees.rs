//! The Judge sees what the user's own pytest sees, on projects shaped as
//! real ones are: a git-ignored `_version.py` that hatch-vcs or
//! setuptools-scm generated, an extension module built in place (an
//! ignored `.so`, compiled here with the system's C compiler), a package
//! that aliases third-party modules into its namespace through
//! `sys.modules` (requests' `packages.py`), and a package whose own
//! meta-path finder creates a virtual subpackage (toolz's `tlz`). Each is
//! installed as such projects are (`pip install -e .` into a virtualenv),
//! has one injected bug, and meets a model that proposes exactly the fix.
//! For each: swarm's baseline is pytest's in the checkout, test by test;
//! the fix is delivered; nothing ignored is committed or changed in the
//! checkout; `swarm doctor` finds no difference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::as_they_are::{editable_venv, error_line, fixing_model, run_with_model};
use super::summary_of;
use crate::support::fixture::read_log;
use crate::support::repo::TestRepo;

/// The outcome of every test of the checkout as the user's own pytest in
/// `venv` gives it (`PASSED`, `FAILED`, `ERROR`), by test id; no cache
/// nor bytecode is written in the checkout.
fn user_pytest(repo: &TestRepo, venv: &Path) -> BTreeMap<String, String> {
    let out = std::process::Command::new(venv.join("bin/python"))
        .args(["-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider"])
        .current_dir(&repo.root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut outcomes = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(2, ' ');
        let (Some(kind), Some(rest)) = (words.next(), words.next()) else {
            continue;
        };
        if matches!(kind, "PASSED" | "FAILED" | "ERROR") {
            let id = rest.split(" - ").next().unwrap_or(rest).to_string();
            outcomes.insert(id, kind.to_string());
        }
    }
    assert!(!outcomes.is_empty(), "pytest in the checkout:\n{text}");
    outcomes
}

/// swarm's baseline from the experiment log: `PASSED` or `FAILED` by id.
fn swarm_baseline(repo: &TestRepo) -> BTreeMap<String, String> {
    let log = read_log(&repo.tmp().join("cwd/logs/experiment_data.json"));
    let entry = log
        .iter()
        .find(|e| e["agent"] == "Auditor" && e["details"]["passing"].is_array())
        .expect("the Auditor's test run is logged");
    let mut outcomes = BTreeMap::new();
    for (key, kind) in [("passing", "PASSED"), ("failing", "FAILED")] {
        for id in entry["details"][key].as_array().expect("ids") {
            outcomes.insert(id.as_str().expect("an id").to_string(), kind.to_string());
        }
    }
    outcomes
}

/// The checkout's ignored files (outside the virtualenv and caches) with
/// their content.
fn ignored_files(repo: &TestRepo) -> BTreeMap<String, Vec<u8>> {
    repo.git(&["ls-files", "--others", "--ignored", "--exclude-standard"])
        .lines()
        .filter(|p| {
            !p.contains("__pycache__") && !p.starts_with("venv/") && !p.contains(".egg-info")
        })
        .map(|p| {
            (
                p.to_string(),
                std::fs::read(repo.root.join(p)).expect("read"),
            )
        })
        .collect()
}

/// A project under test: its repository, virtualenv, the buggy file and
/// the model's fix.
struct Project {
    repo: TestRepo,
    venv: PathBuf,
    file: &'static str,
    fix: fn(&str) -> String,
}

impl Project {
    /// Runs `swarm doctor` on the project in its virtualenv.
    fn doctor(&self) -> std::process::Output {
        let cwd = self.repo.tmp().join("cwd");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let target = self.repo.root.to_string_lossy().into_owned();
        let venv = self.venv.to_string_lossy().into_owned();
        crate::support::fixture::swarm_in(
            &cwd,
            &self.repo.home,
            &["doctor", "--target_dir", &target],
            &[("VIRTUAL_ENV", &venv)],
        )
    }

    /// Everything the issue asks of a project swarm can judge.
    fn judged_as_the_user_sees_it(&self) {
        let repo = &self.repo;
        let start = repo.head();
        let expected = user_pytest(repo, &self.venv);
        assert!(
            expected.values().any(|o| o == "FAILED"),
            "the injected bug fails a test in the checkout: {expected:?}"
        );
        let ignored = ignored_files(repo);

        let doctor = self.doctor();
        let report = String::from_utf8_lossy(&doctor.stdout);
        assert_eq!(
            doctor.status.code(),
            Some(0),
            "{report}\n{}",
            String::from_utf8_lossy(&doctor.stderr)
        );
        assert!(report.contains("no difference"), "{report}");
        assert_eq!(repo.head(), start);
        assert!(repo.git(&["status", "--porcelain"]).is_empty());
        assert_eq!(repo.git(&["branch", "--list", "swarm/*"]), "");
        assert_eq!(
            repo.git(&["worktree", "list"]).lines().count(),
            1,
            "no worktree made"
        );
        assert_eq!(
            ignored_files(repo),
            ignored,
            "the doctor changed no ignored file"
        );

        let server = fixing_model(self.file, self.fix);
        let venv = self.venv.to_string_lossy().into_owned();
        let out = run_with_model(
            repo,
            &server,
            &["--max-iterations", "2", "--no-generate-tests"],
            &[("VIRTUAL_ENV", &venv)],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let summary = summary_of(&out.stdout);
        assert_eq!(summary["status"], "success", "{summary}");
        // The baseline is the checkout's pytest, test by test.
        let failing_only = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(id, o)| (id.clone(), o != "PASSED"))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            failing_only(&swarm_baseline(repo)),
            failing_only(&expected),
            "{stderr}"
        );
        // The fix is delivered; nothing ignored is committed or changed.
        assert_ne!(repo.head(), start);
        let fixed = (self.fix)(&String::from_utf8_lossy(
            &std::process::Command::new("git")
                .args(["show", &format!("{start}:{}", self.file)])
                .current_dir(&repo.root)
                .output()
                .expect("git show")
                .stdout,
        ));
        assert_eq!(repo.read(self.file), fixed);
        let committed = repo.git(&["diff", "--name-only", &start, "HEAD"]);
        assert_eq!(committed, self.file, "only the fix is committed");
        assert_eq!(
            ignored_files(repo),
            ignored,
            "the ignored files are as they were"
        );
        assert!(repo.git(&["status", "--porcelain"]).is_empty());
        assert_eq!(
            user_pytest(repo, &self.venv)
                .values()
                .filter(|o| *o != "PASSED")
                .count(),
            0
        );
    }
}

/// The content hatch-vcs (through setuptools-scm) writes to `_version.py`.
const HATCH_VCS_VERSION: &str = "# file generated by setuptools-scm\n\
# don't change, don't track in version control\n\n\
__all__ = [\"__version__\", \"__version_tuple__\", \"version\", \"version_tuple\"]\n\n\
TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Tuple\n    from typing import Union\n\n    \
VERSION_TUPLE = Tuple[Union[int, str], ...]\nelse:\n    VERSION_TUPLE = object\n\n\
version: str\n__version__: str\n__version_tuple__: VERSION_TUPLE\nversion_tuple: VERSION_TUPLE\n\n\
__version__ = version = '4.12.1.dev3'\n__version_tuple__ = version_tuple = (4, 12, 1, 'dev3')\n";

/// The content older setuptools-scm (`write_to`) writes.
const SCM_VERSION: &str = "# coding: utf-8\n# file generated by setuptools_scm\n\
# don't change, don't track in version control\nversion = '2.0.1.dev4+g1a2b3c4'\n\
version_tuple = (2, 0, 1, 'dev4', 'g1a2b3c4')\n";

const ORDINAL_BUG: &str = "    if n % 100 in (11, 12, 13):\n        return f\"{n}th\"\n    return f\"{n}{suffixes[n % 10 + 1]}\"\n";
const ORDINAL_FIX: &str = "    if n % 100 in (11, 12, 13):\n        return f\"{n}th\"\n    return f\"{n}{suffixes[n % 10]}\"\n";

fn number_py(body: &str) -> String {
    format!(
        "\"\"\"Numbers for humans.\"\"\"\n\n\ndef ordinal(n):\n    \"\"\"1st, 2nd, 3rd, 4th.\"\"\"\n    \
         suffixes = [\"th\", \"st\", \"nd\", \"rd\", \"th\", \"th\", \"th\", \"th\", \"th\", \"th\"]\n{body}"
    )
}

const NUMBER_TESTS: &str = "import humane\nfrom humane.number import ordinal\n\n\n\
def test_ordinal():\n    assert [ordinal(n) for n in (1, 2, 3, 4, 11)] == [\"1st\", \"2nd\", \"3rd\", \"4th\", \"11th\"]\n\n\n\
def test_teens():\n    assert ordinal(12) == \"12th\"\n\n\n\
def test_version():\n    assert humane.__version__.count(\".\") >= 2\n";

/// A package whose `__init__` imports its generated version module.
fn version_project(src_layout: bool, version: &str, import: &str) -> Project {
    let package = if src_layout { "src/humane" } else { "humane" };
    let pyproject = "[build-system]\nrequires = [\"setuptools>=61\"]\n\
build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"humane\"\nversion = \"4.12.1\"\n";
    let init = format!("\"\"\"Humane numbers.\"\"\"\n\n{import}\nfrom .number import ordinal\n\n__all__ = [\"__version__\", \"ordinal\"]\n");
    let number = format!("{package}/number.py");
    let repo = TestRepo::with_files(&[
        ("pyproject.toml", pyproject),
        (
            ".gitignore",
            &format!("{package}/_version.py\n*.egg-info/\nbuild/\n__pycache__/\nvenv/\n"),
        ),
        (&format!("{package}/__init__.py"), &init),
        (&number, &number_py(ORDINAL_BUG)),
        ("tests/test_number.py", NUMBER_TESTS),
    ]);
    // What the build backend writes at install time.
    repo.write(&format!("{package}/_version.py"), version);
    let venv = editable_venv(&repo, &[]);
    Project {
        repo,
        venv,
        file: if src_layout {
            "src/humane/number.py"
        } else {
            "humane/number.py"
        },
        fix: |t| t.replace(ORDINAL_BUG, ORDINAL_FIX),
    }
}

#[test]
fn a_generated_version_module_hatch_vcs_wrote_is_in_the_judged_worktree() {
    version_project(true, HATCH_VCS_VERSION, "from ._version import __version__")
        .judged_as_the_user_sees_it();
}

#[test]
fn a_generated_version_module_setuptools_scm_wrote_is_in_the_judged_worktree() {
    version_project(
        false,
        SCM_VERSION,
        "from ._version import version as __version__",
    )
    .judged_as_the_user_sees_it();
}

/// An extension module: `clamp` in C.
const SPEEDUPS_C: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *clamp(PyObject *self, PyObject *args) {
    long value, low, high;
    if (!PyArg_ParseTuple(args, "lll", &value, &low, &high)) {
        return NULL;
    }
    if (value < low) {
        value = low;
    }
    if (value > high) {
        value = high;
    }
    return PyLong_FromLong(value);
}

static PyMethodDef methods[] = {
    {"clamp", clamp, METH_VARARGS, "Clamp value to [low, high]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
"#;

const SCALE_BUG: &str = "    return [clamp(v * factor, 0, 100) for v in value]\n";
const SCALE_FIX: &str = "    return [clamp(v * factor, 0, 100) for v in values]\n";

/// A package with an extension module built in place by `pip install -e .`
/// (setuptools runs `build_ext --inplace`): the `.so` is git-ignored.
fn extension_project() -> Project {
    extension_project_with(SPEEDUPS_C)
}

/// [`extension_project`] with `source` its C file.
fn extension_project_with(source: &str) -> Project {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\n\
             build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"fastmath\"\n\
             version = \"0.3.0\"\n\n[tool.setuptools]\npackages = [\"fastmath\"]\n",
        ),
        (
            "setup.py",
            "from setuptools import Extension, setup\n\n\
             setup(ext_modules=[Extension(\"fastmath._speedups\", [\"fastmath/_speedups.c\"])])\n",
        ),
        (".gitignore", "*.so\n*.egg-info/\nbuild/\n__pycache__/\n"),
        ("fastmath/_speedups.c", source),
        (
            "fastmath/__init__.py",
            "\"\"\"Fast arithmetic.\"\"\"\n\nfrom ._speedups import clamp\nfrom .scale import scale\n\n\
             __all__ = [\"clamp\", \"scale\"]\n",
        ),
        (
            "fastmath/scale.py",
            &format!(
                "\"\"\"Scaling.\"\"\"\n\nfrom ._speedups import clamp\n\n\n\
                 def scale(values, factor):\n    \"\"\"Each value times factor, within 0..100.\"\"\"\n{SCALE_BUG}"
            ),
        ),
        (
            "tests/test_scale.py",
            "from fastmath import clamp, scale\n\n\n\
             def test_clamp():\n    assert clamp(150, 0, 100) == 100\n\n\n\
             def test_scale():\n    assert scale([1, 30, 60], 2) == [2, 60, 100]\n",
        ),
    ]);
    let venv = editable_venv(&repo, &[]);
    let built = repo.git(&[
        "ls-files",
        "--others",
        "--ignored",
        "--exclude-standard",
        "fastmath",
    ]);
    assert!(
        built.contains("_speedups.") && built.contains(".so"),
        "built in place: {built}"
    );
    Project {
        repo,
        venv,
        file: "fastmath/scale.py",
        fix: |t| t.replace(SCALE_BUG, SCALE_FIX),
    }
}

#[test]
fn an_extension_module_built_in_place_is_in_the_judged_worktree() {
    extension_project().judged_as_the_user_sees_it();
}

/// requests' `packages.py`, as it is upstream (with `chardet` falling back
/// to `charset_normalizer`).
const PACKAGES_PY: &str = r#"import sys

try:
    import chardet
except ImportError:
    import warnings

    import charset_normalizer as chardet

    warnings.filterwarnings("ignore", "Trying to detect", module="charset_normalizer")

# This code exists for backwards compatibility reasons.
# I don't like it either. Just look the other way. :)

for package in ("urllib3", "idna"):
    locals()[package] = __import__(package)
    # This traversal is apparently necessary such that the identities are
    # preserved (requests.packages.urllib3.* is urllib3.*)
    for mod in list(sys.modules):
        if mod == package or mod.startswith(f"{package}."):
            sys.modules[f"webby.packages.{mod}"] = sys.modules[mod]

if chardet is not None:
    target = chardet.__name__
    for mod in list(sys.modules):
        if mod == target or mod.startswith(f"{target}."):
            imported_mod = sys.modules[mod]
            sys.modules[f"webby.packages.{mod}"] = imported_mod
            mod = mod.replace(target, "chardet")
            sys.modules[f"webby.packages.{mod}"] = imported_mod
"#;

const JOIN_BUG: &str = "    return base.rstrip(\"/\") + path\n";
const JOIN_FIX: &str = "    return base.rstrip(\"/\") + \"/\" + path.lstrip(\"/\")\n";

/// A package that aliases third-party modules into its namespace.
fn aliasing_project() -> Project {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\n\
             build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"webby\"\n\
             version = \"2.32.0\"\ndependencies = [\"urllib3\", \"idna\", \"charset_normalizer\"]\n\n\
             [tool.setuptools]\npackages = [\"webby\"]\n",
        ),
        (".gitignore", "*.egg-info/\nbuild/\n__pycache__/\n"),
        (
            "webby/__init__.py",
            "\"\"\"HTTP for humans, smaller.\"\"\"\n\nimport urllib3\n\nfrom . import packages, utils\n\
             from .utils import join_url\n\n__all__ = [\"join_url\", \"packages\", \"utils\"]\n",
        ),
        ("webby/packages.py", PACKAGES_PY),
        (
            "webby/utils.py",
            &format!(
                "\"\"\"Helpers.\"\"\"\n\n\ndef join_url(base, path):\n    \"\"\"base and path, one slash between.\"\"\"\n{JOIN_BUG}"
            ),
        ),
        (
            "tests/test_webby.py",
            "import sys\n\nimport urllib3\n\nimport webby\nfrom webby import join_url\n\n\n\
             def test_packages_alias_the_vendored_modules():\n    \
             assert sys.modules[\"webby.packages.urllib3\"] is urllib3\n    \
             assert webby.packages.urllib3 is urllib3\n\n\n\
             def test_join_url():\n    assert join_url(\"http://x/\", \"a\") == \"http://x/a\"\n",
        ),
    ]);
    let venv = editable_venv(&repo, &[]);
    Project {
        repo,
        venv,
        file: "webby/utils.py",
        fix: |t| t.replace(JOIN_BUG, JOIN_FIX),
    }
}

#[test]
fn modules_aliased_into_the_project_namespace_are_not_its_code_from_elsewhere() {
    aliasing_project().judged_as_the_user_sees_it();
}

/// toolz's `tlz/_build_tlz.py` as it is upstream: a finder in
/// `sys.meta_path` that builds `tlz.*` from `cytoolz.*` or `toolz.*`.
const BUILD_TLZ: &str = r#"import sys
import types
import toolz
from importlib import import_module
from importlib.machinery import ModuleSpec


class TlzLoader:
    """ Finds and loads ``tlz`` modules when added to sys.meta_path"""
    def __init__(self):
        self.always_from_toolz = {
            toolz.pipe,
        }

    def _load_toolz(self, fullname):
        rv = {}
        package, dot, submodules = fullname.partition('.')
        try:
            module_name = ''.join(['cytoolz', dot, submodules])
            rv['cytoolz'] = import_module(module_name)
        except ImportError:
            pass
        try:
            module_name = ''.join(['toolz', dot, submodules])
            rv['toolz'] = import_module(module_name)
        except ImportError:
            pass
        if not rv:
            raise ImportError(fullname)
        return rv

    def find_module(self, fullname, path=None):  # pragma: py3 no cover
        package, dot, submodules = fullname.partition('.')
        if package == 'tlz':
            return self

    def load_module(self, fullname):  # pragma: py3 no cover
        if fullname in sys.modules:  # pragma: no cover
            return sys.modules[fullname]
        spec = ModuleSpec(fullname, self)
        module = self.create_module(spec)
        sys.modules[fullname] = module
        self.exec_module(module)
        return module

    def find_spec(self, fullname, path, target=None):  # pragma: no cover
        package, dot, submodules = fullname.partition('.')
        if package == 'tlz':
            return ModuleSpec(fullname, self)

    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        toolz_mods = self._load_toolz(module.__name__)
        fast_mod = toolz_mods.get('cytoolz') or toolz_mods['toolz']
        slow_mod = toolz_mods.get('toolz') or toolz_mods['cytoolz']
        module.__dict__.update(toolz.merge(fast_mod.__dict__, module.__dict__))
        package = fast_mod.__package__
        if package is not None:
            package, dot, submodules = package.partition('.')
            module.__package__ = ''.join(['tlz', dot, submodules])
        if not module.__doc__:
            module.__doc__ = fast_mod.__doc__

        # show file from toolz during introspection
        try:
            module.__file__ = slow_mod.__file__
        except AttributeError:
            pass

        for k, v in fast_mod.__dict__.items():
            tv = slow_mod.__dict__.get(k)
            try:
                hash(tv)
            except TypeError:
                tv = None
            if tv in self.always_from_toolz:
                module.__dict__[k] = tv
            elif (
                isinstance(v, types.ModuleType)
                and v.__package__ == fast_mod.__name__
            ):
                package, dot, submodules = v.__name__.partition('.')
                module_name = ''.join(['tlz', dot, submodules])
                submodule = import_module(module_name)
                module.__dict__[k] = submodule


tlz_loader = TlzLoader()
sys.meta_path.append(tlz_loader)
tlz_loader.exec_module(sys.modules['tlz'])
"#;

const TLZ_INIT: &str =
    "\"\"\"``tlz`` mirrors the ``toolz`` API and uses ``cytoolz`` if possible.\n\n\
The ``tlz`` package is installed when ``toolz`` is installed.  It provides\n\
a convenient way to use functions from ``cytoolz``--a faster Cython\n\
implementation of ``toolz``--if it is installed, otherwise it uses\n\
functions from ``toolz``.\n\"\"\"\n\nfrom . import _build_tlz\n";

const TEST_TLZ: &str = "import toolz\n\n\n\
def test_tlz():\n    import tlz\n    tlz.pipe\n    tlz.functoolz.compose\n    \
assert tlz.__package__ == 'tlz'\n    assert tlz.__name__ == 'tlz'\n    \
assert tlz.functoolz.__name__ == 'tlz.functoolz'\n    m1 = tlz.functoolz\n    \
import tlz.functoolz as m2\n    assert m1 is m2\n    import tlz.utils\n    \
assert tlz.utils.raises is toolz.utils.raises\n    try:\n        import tlz.badsubmodulename\n        \
1/0\n    except ImportError:\n        pass\n";

const LAST_BUG: &str = "    for item in seq:\n        pass\n    return seq[0]\n";
const LAST_FIX: &str = "    for item in seq:\n        pass\n    return item\n";

/// toolz's shape: `toolz` and the virtual `tlz` built by its own finder.
fn own_finder_project() -> Project {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\n\
             build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"toolz\"\n\
             version = \"1.0.0\"\n\n[tool.setuptools]\npackages = [\"toolz\", \"tlz\"]\n",
        ),
        (".gitignore", "*.egg-info/\nbuild/\n__pycache__/\n"),
        (
            "toolz/__init__.py",
            "\"\"\"List processing tools and functional utilities.\"\"\"\n\n\
             from .itertoolz import *\nfrom .functoolz import *\nfrom .dicttoolz import merge\n\
             from . import utils\n\ncomp = compose\n",
        ),
        (
            "toolz/itertoolz.py",
            &format!(
                "\"\"\"Iterator tools.\"\"\"\n\n__all__ = (\"first\", \"last\")\n\n\n\
                 def first(seq):\n    \"\"\"The first element.\"\"\"\n    return next(iter(seq))\n\n\n\
                 def last(seq):\n    \"\"\"The last element.\"\"\"\n{LAST_BUG}"
            ),
        ),
        (
            "toolz/functoolz.py",
            "\"\"\"Function tools.\"\"\"\n\n__all__ = (\"compose\", \"identity\", \"pipe\")\n\n\n\
             def identity(x):\n    \"\"\"x.\"\"\"\n    return x\n\n\n\
             def pipe(data, *funcs):\n    \"\"\"data through funcs, left to right.\"\"\"\n    \
             for func in funcs:\n        data = func(data)\n    return data\n\n\n\
             def compose(*funcs):\n    \"\"\"funcs, right to left.\"\"\"\n    \
             return lambda x: pipe(x, *reversed(funcs))\n",
        ),
        (
            "toolz/dicttoolz.py",
            "\"\"\"Dictionary tools.\"\"\"\n\n\ndef merge(*dicts):\n    \"\"\"One dict of all.\"\"\"\n    \
             rv = {}\n    for d in dicts:\n        rv.update(d)\n    return rv\n",
        ),
        (
            "toolz/utils.py",
            "\"\"\"Utilities.\"\"\"\n\n\ndef raises(err, lamda):\n    \"\"\"Whether lamda() raises err.\"\"\"\n    \
             try:\n        lamda()\n        return False\n    except err:\n        return True\n",
        ),
        ("toolz/tests/test_tlz.py", TEST_TLZ),
        (
            "toolz/tests/test_itertoolz.py",
            "from toolz import first, last\n\n\n\
             def test_first():\n    assert first('abc') == 'a'\n\n\n\
             def test_last():\n    assert last(iter('abc')) == 'c'\n",
        ),
        ("tlz/__init__.py", TLZ_INIT),
        ("tlz/_build_tlz.py", BUILD_TLZ),
    ]);
    let venv = editable_venv(&repo, &[]);
    Project {
        repo,
        venv,
        file: "toolz/itertoolz.py",
        fix: |t| t.replace(LAST_BUG, LAST_FIX),
    }
}

#[test]
fn a_virtual_subpackage_the_project_own_finder_creates_loads_as_for_the_user() {
    own_finder_project().judged_as_the_user_sees_it();
}

#[test]
fn a_difference_swarm_cannot_remove_stops_before_any_model_call() {
    // The same extension, with 33 MiB of tables compiled in: over the size
    // swarm copies into its worktree. The user's pytest imports it; the
    // worktree cannot.
    let project = extension_project_with(&format!(
        "{SPEEDUPS_C}\n__attribute__((used)) static const char tables[33 * 1024 * 1024] = {{1}};\n"
    ));
    let repo = &project.repo;
    let start = repo.head();
    let expected = user_pytest(repo, &project.venv);
    assert_eq!(
        expected
            .get("tests/test_scale.py::test_clamp")
            .map(String::as_str),
        Some("PASSED")
    );
    let server = fixing_model(project.file, project.fix);
    let venv = project.venv.to_string_lossy().into_owned();
    let out = run_with_model(
        repo,
        &server,
        &["--max-iterations", "2"],
        &[("VIRTUAL_ENV", &venv)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(server.requests().len(), 0, "no model request");
    let line = error_line(&out);
    assert!(
        line.contains(
            "the module fastmath._speedups is importable in your checkout (fastmath/_speedups."
        ) && line
            .contains("but not in swarm's worktree: it is git-ignored and 33 MiB, over the 32 MiB")
            && line.contains("build it smaller"),
        "{line}"
    );
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("swarm: error"))
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(repo.head(), start);
    let doctor = project.doctor();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{report}");
    assert!(
        report.contains("tests/test_scale.py::test_clamp"),
        "{report}"
    );
    assert!(report.contains("fastmath._speedups"), "{report}");
}
