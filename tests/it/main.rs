//! The one integration-test binary; one module per area.

mod patch_corpus;
mod patch_props;
mod patch_support;
