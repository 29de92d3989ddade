//! What model calls cost: list prices in USD per million tokens for common
//! models, matched by model-id prefix, and a table that config can extend.
//!
//! Prices are public list prices (standard tier, prompts under any long-context
//! threshold) and change over time; override them from config when they do.

use super::chat::Usage;

/// USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    /// USD per million input (prompt) tokens.
    pub input_per_million: f64,
    /// USD per million output tokens (thinking tokens included).
    pub output_per_million: f64,
}

impl Price {
    /// A price from USD per million input and output tokens.
    pub const fn new(input_per_million: f64, output_per_million: f64) -> Self {
        Self {
            input_per_million,
            output_per_million,
        }
    }

    /// The cost of `usage` in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_million
            + usage.output_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// Built-in prices; the longest matching id wins, so order does not matter.
const BUILT_IN: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-4o-mini", Price::new(0.15, 0.60)),
    ("gpt-4o", Price::new(2.50, 10.00)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60)),
    ("gpt-4.1", Price::new(2.00, 8.00)),
    ("gpt-5-nano", Price::new(0.05, 0.40)),
    ("gpt-5-mini", Price::new(0.25, 2.00)),
    ("gpt-5", Price::new(1.25, 10.00)),
    ("o4-mini", Price::new(1.10, 4.40)),
    ("o3-mini", Price::new(1.10, 4.40)),
    ("o3-pro", Price::new(20.00, 80.00)),
    ("o3", Price::new(2.00, 8.00)),
    ("o1-mini", Price::new(1.10, 4.40)),
    ("o1", Price::new(15.00, 60.00)),
    // Google
    ("gemini-2.5-pro", Price::new(1.25, 10.00)),
    ("gemini-2.5-flash-lite", Price::new(0.10, 0.40)),
    ("gemini-2.5-flash", Price::new(0.30, 2.50)),
    ("gemini-2.0-flash-lite", Price::new(0.075, 0.30)),
    ("gemini-2.0-flash", Price::new(0.10, 0.40)),
    ("gemini-1.5-pro", Price::new(1.25, 5.00)),
    ("gemini-1.5-flash", Price::new(0.075, 0.30)),
    // Anthropic
    ("claude-opus-4-5", Price::new(5.00, 25.00)),
    ("claude-opus-4", Price::new(15.00, 75.00)),
    ("claude-sonnet-4", Price::new(3.00, 15.00)),
    ("claude-haiku-4", Price::new(1.00, 5.00)),
    ("claude-3-7-sonnet", Price::new(3.00, 15.00)),
    ("claude-3-5-sonnet", Price::new(3.00, 15.00)),
    ("claude-3-5-haiku", Price::new(0.80, 4.00)),
    ("claude-3-opus", Price::new(15.00, 75.00)),
    ("claude-3-haiku", Price::new(0.25, 1.25)),
];

/// The built-in list price of `model`, when known.
///
/// Matching ignores case, a `models/` or `vendor/` prefix (Gemini resource
/// names, OpenRouter ids) and any suffix after a known id (dates, `-latest`,
/// `-preview-…`): `openai/gpt-4o-2024-08-06` is priced as `gpt-4o`. Local and
/// unknown models give `None`.
pub fn price_for(model: &str) -> Option<Price> {
    lookup(BUILT_IN.iter().map(|(name, price)| (*name, *price)), model)
}

/// Prices from config on top of the built-in list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable {
    overrides: Vec<(String, Price)>,
}

impl PriceTable {
    /// The built-in prices only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the price of `model` (and of ids it prefixes, e.g. dated
    /// versions), taking precedence over the built-in list and over earlier
    /// overrides.
    pub fn with_override(mut self, model: impl Into<String>, price: Price) -> Self {
        let model = normalise(&model.into());
        self.overrides.retain(|(name, _)| *name != model);
        self.overrides.push((model, price));
        self
    }

    /// The price of `model`: an exact id beats a prefix, the longest
    /// prefix beats shorter ones, and an override beats a built-in price of
    /// the same id.
    pub fn get(&self, model: &str) -> Option<Price> {
        let overrides = self
            .overrides
            .iter()
            .rev()
            .map(|(name, price)| (name.as_str(), *price));
        let built_in = BUILT_IN.iter().map(|(name, price)| (*name, *price));
        lookup(overrides.chain(built_in), model)
    }

    /// The cost of `usage` on `model`, when its price is known.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.get(model).map(|price| price.cost(usage))
    }
}

/// The entry whose id equals `model`, else the one with the longest id that
/// prefixes `model` at a `-`, `@` or `:` boundary; on ties the earlier wins.
/// Shared by every per-model table (prices, context windows).
pub(super) fn lookup<'a, T: Copy>(
    entries: impl Iterator<Item = (&'a str, T)>,
    model: &str,
) -> Option<T> {
    let model = normalise(model);
    let mut best: Option<(usize, T)> = None;
    for (name, price) in entries {
        if model == name {
            return Some(price);
        }
        let extends = model
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(['-', '@', ':']));
        if extends && best.is_none_or(|(len, _)| name.len() > len) {
            best = Some((name.len(), price));
        }
    }
    best.map(|(_, price)| price)
}

/// Lowercase, without `models/` or a `vendor/` prefix.
fn normalise(model: &str) -> String {
    let model = model.trim().to_ascii_lowercase();
    match model.rsplit_once('/') {
        Some((_, name)) => name.to_string(),
        None => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specific_ids_win_over_their_prefixes() {
        assert_eq!(price_for("gpt-4o-mini"), Some(Price::new(0.15, 0.60)));
        assert_eq!(price_for("gpt-4o"), Some(Price::new(2.50, 10.00)));
        assert_eq!(
            price_for("gpt-4o-2024-08-06"),
            Some(Price::new(2.50, 10.00))
        );
        assert_eq!(
            price_for("gemini-2.5-flash-lite"),
            Some(Price::new(0.10, 0.40))
        );
        assert_eq!(
            price_for("models/gemini-2.5-flash"),
            Some(Price::new(0.30, 2.50))
        );
        assert_eq!(
            price_for("claude-sonnet-4-5-20250929"),
            Some(Price::new(3.0, 15.0))
        );
        assert_eq!(price_for("claude-opus-4-1"), Some(Price::new(15.0, 75.0)));
        assert_eq!(
            price_for("anthropic/claude-3-5-haiku-latest"),
            Some(Price::new(0.8, 4.0))
        );
        assert_eq!(price_for("o4-mini"), Some(Price::new(1.10, 4.40)));
    }

    #[test]
    fn unknown_models_have_no_price() {
        assert_eq!(price_for("llama3.1:8b"), None);
        assert_eq!(price_for("gpt-4ox"), None);
        assert_eq!(price_for("replay"), None);
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let usage = Usage {
            input_tokens: 2_000_000,
            output_tokens: 500_000,
            estimated: false,
        };
        let cost = Price::new(0.30, 2.50).cost(&usage);
        assert!((cost - 1.85).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn overrides_extend_and_replace() {
        let table = PriceTable::new()
            .with_override("llama3.1", Price::new(0.0, 0.0))
            .with_override("gpt-4o", Price::new(1.0, 2.0))
            .with_override("gpt-4o", Price::new(3.0, 4.0));
        assert_eq!(table.get("llama3.1:8b"), Some(Price::new(0.0, 0.0)));
        assert_eq!(table.get("gpt-4o"), Some(Price::new(3.0, 4.0)));
        assert_eq!(table.get("gpt-4o-mini"), Some(Price::new(0.15, 0.60)));
        assert_eq!(table.get("unknown"), None);
    }
}
