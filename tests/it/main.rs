//! The one integration-test binary; one module per area.

mod analysis;
mod ci;
mod cli;
mod demo;
mod e2e;
mod git;
mod install;
mod javascript;
mod layers;
mod llm;
mod log;
mod log_fixture;
mod patch_corpus;
mod patch_props;
mod patch_support;
mod pull_request;
mod report;
mod rooms;
mod settings;
mod support;
mod tools;
