//! The host's one integration-test binary: every test starts a real server on
//! port 0 with a fresh data folder.

mod abuse;
mod assurance;
mod budget;
mod budgets;
mod crash;
mod delegation;
mod door;
mod errors;
mod flows;
mod helpers;
mod idempotency;
mod logs;
mod persistence;
mod process;
mod races;
mod surface;
mod web;
