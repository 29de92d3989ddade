//! The report as one self-contained HTML page: the template
//! (`template.html`, inline CSS and JS, no network) filled with sections
//! rendered here and the model embedded as JSON.
//!
//! Every text from the log goes through [`escape`] (HTML) or
//! [`script_json`] (the embedded data), nowhere else: a diff holding
//! `</script>` or `<img onerror=…>` stays text. Charts are inline SVG.

use std::fmt::Write as _;

use super::model::{Attempt, Call, Count, Point, RunReport};
use crate::log::ToolRun;

const TEMPLATE: &str = include_str!("template.html");

/// Escapes `text` for HTML text and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `value` as JSON safe inside `<script type="application/json">`: every
/// `<`, `>` and `&` (they only occur inside strings) becomes its `\u`
/// escape, so no `</script>` or `<!--` can end or bend the element.
pub fn script_json<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).expect("the report model always serializes");
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Fills the template's `{{name}}` slots in one pass (a value holding
/// `{{…}}` is never filled again).
fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + slots.iter().map(|s| s.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let filled = after.find("}}").and_then(|end| {
            let name = &after[..end];
            let value = slots.iter().find(|(n, _)| *n == name)?.1;
            Some((value, end))
        });
        match filled {
            Some((value, end)) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The whole page.
pub fn render(report: &RunReport) -> String {
    let mut body = String::new();
    header(&mut body, report);
    plans(&mut body, report);
    tasks(&mut body, &report.tasks);
    charts(&mut body, &report.series);
    attempts(&mut body, &report.attempts);
    calls(&mut body, &report.calls);
    let _ = write!(
        body,
        "<footer>Written by swarm {} from the experiment log entries of run {}.</footer>",
        env!("CARGO_PKG_VERSION"),
        escape(&report.run_id)
    );
    let title = format!("swarm run {}", report.run_id);
    fill(
        TEMPLATE,
        &[
            ("title", &escape(&title)),
            ("body", &body),
            ("data", &script_json(report)),
        ],
    )
}

fn tests_text(count: Option<Count>) -> String {
    count.map_or("–".to_string(), |c| format!("{}/{}", c.passed, c.total))
}

fn lint_text(score: Option<f64>) -> String {
    score.map_or("–".to_string(), |s| format!("{s:.2}"))
}

fn cost_text(cost: Option<f64>) -> String {
    cost.map_or("unknown".to_string(), |c| format!("${c:.4}"))
}

/// A CSS class name for a verdict or status (`not judged` → `v-not-judged`).
fn class_of(word: &str) -> String {
    let word: String = word
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("v-{word}")
}

fn badge(word: &str) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        class_of(word),
        escape(word)
    )
}

fn card(out: &mut String, key: &str, value: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
        escape(key)
    );
}

fn header(out: &mut String, r: &RunReport) {
    let status = match &r.ending {
        Some(e) => format!(
            "{} <span class=\"muted\">exit {}</span>",
            badge(&e.status),
            e.exit_code
        ),
        None => format!(
            "{} <span class=\"muted\">stopped before its summary; see its output</span>",
            badge("unfinished")
        ),
    };
    let _ = write!(
        out,
        "<h1>swarm run <span class=\"mono\">{}</span></h1><div class=\"muted\">{} · started {}</div>",
        escape(&r.run_id),
        escape(&r.target),
        escape(&r.started)
    );
    out.push_str("<div class=\"cards\">");
    card(out, "status", &status);
    card(out, "model", &escape(&r.model));
    if let Some(e) = &r.ending {
        card(
            out,
            "stop reason",
            &escape(&e.stop_reason.replace('_', " ")),
        );
        card(out, "delivery", &escape(&e.delivery.replace('_', " ")));
    }
    card(
        out,
        "tests passing",
        &format!(
            "{} → {}",
            tests_text(r.tests_before),
            tests_text(r.tests_after)
        ),
    );
    card(
        out,
        &format!("{} score", ToolRun::linter()),
        &format!("{} → {}", lint_text(r.lint_before), lint_text(r.lint_after)),
    );
    card(
        out,
        "duration",
        &r.seconds.map_or("–".into(), |s| format!("{s:.1} s")),
    );
    card(
        out,
        "tokens",
        &format!(
            "{} in · {} out <span class=\"muted\">({} calls)</span>",
            r.spend.input_tokens, r.spend.output_tokens, r.spend.calls
        ),
    );
    card(out, "cost", &cost_text(r.spend.cost_usd));
    out.push_str("</div>");
}

