//! The shapes of secrets, after gitleaks' rules (github.com/gitleaks/gitleaks,
//! `config/gitleaks.toml`): provider tokens with a fixed prefix (AWS, Google,
//! Azure, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, Hugging Face, npm,
//! PyPI, SendGrid, Twilio, Mailgun, DigitalOcean, Shopify, Databricks), JSON
//! Web Tokens, passwords in URLs, bearer tokens, the bodies of private key
//! blocks, and high-entropy values assigned to names like `*_KEY`,
//! `*_SECRET`, `*_TOKEN` or `PASSWORD` (also annotated, `API_KEY: str = …`,
//! or given as a default, `os.getenv("API_TOKEN", …)`).
//!
//! [`find`] returns where each secret value sits in a text: always within
//! one line, so replacing it never changes the text's lines (a key block's
//! body is one value per line). Pure functions; no state.

use std::sync::OnceLock;

use regex::Regex;

/// One secret value found in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Byte range of the value.
    pub start: usize,
    pub end: usize,
    /// Its shape's id (`aws-access-key`).
    pub kind: &'static str,
    /// 1 for a secret on its own; for a private key block, which line of
    /// its body (1, 2, …): the values of one block belong together.
    pub part: usize,
}

/// How a candidate matched by a shape's pattern is confirmed.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// The pattern is specific enough.
    Pattern,
    /// A value assigned to a key-, secret- or token-like name: random enough.
    Assigned,
    /// A value assigned to a password-like name: not a placeholder or a word.
    Password,
    /// A 40-character AWS secret access key near an AWS name: random enough.
    AwsSecret,
}

/// One shape: its id, a label for people, its pattern, the capture group
/// holding the value, and how a match is confirmed.
struct Shape {
    kind: &'static str,
    pattern: &'static str,
    group: usize,
    check: Check,
}

/// Every shape, most specific first: where two overlap, the earlier wins.
const SHAPES: &[Shape] = &[
    Shape {
        kind: "aws-access-key",
        pattern: r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "gcp-api-key",
        pattern: r"\b(AIza[0-9A-Za-z_-]{35})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "gcp-oauth-secret",
        pattern: r"\b(GOCSPX-[0-9A-Za-z_-]{28})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "github-token",
        pattern: r"\b((?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}|github_pat_[0-9A-Za-z_]{82})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "gitlab-token",
        pattern: r"\b(gl(?:pat|ptt|dt|rt|ft|imt|agent|oas|cbt|soat|ffct)-[0-9A-Za-z_-]{20,}|GR1348941[0-9A-Za-z_-]{20})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "slack-token",
        pattern: r"\b(xox[baprse]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "slack-webhook",
        pattern: r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "stripe-key",
        pattern: r"\b((?:sk|rk|pk)_(?:test|live|prod)_[0-9A-Za-z]{10,99})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "anthropic-key",
        pattern: r"\b(sk-ant-[a-z]+\d*-[0-9A-Za-z_-]{20,})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "openai-key",
        pattern: r"\b(sk-(?:proj|svcacct|admin)-[0-9A-Za-z_-]{20,}|sk-[0-9A-Za-z]{20}T3BlbkFJ[0-9A-Za-z]{20}|sk-[0-9A-Za-z_-]{32,})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "huggingface-token",
        pattern: r"\b(hf_[A-Za-z]{34})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "npm-token",
        pattern: r"\b(npm_[0-9A-Za-z]{36})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "pypi-token",
        pattern: r"\b(pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{50,})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "sendgrid-key",
        pattern: r"\b(SG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "twilio-key",
        pattern: r"\b(SK[0-9a-fA-F]{32})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "mailgun-key",
        pattern: r"\b(key-[0-9a-f]{32})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "digitalocean-token",
        pattern: r"\b(do[opr]_v1_[a-f0-9]{64})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "shopify-token",
        pattern: r"\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "databricks-token",
        pattern: r"\b(dapi[a-f0-9]{32})\b",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "azure-storage-key",
        pattern: r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{42,88}={0,2})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "azure-client-secret",
        pattern: r#"(?:^|[\\'"`\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"`\s<),])"#,
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "jwt",
        pattern: r"\b(ey[A-Za-z0-9_-]{15,}\.ey[A-Za-z0-9_-]{15,}\.[A-Za-z0-9_-]{10,}={0,2})",
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "bearer-token",
        pattern: r"\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)",
        group: 1,
        check: Check::Assigned,
    },
    Shape {
        kind: "url-password",
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:@/'"]{1,64}:([^\s:@/'"{}$%<>]{3,128})@"#,
        group: 1,
        check: Check::Pattern,
    },
    Shape {
        kind: "aws-secret-key",
        pattern: r#"(?i)aws.{0,60}?[\s'"=:,(]([A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])"#,
        group: 1,
        check: Check::AwsSecret,
    },
    Shape {
        kind: "password",
        pattern: r#"(?i)\b[A-Za-z0-9_.-]*(?:passw(?:or)?d|passwd|pwd|passphrase)[A-Za-z0-9_.-]*(?:["']\s*,|["']?\s*(?::\s*[A-Za-z_][\w.\[\], |]{0,40}?\s*=|=|:=|:|=>))\s*[bBrRuU]{0,2}(?:"([^"\s]{6,200})"|'([^'\s]{6,200})')"#,
        group: 0,
        check: Check::Password,
    },
    Shape {
        kind: "secret-value",
        pattern: r#"(?i)\b[A-Za-z0-9_.-]*(?:key|secret|token|credentials?|auth)[A-Za-z0-9_.-]*(?:["']\s*,|["']?\s*(?::\s*[A-Za-z_][\w.\[\], |]{0,40}?\s*=|=|:=|:|=>))\s*[bBrRuU]{0,2}(?:"([^"\s]{10,200})"|'([^'\s]{10,200})')"#,
        group: 0,
        check: Check::Assigned,
    },
    Shape {
        kind: "secret-value",
        pattern: r##"(?im)^\s*(?:export\s+)?[A-Za-z0-9_.-]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD)[A-Za-z0-9_.-]*\s*=\s*([^\s'"#]{12,200})\s*$"##,
        group: 1,
        check: Check::Assigned,
    },
];

