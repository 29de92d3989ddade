//! The model side of a run's settings: the provider, its endpoint (base
//! URL, key, model), recorded replies to play back, and the price table.

use std::path::PathBuf;

use super::{env_of, Endpoint, Resolver};
use crate::config::{self, Source, Sourced};
use crate::error::SwarmError;
use crate::llm::{Price, PriceTable, ProviderKind};

impl Resolver<'_> {
    /// The provider: flag, `SWARM_PROVIDER`, file, else the one whose key
    /// is set.
    pub(super) fn provider(&mut self) -> Result<Option<ProviderKind>, SwarmError> {
        let named: Option<Sourced<String>> = if let Some(p) = &self.args.provider {
            Some(Sourced {
                value: p.clone(),
                source: env_of(self.args, "--provider")
                    .map_or(Source::Flag("--provider"), Source::Env),
            })
        } else if let Some(p) = self.env.var("SWARM_PROVIDER") {
            Some(Sourced {
                value: p,
                source: Source::Env("SWARM_PROVIDER".into()),
            })
        } else {
            self.in_file(|f| f.provider.clone()).map(|(v, p)| Sourced {
                value: v,
                source: Source::File(p.to_path_buf()),
            })
        };
        let provider: Sourced<ProviderKind> = match named {
            Some(s) => Sourced {
                value: config::parse_provider(&s.value)?,
                source: s.source,
            },
            None => match config::detect_provider(self.env) {
                Some((kind, var)) => Sourced {
                    value: kind,
                    source: self.env_source(var),
                },
                None => {
                    let shown = format!("(not set: {})", config::no_provider_hint());
                    self.row("provider", shown, &Source::Default);
                    return Ok(None);
                }
            },
        };
        self.row(
            "provider",
            provider.value.name().to_string(),
            &provider.source,
        );
        Ok(Some(provider.value))
    }

    /// The model, its base URL, whether it is local, and the key.
    pub(super) fn endpoint(&mut self, kind: ProviderKind) -> Endpoint {
        let model = self.pick(
            self.args.model.clone(),
            "--model",
            self.env.var("SWARM_MODEL").map(|m| (m, "SWARM_MODEL")),
            self.in_file(|f| f.model.clone()),
            crate::llm::default_model(kind).to_string(),
        );
        self.row("model", model.value.clone(), &model.source);
        let base_var = config::base_url_var(kind);
        let base_url = self.pick(
            self.args.base_url.clone().map(Some),
            "--base-url",
            base_var.and_then(|v| self.env.var(v).map(|u| (Some(u), v))),
            self.in_file(|f| f.base_url.clone().map(Some)),
            None,
        );
        let shown = base_url
            .value
            .clone()
            .unwrap_or_else(|| "(provider default)".into());
        self.row("base_url", shown, &base_url.source);
        // A model on this machine or the local network gets slower defaults.
        let local = self.pick(
            self.args.local_model,
            "--local-model",
            None,
            self.in_file(|f| f.local_model),
            base_url.value.as_deref().is_some_and(config::is_local_url),
        );
        self.row("local_model", local.value.to_string(), &local.source);
        let key = config::key_for(kind, self.env);
        match &key {
            Some((secret, var)) => {
                let source = self.env_source(var);
                self.row("api_key", config::mask(secret), &source)
            }
            None => self.row("api_key", "(not set)".into(), &Source::Default),
        }
        Endpoint {
            model: model.value,
            base_url: base_url.value,
            local: local.value,
            key,
        }
    }

    /// The recording a replay answers from (only for `--provider replay`).
    pub(super) fn replay_file(
        &mut self,
        kind: ProviderKind,
    ) -> Result<Option<PathBuf>, SwarmError> {
        if kind != ProviderKind::Replay {
            return Ok(None);
        }
        let Some(cassette) = self
            .args
            .cassette
            .clone()
            .or_else(|| self.env.var("SWARM_CASSETTE").map(PathBuf::from))
        else {
            return Err(SwarmError::invalid(
                "--provider replay needs --cassette FILE (a cassette from --record, or an experiment log)",
            ));
        };
        if !cassette.is_file() {
            return Err(SwarmError::invalid(format!(
                "no such cassette: {}",
                cassette.display()
            )));
        }
        self.row(
            "cassette",
            cassette.display().to_string(),
            &Source::Flag("--cassette"),
        );
        Ok(Some(cassette))
    }

    /// Built-in prices with the config file's overrides.
    pub(super) fn prices(&mut self) -> PriceTable {
        let mut prices = PriceTable::new();
        // The farthest file first, so a nearer one's price wins.
        let files = self.files;
        for (path, file) in files.layers().iter().rev() {
            for (model, price) in file.prices.iter().flatten() {
                prices = prices.with_override(model.clone(), Price::new(price.input, price.output));
                self.row(
                    &format!("price {model}"),
                    format!("{} / {} USD per Mtok", price.input, price.output),
                    &Source::File(path.clone()),
                );
            }
        }
        prices
    }
}
