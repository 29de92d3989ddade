mod git;
mod llm;
mod support;
