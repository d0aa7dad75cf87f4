//! The host's one integration-test binary: the tests start a real server on
//! port 0 with a fresh data folder, except `migration`, which opens a data
//! folder made by the release before organisations.

mod abuse;
mod approvals;
mod args;
mod assurance;
mod authority;
mod authzen;
mod batch;
mod budget;
mod config_cli;
mod crash;
mod delegation;
mod door;
mod errors;
mod events;
mod failclosed;
mod files;
mod flows;
mod helpers;
mod hostile_bodies;
// Several hosts on one PostgreSQL database: compiled only with the
// `postgres-suite` feature, which `cargo xtask test` enables (and gives the
// suite the PostgreSQL server it starts), so a plain `cargo test` runs
// everything that needs nothing outside the repository.
#[cfg(feature = "postgres-suite")]
mod hosts;
mod idempotency;
mod identity;
mod key_revocation;
mod log;
mod logs;
mod messages;
mod migration;
mod names;
mod oauth;
mod openapi;
mod orgs;
mod otel;
mod overspend;
mod persistence;
mod process;
mod races;
mod reputation;
mod reviewer;
mod secrets;
mod submitter;
mod surface;
mod transfer;
mod trust;
mod web;
mod webhooks;
mod witness;
