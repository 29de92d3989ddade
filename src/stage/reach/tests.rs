use super::*;
use crate::pipeline::TestOutcome;

#[test]
fn traceback_files_come_first_then_imports() {
    let files: Vec<String> = [
        "pkg/__init__.py",
        "pkg/models.py",
        "pkg/report.py",
        "util.py",
        "tests/test_r.py",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let failing = vec![TestCase {
        id: "tests/test_r.py::test_total".into(),
        outcome: TestOutcome::Failed,
        message: Some("assert 3 == 4".into()),
        details: Some("pkg/report.py:12: in total\n    return x\nE assert".into()),
    }];
    let read = |p: &str| {
        (p == "tests/test_r.py").then(|| "from pkg.models import Item\nimport util\n".to_string())
    };
    let order = implicated_files(
        &failing,
        &files,
        &read,
        &["pkg/report.py".into(), "pkg/__init__.py".into()],
    );
    assert_eq!(
        order,
        vec![
            "pkg/report.py",
            "pkg/models.py",
            "util.py",
            "pkg/__init__.py"
        ]
    );
}

#[test]
fn each_file_sees_the_failures_that_concern_it() {
    let case = |id: &str, details: &str| TestCase {
        id: id.into(),
        outcome: TestOutcome::Failed,
        message: None,
        details: Some(details.into()),
    };
    let failing = vec![
        case("tests/test_a.py::t1", "pkg/a.py:3: in f"),
        case("tests/test_b.py::t2", "tests/test_b.py:9: assert"),
        case("tests/test_c.py::t3", "tests/test_c.py:2: assert"),
    ];
    let read = |p: &str| (p == "tests/test_b.py").then(|| "from pkg import b\n".to_string());
    let files: Vec<String> = ["pkg/a.py", "pkg/b.py", "pkg/z.py"]
        .map(String::from)
        .to_vec();
    let ids = |file: &str| -> Vec<String> {
        failures_for(&failing, file, &files, &read)
            .iter()
            .map(|c| c.id.clone())
            .collect()
    };
    assert_eq!(ids("pkg/a.py"), vec!["tests/test_a.py::t1"]);
    assert_eq!(ids("pkg/b.py"), vec!["tests/test_b.py::t2"]);
    assert_eq!(ids("pkg/z.py").len(), 3, "no match: show everything");
}

fn strings(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|s| s.to_string()).collect()
}

/// A project whose test imports `billing`, whose `__init__.py` re-exports
/// from `billing/discounts.py` (relatively or absolutely, as `init` says).
fn billing(init: &'static str) -> (Vec<String>, impl Fn(&str) -> Option<String>) {
    let files = strings(&[
        "billing/__init__.py",
        "billing/charges.py",
        "billing/discounts.py",
        "billing/rates/__init__.py",
        "billing/rates/table.py",
        "other/discounts.py",
        "tests/test_discounts.py",
    ]);
    let read = move |p: &str| {
        match p {
        "tests/test_discounts.py" => {
            Some("from billing import apply_discount\n\ndef test_it():\n    assert apply_discount(80, 25) == 60\n".to_string())
        }
        "billing/__init__.py" => Some(init.to_string()),
        "billing/rates/__init__.py" => Some("from .table import RATE\n".to_string()),
        _ => Some(String::new()),
    }
    };
    (files, read)
}

fn failing_discount_test() -> Vec<TestCase> {
    vec![TestCase {
        id: "tests/test_discounts.py::test_it".into(),
        outcome: TestOutcome::Failed,
        message: Some("assert 20.0 == 60".into()),
        details: Some("tests/test_discounts.py:4: in test_it\nE assert 20.0 == 60".into()),
    }]
}

