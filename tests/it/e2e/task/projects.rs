//! Small projects written as people write them, for the reference
//! refactorings: an inventory package (models, store, report), invoice
//! pricing with its callers, text helpers used by a blog, and statistics
//! whose tests pin down what an empty list does.

use super::{repo, Repo};

pub const INVENTORY_INIT: &str = r#""""A small inventory: stock items, the store that keeps them, reports."""
from inventory.models import StockItem, parse_item
from inventory.store import Store
"#;

pub const INVENTORY_MODELS: &str = r#""""Stock items, and how they are read from text."""
from dataclasses import dataclass


@dataclass
class StockItem:
    """One line of stock: what it is, how many, at what unit price."""

    sku: str
    name: str
    quantity: int = 0
    unit_price: float = 0.0

    @property
    def value(self):
        """What this line of stock is worth."""
        return self.quantity * self.unit_price

    def restock(self, count):
        """This item with `count` more units."""
        if count < 0:
            raise ValueError("count must not be negative")
        return StockItem(self.sku, self.name, self.quantity + count, self.unit_price)


def parse_item(line):
    """A StockItem from a line such as 'D4, Dice, 12, 0.50'."""
    sku, name, quantity, price = (part.strip() for part in line.split(","))
    return StockItem(sku, name, int(quantity), float(price))
"#;

pub const INVENTORY_STORE: &str = r#""""A store: its stock items by SKU."""
from inventory.models import StockItem, parse_item


class Store:
    """The items a store holds, by SKU."""

    def __init__(self):
        self._items = {}

    def add(self, item: StockItem):
        """Adds `item`, or more of it when its SKU is already here."""
        held = self._items.get(item.sku)
        self._items[item.sku] = held.restock(item.quantity) if held else item
        return self

    def load(self, lines):
        """Adds an item for every non-blank line."""
        for line in lines:
            if line.strip():
                self.add(parse_item(line))
        return self

    def get(self, sku) -> StockItem:
        """The item with this SKU."""
        return self._items[sku]

    def total_value(self):
        """What the whole stock is worth."""
        return sum(item.value for item in self._items.values())

    def items(self):
        """Every item, by SKU."""
        return sorted(self._items.values(), key=lambda item: item.sku)
"#;

pub const INVENTORY_REPORT: &str = r#""""Text reports of a store's stock."""
from inventory.models import StockItem
from inventory.store import Store


def format_item(item: StockItem) -> str:
    """One report line for `item`."""
    return f"{item.sku:<6} {item.name:<12} {item.quantity:>4} x {item.unit_price:>7.2f}"


def stock_report(store: Store) -> str:
    """Every item of `store`, then the total value."""
    lines = [format_item(item) for item in store.items()]
    lines.append(f"total value: {store.total_value():.2f}")
    return "\n".join(lines)
"#;

pub const INVENTORY_TESTS: &str = r#"from inventory.models import parse_item
from inventory.report import stock_report
from inventory.store import Store


def test_parse_item():
    item = parse_item("D4, Dice, 12, 0.50")
    assert (item.sku, item.name, item.quantity, item.unit_price) == ("D4", "Dice", 12, 0.5)
    assert item.value == 6.0


def test_adding_an_item_twice_restocks_it():
    store = Store().load(["D4, Dice, 12, 0.50", "D4, Dice, 3, 0.50", ""])
    assert store.get("D4").quantity == 15


def test_report_lists_every_item_and_the_total():
    store = Store().load(["P1, Pawn, 10, 0.20", "D4, Dice, 2, 0.50"])
    report = stock_report(store).splitlines()
    assert report[0].startswith("D4")
    assert report[-1] == "total value: 3.00"
"#;

pub fn inventory() -> Repo {
    repo(&[
        ("inventory/__init__.py", INVENTORY_INIT),
        ("inventory/models.py", INVENTORY_MODELS),
        ("inventory/store.py", INVENTORY_STORE),
        ("inventory/report.py", INVENTORY_REPORT),
        ("tests/test_inventory.py", INVENTORY_TESTS),
    ])
}

pub const PRICING: &str = r#""""What invoice lines cost."""

TAX_RATE = 0.2


def line_total(quantity, unit_price):
    """One line's price, to the cent."""
    return round(quantity * unit_price, 2)


def calc_total(lines, tax_rate=TAX_RATE, discount=0.0):
    """The total of `lines` (quantity, unit price) after `discount`, with tax."""
    subtotal = sum(line_total(quantity, price) for quantity, price in lines)
    subtotal -= subtotal * discount
    return round(subtotal * (1 + tax_rate), 2)
