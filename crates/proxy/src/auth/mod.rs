//! Credential checks the authentication stages share.

pub mod apr1;
pub mod password;
