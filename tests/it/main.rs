mod llm;
mod support;