"#;

pub const INVOICE: &str = r#""""Invoices as text."""
from pricing import calc_total, line_total


def render(customer, lines, discount=0.0):
    """The invoice of `lines` for `customer`."""
    rows = [f"{q} x {p:.2f} = {line_total(q, p):.2f}" for q, p in lines]
    rows.append(f"total: {calc_total(lines, discount=discount):.2f}")
    return f"Invoice for {customer}\n" + "\n".join(rows)
"#;

pub const CHECKOUT: &str = r#""""What a basket costs at the till."""
from pricing import calc_total

MEMBER_DISCOUNT = 0.1


def amount_due(basket, member=False):
    """What is due for `basket`; members get a discount."""
    return calc_total(basket, discount=MEMBER_DISCOUNT if member else 0.0)
"#;

pub const PRICING_TESTS: &str = r#"from checkout import amount_due
from invoice import render
from pricing import calc_total


def test_total_with_tax():
    assert calc_total([(2, 5.0), (1, 2.5)]) == 15.0


def test_total_with_discount_and_no_tax():
    assert calc_total([(4, 2.5)], tax_rate=0.0, discount=0.5) == 5.0


def test_members_pay_less():
    assert amount_due([(1, 10.0)], member=True) < amount_due([(1, 10.0)])


def test_invoice_ends_with_the_total():
    assert render("Ada", [(2, 5.0)]).splitlines()[-1] == "total: 12.00"
"#;

pub fn invoice() -> Repo {
    repo(&[
        ("pricing.py", PRICING),
        ("invoice.py", INVOICE),
        ("checkout.py", CHECKOUT),
        ("tests/test_pricing.py", PRICING_TESTS),
    ])
}

pub const TEXT_UTILS: &str = r#""""Small helpers for text."""
import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]+")


def slugify(text, separator="-"):
    """A URL-safe slug of `text`: 'Hello, World!' gives 'hello-world'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NON_WORD.sub(separator, ascii_text.lower()).strip(separator)


def word_count(text):
    """How many words `text` has."""
    return len(text.split())


def truncate(text, width=40, suffix="..."):
    """`text` cut to `width` characters, ending in `suffix` when cut."""
    if len(text) <= width:
        return text
    return text[: width - len(suffix)].rstrip() + suffix


def initials(name):
    """The initials of a name: 'Ada Lovelace' gives 'AL'."""
    return "".join(part[0].upper() for part in name.split() if part)
"#;

pub const BLOG: &str = r#""""Blog posts."""
from dataclasses import dataclass, field

from text_utils import slugify, truncate, word_count


@dataclass
class Post:
    """A post: its title, its text and its tags."""

    title: str
    body: str
    tags: list = field(default_factory=list)

    @property
    def slug(self):
        """Where the post lives: its title as a slug."""
        return slugify(self.title)

    def summary(self, width=60):
        """The start of the post."""
        return truncate(self.body, width)

    def reading_minutes(self):
        """About how long reading the post takes."""
        return max(1, round(word_count(self.body) / 200))
"#;

pub const TEXT_TESTS: &str = r#"from blog import Post
from text_utils import slugify, word_count


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Crème brûlée", separator="_") == "creme_brulee"


def test_word_count():
    assert word_count("one two  three") == 3


def test_post_slug_and_summary():
    post = Post("Why Tests?", "Because " * 30)
    assert post.slug == "why-tests"
    assert post.summary(20).endswith("...")
    assert post.reading_minutes() == 1
"#;

pub fn text_utils() -> Repo {
    repo(&[
        ("text_utils.py", TEXT_UTILS),
        ("blog.py", BLOG),
        ("tests/test_text_utils.py", TEXT_TESTS),
    ])
}

pub const STATS: &str = r#""""Descriptive statistics of a list of numbers."""
import math


def average(values):
    """The arithmetic mean of `values`; ValueError when there are none."""
    if not values:
        raise ValueError("average() of an empty list")
    return sum(values) / len(values)


def median(values):
    """The middle value of `values` (the mean of the two middle ones)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def stdev(values):
    """The population standard deviation of `values`."""
    mean = average(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
"#;

pub const STATS_TESTS: &str = r#"import pytest

from stats import average, median, stdev


def test_average():
    assert average([1, 2, 3, 4]) == 2.5


def test_average_of_empty_raises():
    with pytest.raises(ValueError):
        average([])


def test_median():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 2, 3]) == 2.5


def test_stdev():
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == 2.0
"#;

pub fn stats() -> Repo {
    repo(&[("stats.py", STATS), ("tests/test_stats.py", STATS_TESTS)])
}
