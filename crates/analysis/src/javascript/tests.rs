use super::*;
use crate::Severity;

fn names(calls: &[DangerousCall]) -> Vec<&str> {
    calls.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn dialects_follow_the_file_name() {
    assert_eq!(Dialect::of("src/a.mjs"), Some(Dialect::JavaScript));
    assert_eq!(Dialect::of("src/a.cjs"), Some(Dialect::JavaScript));
    assert_eq!(Dialect::of("src/App.jsx"), Some(Dialect::JavaScript));
    assert_eq!(Dialect::of("src/a.cts"), Some(Dialect::TypeScript));
    assert_eq!(Dialect::of("types/a.d.ts"), Some(Dialect::TypeScript));
    assert_eq!(Dialect::of("src/App.tsx"), Some(Dialect::Tsx));
    assert_eq!(Dialect::of("src/a.py"), None);
    assert_eq!(Dialect::of("Makefile"), None);
}

#[test]
fn named_functions_methods_and_bound_arrows_are_measured() {
    let source = "\
// totals
import { toGrams as g } from './units.js';
const { readFile } = require('fs');

/* a block
   comment */
export function cost(items, unit) {
  let sum = 0;
  for (const item of items) {
    if (item.free && !item.paid || item.gift) {
      continue;
    }
    sum += item.price ?? 0;
  }
  return items.map((i) => (i.big ? 2 : 1)).length + sum;
}

const double = (x) => x * 2;

class Cart {
  add(item) {
    switch (item.kind) {
      case 'a':
        return 1;
      case 'b':
        return 2;
      default:
        return 0;
    }
  }
}

module.exports.later = function () {
  try { return 1; } catch (e) { return 2; }
};
";
    let m = analyze("src/cost.js", source);
    let found: Vec<(&str, u32)> = m
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.complexity))
        .collect();
    // cost: for, if, &&, ||, ??, and the ternary inside the anonymous arrow.
    assert_eq!(
        found,
        [
            ("cost", 7),
            ("double", 1),
            ("Cart.add", 3),
            ("module.exports.later", 2)
        ]
    );
    assert_eq!(m.functions[0].line, 7);
    assert_eq!(m.functions[0].loc, 10);
    // 4 blank lines, 3 comment-only ones.
    assert_eq!(m.loc, source.lines().count() - 7);
    assert!(m.syntax_errors.is_empty());
    assert_eq!(m.severity, Severity::Low);
    assert_eq!(m.imported_names, ["readFile", "toGrams"]);
}

#[test]
fn typescript_and_tsx_parse_with_their_grammars() {
    let ts = "export interface Money { cents: number }\n\
              export function add(a: Money, b: Money): Money {\n  return { cents: a.cents + b.cents };\n}\n";
    assert_eq!(check_syntax("src/money.ts", ts), Ok(()));
    assert_eq!(analyze("src/money.ts", ts).functions[0].name, "add");
    // Type annotations are not JavaScript.
    assert!(check_syntax("src/money.js", ts).is_err());
    let tsx = "export const App = (p: { n: number }) => <div>{p.n}</div>;\n";
    assert_eq!(check_syntax("src/App.tsx", tsx), Ok(()));
    let jsx = "export const App = (p) => <div>{p.n}</div>;\n";
    assert_eq!(check_syntax("src/App.jsx", jsx), Ok(()));
}

#[test]
fn a_syntax_error_is_found_and_makes_the_file_high() {
    let source = "export function f(a) {\n  return a +;\n}\n";
    let issue = check_syntax("a.js", source).expect_err("does not parse");
    assert_eq!(issue.line, 2);
    let m = analyze("a.js", source);
    assert_eq!(m.syntax_errors, [2]);
    assert_eq!(m.severity, Severity::High);
    let missing = "function f( {\n";
    assert!(check_syntax("b.ts", missing).is_err());
}

#[test]
fn a_complex_function_is_a_hotspot() {
    let mut body = String::from("function busy(x) {\n");
    for i in 0..12 {
        body.push_str(&format!("  if (x === {i}) {{ return {i}; }}\n"));
    }
    body.push_str("  return -1;\n}\n");
    let m = analyze("busy.js", &body);
    assert_eq!(m.functions[0].complexity, 13);
    assert_eq!(m.hotspots, ["busy"]);
    assert_eq!(m.severity, Severity::Medium);
}

#[test]
fn statements_are_counted_once_each() {
    let source = "import a from 'a';\nexport const x = 1;\nexport { a };\nfunction f() {\n  if (x) {\n    return 1;\n  }\n}\n";
    // import, const (through its export), export {a}, function, if, return.
    assert_eq!(statement_count("a.js", source), 6);
    assert_eq!(statement_count("a.ts", "type T = number;\n"), 1);
}

#[test]
fn code_runners_and_the_network_are_dangerous() {
    let source = "\
const cp = require('child_process');
import vm from 'node:vm';
import { readFile } from 'fs/promises';
import * as http from 'node:http';
export { run } from 'child_process';
eval(code);
globalThis['eval'](code);
new Function('a', 'return a');
setTimeout('alert(1)', 10);
setTimeout(() => 1, 10);
require(name);
await import(`./plugins/${name}.js`);
await import('./plain.js');
process.binding('fs');
fetch('https://example.com');
new WebSocket(url);
";
    let found = dangerous_calls("a.mjs", source);
    assert_eq!(
        names(&found),
        [
            "import child_process",
            "import vm",
            "import http",
            "import child_process",
            "eval",
            "eval",
            "Function",
            "setTimeout(string)",
            "require(<computed>)",
            "import(<computed>)",
            "process.binding",
            "fetch",
            "new WebSocket",
        ]
    );
    assert_eq!(found[4].line, 6);
}

#[test]
fn writes_outside_the_project_are_dangerous_and_inside_are_not() {
    let source = "\
fs.writeFileSync('/etc/passwd', data);
fs.promises.rm('../../elsewhere', { recursive: true });
writeFile(path.join(os.homedir(), '.bashrc'), line);
fs.appendFileSync('/tmp/' + name, line);
fs.writeFileSync(path.resolve('/var/data', name), line);
fs.writeFileSync('out/report.txt', data);
fs.writeFileSync(path.join(__dirname, 'cache.json'), data);
fs.readFileSync('/etc/hosts');
";
    let found = dangerous_calls("a.js", source);
    let lines: Vec<usize> = found.iter().map(|c| c.line).collect();
    assert_eq!(lines, [1, 2, 3, 4, 5]);
    assert!(found.iter().all(|c| c.name == "write outside the project"));
}

#[test]
fn ordinary_code_has_no_findings() {
    let source = "\
import { sum } from './math.js';
const lodash = require('lodash');
export const total = (xs) => xs.reduce(sum, 0);
obj.eval = 1;
model.evaluate(x);
const f = new Formatter();
";
    assert!(dangerous_calls("a.ts", source).is_empty());
}

#[test]
fn imported_modules_are_read_in_every_form() {
    let source = "import { a } from './a.js';\nimport './side';\nexport { b } from \"../b\";\nconst c = require('./c');\nconst d = await import('./d');\nconst e = require(name);\n";
    assert_eq!(
        super::imported_modules("x.ts", source),
        ["./a.js", "./side", "../b", "./c", "./d"]
    );
}
