//! Credential checks the authentication stages share.

pub mod apr1;
pub mod ext_authz;
pub mod jwt;
pub mod password;