/// The beginning and end of a private key block (PEM, OpenSSH, PGP).
const KEY_BLOCK: &str = r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----";

/// One line of a key block's body (after an escaped `\n` in a one-line block).
const KEY_LINE: &str = r"(?:\\n)?([A-Za-z0-9+/=]{16,})";

/// Values that stand for a secret rather than being one.
const DUMMIES: &[&str] = &[
    "password",
    "passwd",
    "changeme",
    "change_me",
    "secret",
    "example",
    "placeholder",
    "your_password",
    "yourpassword",
    "********",
    "xxxxxxxx",
    "none",
    "null",
];

/// What people call each shape.
pub fn label(kind: &str) -> &'static str {
    match kind {
        "aws-access-key" => "AWS access key id",
        "aws-secret-key" => "AWS secret access key",
        "gcp-api-key" => "Google API key",
        "gcp-oauth-secret" => "Google OAuth client secret",
        "github-token" => "GitHub token",
        "gitlab-token" => "GitLab token",
        "slack-token" => "Slack token",
        "slack-webhook" => "Slack webhook",
        "stripe-key" => "Stripe key",
        "anthropic-key" => "Anthropic API key",
        "openai-key" => "OpenAI API key",
        "huggingface-token" => "Hugging Face token",
        "npm-token" => "npm token",
        "pypi-token" => "PyPI token",
        "sendgrid-key" => "SendGrid key",
        "twilio-key" => "Twilio key",
        "mailgun-key" => "Mailgun key",
        "digitalocean-token" => "DigitalOcean token",
        "shopify-token" => "Shopify token",
        "databricks-token" => "Databricks token",
        "azure-storage-key" => "Azure storage key",
        "azure-client-secret" => "Azure client secret",
        "jwt" => "JSON Web Token",
        "bearer-token" => "bearer token",
        "url-password" => "password in a URL",
        "private-key" => "private key",
        "password" => "password",
        _ => "secret value",
    }
}