#[test]
fn a_package_that_only_re_exports_points_at_the_module_that_defines_the_name() {
    for init in [
        "\"\"\"Billing.\"\"\"\n\nfrom .discounts import apply_discount, bulk_price\n\n__all__ = [\"apply_discount\"]\n",
        "from billing.discounts import (\n    apply_discount,\n    bulk_price,\n)\n",
        "from . import discounts\nfrom .discounts import *\n",
    ] {
        let (files, read) = billing(init);
        let order = implicated_files(&failing_discount_test(), &files, &read, &[]);
        assert_eq!(order, vec!["billing/discounts.py"], "{init}");
        let cases = failing_discount_test();
        assert_eq!(failures_for(&cases, "billing/discounts.py", &files, &read).len(), 1);
    }
}

#[test]
fn a_package_with_logic_of_its_own_comes_after_the_modules_it_takes_names_from() {
    let (files, read) = billing(
        "from .discounts import apply_discount\nfrom .rates import RATE\n\ndef total(x):\n    return x * RATE\n",
    );
    let order = implicated_files(&failing_discount_test(), &files, &read, &[]);
    assert_eq!(
        order,
        vec![
            "billing/discounts.py",
            "billing/rates/table.py",
            "billing/__init__.py"
        ],
        "nested packages are followed; the charges module and the other package's discounts are not reached"
    );
    let text = read("tests/test_discounts.py").unwrap_or_default();
    let sources: Vec<&String> = files.iter().collect();
    let links: Vec<Link> = reached_sources(&text, &sources, &read)
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(
        links,
        vec![
            Link::ReExported,
            Link::ReExported,
            Link::PassesNamesOn,
            Link::Imported
        ]
    );
}

#[test]
fn relative_imports_resolve_against_their_package() {
    assert_eq!(
        package_imports(
            "from .x import a\nfrom ..y import b\nfrom . import z\nimport q.r\n",
            "pkg.sub"
        ),
        strings(&[
            "pkg.sub.x.a",
            "pkg.sub.x",
            "pkg.y.b",
            "pkg.y",
            "pkg.sub.z",
            "pkg.sub",
            "q.r"
        ])
    );
}

fn failed(id: &str) -> TestCase {
    TestCase {
        id: id.into(),
        outcome: TestOutcome::Failed,
        message: Some("assert 50.0 == 150.0".into()),
        details: Some(format!(
            "{}:5: AssertionError",
            id.split("::").next().unwrap()
        )),
    }
}

fn reader(files: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |p: &str| {
        files
            .iter()
            .find(|(name, _)| *name == p)
            .map(|(_, text)| text.to_string())
    }
}

const LEDGER: &[(&str, &str)] = &[
    (
        "ledger/__init__.py",
        "from .report import total_line\nfrom .money import apply_discount, to_cents\n",
    ),
    (
        "ledger/report.py",
        "from .money import to_cents\n\ndef total_line(label, amount):\n    return label + str(to_cents(amount))\n",
    ),
    (
        "ledger/money.py",
        "def to_cents(a):\n    return a\n\ndef apply_discount(p, d):\n    return p\n",
    ),
    (
        "ledger/wallet.py",
        "from ledger.money import to_cents as cents\n\nclass Wallet:\n    def pay(self, n):\n        \
         return cents(n)\n",
    ),
    (
        "tests/test_ledger.py",
        "from ledger import apply_discount, total_line\nimport ledger.wallet as lw\nfrom ledger.wallet \
         import Wallet\n\ndef test_discount():\n    assert apply_discount(200.0, 25) == 150.0\n\n\
         class TestWallet:\n    def test_pay(self):\n        w = Wallet()\n        assert w.pay(2) == 200\n\n\
         def test_alias():\n    assert lw.cents(1) == 100\n",
    ),
];

fn ledger_sources() -> Vec<String> {
    LEDGER.iter().map(|(p, _)| p.to_string()).collect()
}

