//! The clean modules of a generated project: four kinds (rate tables,
//! collections, bands, parsers), 25 to 55 lines each, with docstrings,
//! a class here and there and a few imports between modules. Every module
//! carries numbers and names of its own on most lines, so pylint's
//! duplicate-code check finds nothing across thousands of them.

use std::fmt::Write as _;

const NOUNS: &[&str] = &[
    "invoice",
    "parcel",
    "order",
    "shelf",
    "route",
    "tariff",
    "voucher",
    "payment",
    "refund",
    "batch",
    "crate",
    "pallet",
    "receipt",
    "account",
    "ledger",
    "quote",
    "supplier",
    "customer",
    "carrier",
    "warehouse",
    "discount",
    "coupon",
    "tax",
    "fee",
];
const VERBS: &[&str] = &[
    "price", "weigh", "score", "rank", "charge", "adjust", "estimate", "measure", "rate", "total",
];

/// The kinds of clean module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Template {
    /// Constants and charge functions (number to number).
    RateTable,
    /// A class holding amounts, and a function using it.
    Collection,
    /// A band lookup and a counter.
    Bands,
    /// A line parser and a sum of its numeric fields.
    Parser,
}

/// One clean module: its name, its main function and how it is written.
pub(super) struct Module {
    n: usize,
    /// The file name without `.py`.
    pub(super) stem: String,
    noun: &'static str,
    /// The main function's name.
    pub(super) function: String,
    package_words: String,
}

impl Module {
    pub(super) fn new(n: usize, subpackage: &str) -> Self {
        let noun = NOUNS[(mix(n as u64, 2) % NOUNS.len() as u64) as usize];
        let verb = VERBS[(mix(n as u64, 3) % VERBS.len() as u64) as usize];
        Self {
            n,
            stem: format!("{noun}_{n:05}"),
            noun,
            function: format!("{verb}_{noun}_{n}"),
            package_words: subpackage.replace(['/', '_'], " "),
        }
    }

    /// How the module is written.
    fn template(&self) -> Template {
        match mix(self.n as u64, 4) % 4 {
            0 => Template::RateTable,
            1 => Template::Collection,
            2 => Template::Bands,
            _ => Template::Parser,
        }
    }

    /// Whether the module is a rate table (its main function maps a number
    /// to a number).
    pub(super) fn is_rate_table(&self) -> bool {
        self.template() == Template::RateTable
    }

