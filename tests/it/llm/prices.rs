//! Prices through the public API, applied to usage a server reported.

use swarm::llm::{price_for, Price, PriceTable};

use super::{request, Wire};
use crate::support::llm_server::{LlmServer, Reply};

#[tokio::test]
async fn reported_usage_is_priced() {
    let server = LlmServer::start(|_| Reply::gemini_text("ok"));
    let response = Wire::GEMINI
        .model(&server)
        .complete(&request())
        .await
        .expect("an answer");
    let price = price_for("gemini-2.5-flash").expect("a listed model");
    // 12 input tokens at $0.30/M + 34 output tokens at $2.50/M.
    let expected = (12.0 * 0.30 + 34.0 * 2.50) / 1_000_000.0;
    assert!((price.cost(&response.usage) - expected).abs() < 1e-12);

    let table = PriceTable::new().with_override("gemini-2.5-flash", Price::new(1.0, 1.0));
    let cost = table
        .cost("gemini-2.5-flash-preview-09-2025", &response.usage)
        .expect("override matches dated ids");
    assert!((cost - 46.0 / 1_000_000.0).abs() < 1e-12, "{cost}");
    assert_eq!(
        table.get("gemini-2.5-flash-lite"),
        price_for("gemini-2.5-flash-lite")
    );
}
