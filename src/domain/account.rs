//! Accounts: what a researcher or an admin may do.

/// What an account may do: researchers read and export; admins also change things.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Researcher,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Researcher => "researcher",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "admin" => Some(Role::Admin),
            "researcher" => Some(Role::Researcher),
            _ => None,
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Role::parse(s).ok_or_else(|| format!("unknown role {s:?} (admin or researcher)"))
    }
}