    /// The module's text, using `import` (module path, function) if given.
    pub(super) fn text(&self, import: Option<(&str, &str)>) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "\"\"\"{} helpers of the {} package (table {}).\"\"\"",
            title(self.noun),
            self.package_words,
            self.n
        );
        if let Some((module, function)) = import {
            let _ = writeln!(t, "\nfrom {module} import {function}");
        }
        let body = match self.template() {
            Template::RateTable => self.rate_table(import),
            Template::Collection => self.collection_class(import),
            Template::Bands => self.bands(import),
            Template::Parser => self.parser(import),
        };
        t.push_str(&body);
        // Every module but half the (longer) collections validates input.
        if self.template() != Template::Collection || mix(self.n as u64, 11) % 2 == 0 {
            t.push_str(&self.check_function());
        }
        if mix(self.n as u64, 5) % 2 == 0 {
            t.push_str(&self.summary_function());
        }
        t
    }

    /// Base of `value` for the main function: the imported function's
    /// result when there is one.
    fn base(&self, import: Option<(&str, &str)>, value: &str) -> String {
        match import {
            Some((_, function)) => format!("{function}({value})"),
            None => value.to_string(),
        }
    }

    fn rate_table(&self, import: Option<(&str, &str)>) -> String {
        let n = self.n;
        // Unique per module, so no two modules share four lines (pylint's
        // duplicate-code check).
        let rate = 1.0 + n as f64 / 100_000.0;
        let minimum = 5 + n % 97;
        format!(
            r#"
RATE = {rate:.5}
MINIMUM_{upper} = {minimum}


def {function}(units):
    """Return the charge for `units` {noun}s at this table's rate."""
    charge = round({base} * RATE, 2)
    return max(charge, MINIMUM_{upper})


def {function}_all(batches):
    """Return the charge of every batch in `batches`, skipping empty ones."""
    return [{function}(units) for units in batches if units > 0]


def {function}_total(batches):
    """Return the sum of the charges of `batches`."""
    return round(sum({function}_all(batches)), 2)
"#,
            upper = self.noun.to_uppercase(),
            function = self.function,
            noun = self.noun,
            base = self.base(import, "units"),
        )
    }

    fn collection_class(&self, import: Option<(&str, &str)>) -> String {
        let n = self.n;
        let class = format!("{}Book{n}", title(self.noun));
        let limit = 500 + n;
        format!(
            r#"

class {class}:
    """A named collection of {noun} amounts, each at most {limit}."""

    def __init__(self, name):
        """Start an empty collection called `name`."""
        self.name = name
        self.{noun}_amounts = []

    def add(self, amount):
        """Record `amount`; amounts above {limit} are refused."""
        if amount > {limit}:
            raise ValueError(f"{class} {{self.name}}: {{amount}} is above {limit}")
        self.{noun}_amounts.append(amount)

    def share_of_limit(self):
        """Return the mean amount as a share of the limit, 0 when nothing was recorded."""
        if not self.{noun}_amounts:
            return 0.0
        return self.total() / ({limit} * len(self.{noun}_amounts))

    def total(self):
        """Return the sum of the recorded {noun} amounts."""
        return sum(self.{noun}_amounts)


def {function}(amounts):
    """Return the total of `amounts` kept in a {class}."""
    book = {class}("{stem}")
    for amount in amounts:
        book.add({base})
    return book.total()
"#,
            noun = self.noun,
            function = self.function,
            stem = self.stem,
            base = self.base(import, "amount"),
        )
    }

    fn bands(&self, import: Option<(&str, &str)>) -> String {
        let n = self.n;
        let low = 10 + mix(n as u64, 8) % 90;
        let high = low + 50 + mix(n as u64, 9) % 400;
        let level = match import {
            Some((_, function)) => format!("\n    value = {function}(value)"),
            None => String::new(),
        };
        format!(
            r#"
BANDS_{n} = (({low}, "low"), ({high}, "mid"))


def {function}(value):
    """Return the band of `value`: "low" below {low}, "high" from {high}, else "mid"."""{level}
    for limit, name in BANDS_{n}:
        if value < limit:
            return name
    return "high"


def count_{noun}_bands_{n}(values):
    """Return how many of `values` fall in each band."""
    counts = {{name: 0 for _, name in BANDS_{n}}}
    counts["high"] = 0
    for value in values:
        counts[{function}(value)] += 1
    return counts
"#,
            noun = self.noun,
            function = self.function,
        )
    }

    fn parser(&self, import: Option<(&str, &str)>) -> String {
        let n = self.n;
        let separator = [",", ";", "|", ":"][(mix(n as u64, 10) % 4) as usize];
        format!(
            r#"

def parse_{noun}_line_{n}(line):
    """Split a `{separator}`-separated {noun} line into its stripped, non-empty fields."""
    fields = [field.strip() for field in line.split("{separator}")]
    return [field for field in fields if field]


def {function}(line):
    """Return the sum of the numeric fields of one {noun} line."""
    total = 0.0
    for field in parse_{noun}_line_{n}(line):
        if field.replace(".", "", 1).isdigit():
            total += float(field)
    return {base}
"#,
            noun = self.noun,
            function = self.function,
            base = self.base(import, "total"),
        )
    }

    fn check_function(&self) -> String {
        let n = self.n;
        let cap = 1_000 + n;
        format!(
            r#"


def check_{noun}_{n}(amount):
    """Return `amount` if it is a number from 0 up to (not including) {cap}; raise otherwise."""
    if not isinstance(amount, (int, float)):
        raise TypeError(f"expected a number, not {{type(amount).__name__}} (table {n})")
    if not 0 <= amount < {cap}:
        raise ValueError(f"{{amount}} is outside 0..{cap}")
    return amount
"#,
            noun = self.noun,
        )
    }

    fn summary_function(&self) -> String {
        let n = self.n;
        let width = 8 + n % 24;
        format!(
            r#"


def describe_{noun}_{n}(name, amount):
    """Return one report line for `name` and `amount`."""
    return f"{{name[:{width}]:<{width}}} {{amount:>10.2f}} (table {n})"
"#,
            noun = self.noun,
        )
    }
}

/// `word` with its first letter upper case.
pub(super) fn title(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A deterministic pseudo-random number for `n` and `salt` (splitmix64).
pub(super) fn mix(n: u64, salt: u64) -> u64 {
    let mut z = n
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