fn compiled() -> &'static [(Regex, &'static Shape)] {
    static COMPILED: OnceLock<Vec<(Regex, &'static Shape)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        SHAPES
            .iter()
            .map(|s| (Regex::new(s.pattern).expect("the shapes are valid"), s))
            .collect()
    })
}

fn key_block() -> &'static (Regex, Regex) {
    static BLOCK: OnceLock<(Regex, Regex)> = OnceLock::new();
    BLOCK.get_or_init(|| {
        (
            Regex::new(KEY_BLOCK).expect("the key block pattern is valid"),
            Regex::new(KEY_LINE).expect("the key line pattern is valid"),
        )
    })
}

/// Every secret value in `text`, in order, none overlapping another.
pub fn find(text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let (block, line) = key_block();
    for m in block.find_iter(text) {
        let body = &text[m.start()..m.end()];
        for (index, caps) in line.captures_iter(body).enumerate() {
            let value = caps.get(1).expect("group 1 always takes part");
            let part = index + 1;
            found.push(Found {
                start: m.start() + value.start(),
                end: m.start() + value.end(),
                kind: "private-key",
                part,
            });
        }
    }
    for (regex, shape) in compiled() {
        for caps in regex.captures_iter(text) {
            let value = match shape.group {
                0 => caps.get(1).or_else(|| caps.get(2)),
                n => caps.get(n),
            };
            let Some(value) = value else { continue };
            if !confirmed(shape.check, value.as_str()) {
                continue;
            }
            let overlaps = found
                .iter()
                .any(|f| f.start < value.end() && value.start() < f.end);
            if !overlaps {
                found.push(Found {
                    start: value.start(),
                    end: value.end(),
                    kind: shape.kind,
                    part: 1,
                });
            }
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// Whether a value matched by a shape with this check is a secret.
fn confirmed(check: Check, value: &str) -> bool {
    if is_placeholder(value) {
        return false;
    }
    match check {
        Check::Pattern => true,
        Check::Password => {
            let lower = value.to_ascii_lowercase();
            let symbol = value
                .chars()
                .any(|c| !c.is_ascii_alphanumeric() && c != '_');
            let cased = value.chars().any(|c| c.is_ascii_uppercase())
                && value.chars().any(|c| c.is_ascii_lowercase());
            !DUMMIES.contains(&lower.as_str())
                && (value.chars().any(|c| c.is_ascii_digit()) || symbol || cased)
        }
        Check::Assigned => {
            let env_name = value
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            let dotted_name = value
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                && value.contains('.')
                && !value.chars().any(|c| c.is_ascii_digit());
            value.chars().any(|c| c.is_ascii_digit())
                && value.chars().any(|c| c.is_ascii_alphabetic())
                && !value.contains("://")
                && !env_name
                && !dotted_name
                && entropy(value) >= 3.5
        }
        Check::AwsSecret => {
            value.chars().any(|c| c.is_ascii_digit())
                && value.chars().any(|c| c.is_ascii_uppercase())
                && value.chars().any(|c| c.is_ascii_lowercase())
                && entropy(value) >= 4.0
        }
    }
}

/// Whether a value is one of swarm's placeholders (see [`super::placeholder_of`]).
fn is_placeholder(value: &str) -> bool {
    value.contains("[SECRET_")
}

/// Shannon entropy of a value, in bits per character.
pub fn entropy(value: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in value.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = value.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&'static str, String)> {
        find(text)
            .into_iter()
            .map(|f| (f.kind, text[f.start..f.end].to_string()))
            .collect()
    }

    #[test]
    fn provider_tokens_are_found_by_their_prefix() {
        let cases = [
            ("KEY = 'AKIAIOSFODNN7EXAMPLE'", "aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
            (
                "k = \"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW\"",
                "gcp-api-key",
                "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
            ),
            (
                "t = 'ghp_1234567890abcdefghijABCDEFGHIJ123456'",
                "github-token",
                "ghp_1234567890abcdefghijABCDEFGHIJ123456",
            ),
            ("t = 'glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn'", "gitlab-token", "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn"),
            (
                "hook = 'xoxb-123456789012-abcdefABCDEF'",
                "slack-token",
                "xoxb-123456789012-abcdefABCDEF",
            ),
            (
                "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'",
                "stripe-key",
                "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            ),
            (
                "client = OpenAI(api_key='sk-proj-Abc123Def456Ghi789Jkl012Mno345')",
                "openai-key",
                "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
            ),
            (
                "x = 'sk-ant-api03-Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'",
                "anthropic-key",
                "sk-ant-api03-Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa",
            ),
            (
                "jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'",
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            ),
            (
                "DB = 'postgres://app:s3cr3t-Pw@db.internal:5432/app'",
                "url-password",
                "s3cr3t-Pw",
            ),
        ];
        for (text, kind, value) in cases {
            assert_eq!(kinds(text), vec![(kind, value.to_string())], "{text}");
        }
    }

    #[test]
    fn the_aws_pair_and_assigned_secrets() {
        let text = "AWS_ACCESS_KEY_ID = \"AKIAIOSFODNN7EXAMPLE\"\nAWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n";
        let found = kinds(text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].1, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
        assert_eq!(
            kinds("api_token = 'f3a9c1e07b2d4e6a8c0f1e3d5b7a9c2e'")[0].1,
            "f3a9c1e07b2d4e6a8c0f1e3d5b7a9c2e"
        );
        assert_eq!(kinds("DB_PASSWORD = 'hunter2!'")[0].1, "hunter2!");
        assert_eq!(
            kinds("export SERVICE_TOKEN=Zq81xL0pQv7MmT2c")[0].1,
            "Zq81xL0pQv7MmT2c"
        );
    }

    #[test]
    fn annotated_defaulted_and_bearer_secrets() {
        let token = "a8f3k2m9x7q1w4e6r5t0y2u8i3o9p1";
        for text in [
            format!("API_KEY: str = \"{token}\""),
            format!("    api_token: Optional[str] = '{token}'"),
            format!("def connect(api_key: str = \"{token}\"):"),
            format!("os.environ.setdefault(\"API_TOKEN\", \"{token}\")"),
            format!("headers = {{\"Authorization\": \"Bearer {token}\"}}"),
        ] {
            assert_eq!(kinds(&text).len(), 1, "{text}");
            assert_eq!(kinds(&text)[0].1, token, "{text}");
        }
        assert_eq!(
            kinds("password = os.getenv(\"DB_PASSWORD\", \"Sup3rS3cret!\")"),
            vec![("password", "Sup3rS3cret!".to_string())]
        );
        for text in [
            "verify(password, \"Invalid!\")",
            "check(token, \"expected_4_parts\")",
            "KEY: Final = 'OPENAI_API_KEY'",
            "auth = 'Bearer ' + token",
        ] {
            assert_eq!(kinds(text), vec![], "{text}");
        }
    }

    #[test]
    fn names_words_and_references_are_not_secrets() {
        for text in [
            "PASSWORD_FIELD = 'password_confirmation'",
            "password = 'changeme'",
            "TOKEN_TYPE = 'bearer'",
            "KEY_NAME = 'OPENAI_API_KEY'",
            "API_KEY = os.environ['OPENAI_API_KEY']",
            "TOKEN_URL = 'https://auth.example.com/v2/token'",
            "SECRET_HEADER = 'X-Secret-Header'",
            "AUTH_BACKEND = 'app.auth.backends.TokenBackend'",
            "api_key = '[SECRET_1_OPENAI_KEY]'",
            "def mean(values):\n    return sum(values) / len(values)\n",
        ] {
            assert_eq!(kinds(text), vec![], "{text}");
        }
    }

    #[test]
    fn a_key_block_is_one_value_per_line_of_its_body() {
        let text = "KEY = \"\"\"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL\n-----END RSA PRIVATE KEY-----\"\"\"\n";
        let found = find(text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].kind, "private-key");
        assert_eq!((found[0].part, found[1].part), (1, 2));
        assert_eq!(
            &text[found[0].start..found[0].end],
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo"
        );
        let escaped = "\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\"";
        let found = find(escaped);
        assert_eq!(found.len(), 1);
        assert_eq!(
            &escaped[found[0].start..found[0].end],
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
        );
    }
}
