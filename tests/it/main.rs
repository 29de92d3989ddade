mod analysis;
mod cli;
mod e2e;
mod git;
mod llm;
mod support;
mod tools;
