//! One module per command; `main` dispatches here.

pub(crate) mod check_config;