fn plans(out: &mut String, r: &RunReport) {
    out.push_str("<h2>Plan</h2>");
    if r.plans.is_empty() {
        out.push_str("<p class=\"muted\">No plan was written.</p>");
    }
    for plan in &r.plans {
        let _ = write!(out, "<pre class=\"plan\">{}</pre>", escape(plan));
    }
}

/// The tasks of an instruction (`--task`), each with its status.
fn tasks(out: &mut String, tasks: &[crate::log::TaskRecord]) {
    if tasks.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Tasks</h2><table><tr><th>task</th><th>kind</th><th>status</th><th>commits</th></tr>",
    );
    for t in tasks {
        let why = t
            .reason
            .as_deref()
            .map(|r| format!(": {}", escape(r)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td>{}/{} {}</td><td>{}</td><td>{}{why}</td><td>{}</td></tr>",
            t.number,
            t.total,
            escape(&t.title),
            t.task_kind.as_str(),
            badge(&t.status),
            t.commits.len()
        );
    }
    out.push_str("</table>");
}

fn charts(out: &mut String, series: &[Point]) {
    let linter = ToolRun::linter();
    let _ = write!(
        out,
        "<h2>Tests and {linter} per attempt</h2><div class=\"charts\">"
    );
    let total = series
        .iter()
        .filter_map(|p| p.tests.map(|t| t.total))
        .max()
        .unwrap_or(0);
    let tests: Vec<(String, Option<f64>)> = series
        .iter()
        .map(|p| (p.label.clone(), p.tests.map(|t| t.passed as f64)))
        .collect();
    let lint: Vec<(String, Option<f64>)> =
        series.iter().map(|p| (p.label.clone(), p.lint)).collect();
    out.push_str(&chart("tests passing", &tests, total.max(1) as f64, 0));
    out.push_str(&chart(&format!("{linter} score"), &lint, 10.0, 2));
    out.push_str("</div>");
}

/// A small line chart of `points` (baseline first) from 0 to `max`.
fn chart(title: &str, points: &[(String, Option<f64>)], max: f64, decimals: usize) -> String {
    const W: f64 = 340.0;
    const H: f64 = 130.0;
    const PAD: f64 = 26.0;
    let step = if points.len() > 1 {
        (W - 2.0 * PAD) / (points.len() - 1) as f64
    } else {
        0.0
    };
    let xy = |i: usize, v: f64| {
        let x = PAD + step * i as f64;
        let y = H - PAD - (v.clamp(0.0, max) / max) * (H - 2.0 * PAD);
        (x, y)
    };
    let mut svg = format!(
        "<div class=\"chart\"><div class=\"muted\">{}</div>\
         <svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">\
         <line class=\"axis\" x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\
         <line class=\"axis\" x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b}\"/>\
         <text x=\"2\" y=\"{top}\">{max:.0}</text><text x=\"2\" y=\"{b}\">0</text>",
        escape(title),
        escape(title),
        b = H - PAD,
        r = W - PAD,
        top = PAD + 4.0,
    );
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| v.map(|v| xy(i, v)))
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    if line.len() > 1 {
        let _ = write!(
            svg,
            "<polyline class=\"line\" points=\"{}\"/>",
            line.join(" ")
        );
    }
    for (i, (label, value)) in points.iter().enumerate() {
        let (x, _) = xy(i, 0.0);
        let tick = if i == 0 {
            "B".to_string()
        } else {
            i.to_string()
        };
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{tick}</text>",
            x - 3.0,
            H - 8.0
        );
        if let Some(v) = value {
            let (x, y) = xy(i, *v);
            let _ = write!(
                svg,
                "<circle class=\"dot\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\"><title>{}: {v:.decimals$}</title></circle>",
                escape(label)
            );
        }
    }
    svg.push_str("</svg></div>");
    svg
}

