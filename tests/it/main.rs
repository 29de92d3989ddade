mod git;
mod support;
