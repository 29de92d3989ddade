mod analysis;
mod support;
mod tools;