fn attempts(out: &mut String, attempts: &[Attempt]) {
    let _ = write!(
        out,
        "<h2>Attempts <span class=\"muted\">({})</span></h2>",
        attempts.len()
    );
    if attempts.is_empty() {
        out.push_str("<p class=\"muted\">No proposal reached the Reviewer.</p>");
        return;
    }
    out.push_str("<div class=\"timeline\">");
    for (i, a) in attempts.iter().enumerate() {
        let _ = write!(
            out,
            "<a href=\"#proposal-{n}\" title=\"{}\"><span class=\"tick {}\">{n}</span></a>",
            escape(&format!(
                "round {}: {} — {}",
                a.iteration, a.file, a.verdict
            )),
            class_of(&a.verdict),
            n = i + 1
        );
    }
    out.push_str(
        "</div><div class=\"toolbar\"><button data-filter=\"all\">all</button>\
         <button data-filter=\"rejected\">rejected</button>\
         <button data-filter=\"judged\">judged</button>\
         <button id=\"toggle-diffs\">open or close every diff</button></div>",
    );
    for (i, a) in attempts.iter().enumerate() {
        attempt(out, i + 1, a);
    }
}

fn attempt(out: &mut String, n: usize, a: &Attempt) {
    let outcome = if a.verdict == "rejected" {
        "rejected"
    } else {
        "judged"
    };
    let _ = write!(
        out,
        "<section class=\"attempt\" id=\"proposal-{n}\" data-outcome=\"{outcome}\" data-verdict=\"{}\"><header>\
         <strong>#{n}</strong> {} <span class=\"mono\">{}</span><span class=\"muted\">round {}</span>",
        escape(&a.verdict),
        badge(&a.verdict),
        escape(&a.file),
        a.iteration
    );
    if let Some(step) = &a.step {
        let _ = write!(out, "<span class=\"muted\">step {}</span>", escape(step));
    }
    if let (Some(k), Some(commit)) = (a.number, &a.commit) {
        let short: String = commit.chars().take(10).collect();
        let _ = write!(
            out,
            "<span class=\"muted\">attempt {k} · commit <span class=\"mono\">{}</span> · tests {} · {} {}</span>",
            escape(&short),
            tests_text(a.tests),
            ToolRun::linter(),
            lint_text(a.lint)
        );
    }
    out.push_str("</header>");
    if let Some(reason) = &a.reason {
        let rule = a
            .rule
            .as_deref()
            .map(|r| format!(" <span class=\"muted\">({})</span>", escape(r)))
            .unwrap_or_default();
        let _ = write!(out, "<p class=\"reason\">{}{rule}</p>", escape(reason));
    }
    if let Some(diff) = &a.diff {
        let _ = write!(
            out,
            "<details><summary>diff</summary>{}</details>",
            diff_block(diff)
        );
    } else if let Some(proposal) = &a.proposal {
        let _ = write!(
            out,
            "<details><summary>the model's proposal</summary>{}</details>",
            diff_block(proposal)
        );
    }
    out.push_str("</section>");
}

/// A diff (or a reply holding one) with added, removed and hunk lines coloured.
fn diff_block(diff: &str) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            ""
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            ""
        };
        if class.is_empty() {
            out.push_str(&escape(line));
        } else {
            let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(line));
        }
        out.push('\n');
    }
    out.push_str("</pre>");
    out
}