#[test]
fn the_file_defining_what_a_failing_test_calls_comes_before_other_reexported_modules() {
    let files = ledger_sources();
    let read = reader(LEDGER);
    let failing = vec![failed("tests/test_ledger.py::test_discount")];
    let order = implicated_files(&failing, &files, &read, &[]);
    // `__init__.py` imports report.py first, but the test calls apply_discount.
    assert_eq!(order[0], "ledger/money.py", "{order:?}");
    assert!(order.contains(&"ledger/report.py".to_string()), "{order:?}");
    assert!(
        !order.contains(&"ledger/__init__.py".to_string()),
        "{order:?}"
    );
}

/// python-semver's shape: the package re-exports `cmd_compare` from
/// `_deprecated.py`, where it is a wrapper of `cli.cmd_compare`.
const SEMVER: &[(&str, &str)] = &[
    (
        "src/semver/__init__.py",
        "from ._deprecated import cmd_compare, compare\nfrom .version import Version\n",
    ),
    (
        "src/semver/_deprecated.py",
        "from . import cli\nfrom .version import Version\n\n\ndef deprecated(func):\n    return func\n\n\n\
         @deprecated\ndef compare(a, b):\n    return Version.parse(a).compare(b)\n\n\n\
         cmd_compare = deprecated(cli.cmd_compare)\n",
    ),
    (
        "src/semver/cli.py",
        "def cmd_compare(args):\n    return str(args.version1 < args.version2)\n",
    ),
    ("src/semver/version.py", "class Version:\n    pass\n"),
    (
        "tests/test_cli.py",
        "import semver\n\n\ndef test_compare(args):\n    assert semver.cmd_compare(args) == \"-1\"\n",
    ),
];

#[test]
fn a_call_through_a_wrapper_assigned_at_module_level_reaches_the_code_it_wraps() {
    let files: Vec<String> = SEMVER.iter().map(|(p, _)| p.to_string()).collect();
    let sources: Vec<&String> = files.iter().collect();
    let read = reader(SEMVER);
    let case = failed("tests/test_cli.py::test_compare");
    let resolved: Vec<(String, String)> = called_definitions(&case, &sources, &read)
        .into_iter()
        .map(|r| (r.file, r.name))
        .collect();
    assert_eq!(
        resolved,
        vec![("src/semver/cli.py".into(), "cmd_compare".into())]
    );
    let order = implicated_files(&[case], &files, &read, &[]);
    assert_eq!(order[0], "src/semver/cli.py", "{order:?}");
}

#[test]
fn calls_resolve_through_reexports_aliases_and_methods_of_imported_classes() {
    let files = ledger_sources();
    let sources: Vec<&String> = files.iter().collect();
    let read = reader(LEDGER);
    let resolved = |id: &str| -> Vec<(String, String)> {
        called_definitions(&failed(id), &sources, &read)
            .into_iter()
            .map(|r| (r.file, r.name))
            .collect()
    };
    assert_eq!(
        resolved("tests/test_ledger.py::test_discount"),
        vec![("ledger/money.py".into(), "apply_discount".into())]
    );
    assert_eq!(
        resolved("tests/test_ledger.py::TestWallet::test_pay"),
        vec![
            ("ledger/wallet.py".into(), "Wallet".into()),
            ("ledger/wallet.py".into(), "Wallet.pay".into())
        ]
    );
    // `lw.cents` is `ledger.wallet`'s alias of `ledger.money.to_cents`.
    assert_eq!(
        resolved("tests/test_ledger.py::test_alias[1]"),
        vec![("ledger/money.py".into(), "to_cents".into())]
    );
}

