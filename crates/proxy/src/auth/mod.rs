//! Credential checks the authentication stages share.

pub mod apr1;
pub mod jwt;
pub mod password;