fn calls(out: &mut String, calls: &[Call]) {
    let _ = write!(
        out,
        "<h2>Model calls <span class=\"muted\">({})</span></h2>",
        calls.len()
    );
    if calls.is_empty() {
        out.push_str("<p class=\"muted\">No model call.</p>");
        return;
    }
    out.push_str(
        "<table><thead><tr><th>#</th><th>agent</th><th>file</th><th class=\"num\">round</th>\
         <th class=\"num\">input tokens</th><th class=\"num\">output tokens</th>\
         <th class=\"num\">cost</th><th class=\"num\">seconds</th></tr></thead><tbody>",
    );
    for (i, c) in calls.iter().enumerate() {
        let _ = write!(
            out,
            "<tr class=\"call\"><td>{}</td><td>{}{}</td><td class=\"mono\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td></tr>",
            i + 1,
            escape(&c.agent),
            if c.failed { " <span class=\"badge v-error\">failed</span>" } else { "" },
            escape(c.file.as_deref().unwrap_or("")),
            c.iteration.map(|n| n.to_string()).unwrap_or_default(),
            c.input_tokens,
            c.output_tokens,
            cost_text(c.cost_usd),
            c.seconds
        );
    }
    out.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "+print('</script><script>alert(1)</script>')\n+x = \"<img src=x onerror=alert(2)>\" & 'y'\n";

    fn hostile_report() -> RunReport {
        RunReport {
            run_id: "r1".into(),
            target: "<b>target</b>".into(),
            plans: vec!["<!-- plan --> </script>".into()],
            attempts: vec![Attempt {
                file: "a.py".into(),
                verdict: "rejected".into(),
                reason: Some("bad <img src=x onerror=alert(3)>".into()),
                proposal: Some(HOSTILE.into()),
                ..Attempt::default()
            }],
            ..RunReport::default()
        }
    }

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape("<img src=x onerror='a'> & \"q\""),
            "&lt;img src=x onerror=&#39;a&#39;&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn a_hostile_diff_stays_text() {
        let html = render(&hostile_report());
        // The page has exactly its own two script elements and no image.
        assert_eq!(html.matches("<script").count(), 2, "{html}");
        assert_eq!(html.matches("</script>").count(), 2, "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>target"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
        assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"));
    }

    #[test]
    fn the_embedded_data_reads_back_unchanged() {
        let report = hostile_report();
        let html = render(&report);
        let start = html.find("id=\"swarm-data\">").unwrap() + "id=\"swarm-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let embedded = &html[start..end];
        assert!(!embedded.contains('<') && !embedded.contains('>'));
        let back: serde_json::Value = serde_json::from_str(embedded).unwrap();
        assert_eq!(back["attempts"][0]["proposal"], HOSTILE);
        assert_eq!(back["plans"][0], "<!-- plan --> </script>");
    }

    #[test]
    fn filling_is_one_pass() {
        assert_eq!(
            fill("a {{x}} b {{y}} {{unknown}}", &[("x", "{{y}}"), ("y", "2")]),
            "a {{y}} b 2 {{unknown}}"
        );
    }

    #[test]
    fn diff_lines_are_coloured_by_their_sign() {
        let block = diff_block("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n ctx");
        assert!(block.contains("<span class=\"del\">-old</span>"));
        assert!(block.contains("<span class=\"add\">+new</span>"));
        assert!(block.contains("<span class=\"hunk\">@@ -1 +1 @@</span>"));
        assert!(block.contains("\n--- a/x\n") || block.contains(">--- a/x\n"));
    }

    #[test]
    fn every_attempt_is_a_section() {
        let mut report = hostile_report();
        report.attempts.push(Attempt {
            file: "b.py".into(),
            verdict: "improved".into(),
            number: Some(1),
            commit: Some("0123456789abcdef".into()),
            diff: Some("+ok".into()),
            ..Attempt::default()
        });
        let html = render(&report);
        assert_eq!(html.matches("<section class=\"attempt\"").count(), 2);
        assert!(html.contains("commit <span class=\"mono\">0123456789</span>"));
    }

    #[test]
    fn every_task_is_a_row_with_its_status() {
        let mut report = hostile_report();
        report.tasks.push(crate::log::TaskRecord {
            number: 2,
            total: 3,
            title: "<b>Move</b> parse_money".into(),
            status: "skipped".into(),
            reason: Some("task 1, which it depends on, was not done".into()),
            ..crate::log::TaskRecord::default()
        });
        let page = render(&report);
        assert!(page.contains("<h2>Tasks</h2>"), "{page}");
        assert!(
            page.contains("2/3 &lt;b&gt;Move&lt;/b&gt; parse_money"),
            "{page}"
        );
        assert!(
            page.contains(": task 1, which it depends on, was not done"),
            "{page}"
        );
    }
}