#[test]
fn related_code_shows_what_the_file_calls_elsewhere_and_its_callers() {
    let files = ledger_sources();
    let sources: Vec<&String> = files.iter().filter(|f| !is_test_path(f)).collect();
    let read = reader(LEDGER);
    let unknown = |_: &str| None;
    let pay = failed("tests/test_ledger.py::TestWallet::test_pay");
    let related = related_code("ledger/wallet.py", &[&pay], &sources, &read, &unknown);
    let named: Vec<(&str, &str, &str)> = related
        .iter()
        .map(|r| (r.file.as_str(), r.name.as_str(), r.why.as_str()))
        .collect();
    assert_eq!(
        named,
        vec![("ledger/money.py", "to_cents", "called by Wallet.pay")]
    );
    assert_eq!(related[0].text, "def to_cents(a):\n    return a");
    assert_eq!((related[0].start, related[0].end), (1, 2));

    let alias = failed("tests/test_ledger.py::test_alias");
    let related = related_code("ledger/money.py", &[&alias], &sources, &read, &unknown);
    let named: Vec<(&str, &str, &str)> = related
        .iter()
        .map(|r| (r.file.as_str(), r.name.as_str(), r.why.as_str()))
        .collect();
    assert_eq!(
        named,
        vec![
            ("ledger/report.py", "total_line", "calls to_cents"),
            ("ledger/wallet.py", "Wallet.pay", "calls to_cents"),
        ]
    );
    // Nothing failing: nothing related.
    assert!(related_code("ledger/money.py", &[], &sources, &read, &unknown).is_empty());
}

#[test]
fn callers_are_found_without_reading_the_files_known_to_import_none_of_the_names() {
    // Besides the ledger, modules that take other names or none.
    const MORE: &[(&str, &str)] = &[
        (
            "ledger/labels.py",
            "from os.path import sep\n\ndef label(to_cents):\n    return to_cents + sep\n",
        ),
        ("ledger/limits.py", "MAX = 10\n"),
    ];
    let mut files = ledger_sources();
    files.extend(MORE.iter().map(|(p, _)| p.to_string()));
    let sources: Vec<&String> = files.iter().filter(|f| !is_test_path(f)).collect();
    let (ledger, more) = (reader(LEDGER), reader(MORE));
    let plain = |p: &str| ledger(p).or_else(|| more(p));
    let read_paths = std::cell::RefCell::new(Vec::new());
    let read = |p: &str| {
        read_paths.borrow_mut().push(p.to_string());
        plain(p)
    };
    let metrics: std::collections::BTreeMap<String, swarm_analysis::FileMetrics> = LEDGER
        .iter()
        .chain(MORE)
        .map(|(path, text)| (path.to_string(), swarm_analysis::analyze(path, text)))
        .collect();
    assert_eq!(
        metrics["ledger/__init__.py"].imported_names,
        ["apply_discount", "to_cents", "total_line"]
    );
    // wallet.py is known only by its text: a file the run changed.
    let imported = |f: &str| {
        (f != "ledger/wallet.py")
            .then(|| metrics.get(f).map(|m| m.imported_names.as_slice()))
            .flatten()
    };
    let alias = failed("tests/test_ledger.py::test_alias");
    let unknown = |_: &str| None;
    let everything = related_code("ledger/money.py", &[&alias], &sources, &plain, &unknown);
    let known = related_code("ledger/money.py", &[&alias], &sources, &read, &imported);
    assert_eq!(known, everything);
    assert_eq!(known.len(), 2, "{known:?}");
    let read_paths = read_paths.into_inner();
    // `ledger/__init__.py` takes `to_cents` and is read; no file that takes
    // none of the names is, and the changed wallet.py is read for its text.
    assert!(
        read_paths.iter().any(|p| p == "ledger/wallet.py"),
        "{read_paths:?}"
    );
    let takes_none: Vec<&String> = sources
        .iter()
        .copied()
        .filter(|f| {
            metrics
                .get(*f)
                .is_some_and(|m| !m.imported_names.iter().any(|n| n == "to_cents"))
        })
        .filter(|f| f.as_str() != "ledger/money.py" && f.as_str() != "ledger/wallet.py")
        .collect();
    // labels.py mentions `to_cents` (so its text passes the cheap test) but
    // takes only `sep`.
    assert_eq!(takes_none, ["ledger/labels.py", "ledger/limits.py"]);
    for f in takes_none {
        assert!(!read_paths.contains(f), "{f} was read: {read_paths:?}");
    }
}
