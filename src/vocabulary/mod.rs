//! The ground floor: words and parsers every layer above may use, and which
//! import nothing of this crate's but the start-up [`Error`](crate::error::Error).
//! Reasons and enforcement modes, Kueue's names, Kubernetes quantities, Go
//! durations, the YAML read guards and the text helpers of messages.

pub mod caller_text;
pub mod go_duration;
pub mod kueue;
pub mod own_names;
pub mod quantity;
pub mod reason;
pub mod scheduling;
pub mod text;
pub mod yaml;
