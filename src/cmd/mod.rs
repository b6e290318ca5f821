//! One module per command; `main` dispatches here.

pub(crate) mod auth;
pub(crate) mod batch;
pub(crate) mod bridges;

pub(crate) mod call;
pub(crate) mod check_config;
pub(crate) mod completions;
pub(crate) mod detail;
pub(crate) mod list;
pub(crate) mod lock;
pub(crate) mod man;
pub(crate) mod skills;
pub(crate) mod task;
