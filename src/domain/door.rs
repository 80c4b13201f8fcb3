//! Identity at the door (issue #15, point 2): who may start a study, each check optional per
//! study. The settings and their validation; the checks themselves run at the consent page
//! (`survey::door`), the token's in [`super::prolific_token`].

/// The largest per-address limit a study may set (higher is no limit worth the name).
pub const MAX_ADDRESS_LIMIT: u32 = 10_000;

/// A study's door. The default (every check off, the server's address limit) is what a study
/// without settings has.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DoorSettings {
    /// A valid Prolific `prolific_token` is needed to start.
    pub require_token: bool,
    /// The `aud` the token must carry: our domain, e.g. `survey.example.org`.
    pub token_audience: Option<String>,
    /// When set, the token's `prolific.workspace_id` must be this.
    pub token_workspace_id: Option<String>,
    /// No Prolific id in the link: no entry.
    pub prolific_only: bool,
    /// New participants per client address in the server's window (`None`: the server's
    /// `new_participants_per_address`; 0: no limit).
    pub address_limit: Option<u32>,
    /// Slugs of earlier studies whose Prolific ids may not take part.
    pub exclude_studies: Vec<String>,
}

impl DoorSettings {
    /// Whether anything differs from the default (an open door).
    pub fn is_default(&self) -> bool {
        *self == DoorSettings::default()
    }

    /// Every problem, or nothing. `own_slug`: a study cannot exclude itself (its own
    /// returning participants resume, they are not new).
    pub fn validate(&self, own_slug: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let text_ok = |v: &str| {
            !v.is_empty()
                && v.len() <= 253
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        };
        match &self.token_audience {
            Some(a) if !text_ok(a) => errors.push(
                "The token audience must be a domain name such as survey.example.org.".into(),
            ),
            None if self.require_token => errors.push(
                "Requiring Prolific's token needs the audience it is issued for (our domain)."
                    .into(),
            ),
            _ => {}
        }
        if let Some(w) = &self.token_workspace_id {
            if !text_ok(w) || w.len() > 64 {
                errors.push("The Prolific workspace id must be letters and digits.".into());
            }
        }
        if self.address_limit.is_some_and(|n| n > MAX_ADDRESS_LIMIT) {
            errors.push(format!(
                "The limit per address must be at most {MAX_ADDRESS_LIMIT} (or empty for the \
                 server's)."
            ));
        }
        if self.exclude_studies.iter().any(|s| s == own_slug) {
            errors.push("A study cannot exclude its own participants.".into());
        }
        errors
    }

    /// The limit in force for this study, given the server's.
    pub fn limit(&self, server: u32) -> u32 {
        self.address_limit.unwrap_or(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_needs_an_audience_and_values_are_checked() {
        let mut d = DoorSettings {
            require_token: true,
            ..DoorSettings::default()
        };
        assert_eq!(d.validate("s").len(), 1, "no audience");
        d.token_audience = Some("survey.example.org".into());
        assert!(d.validate("s").is_empty());
        d.token_audience = Some("<script>".into());
        d.token_workspace_id = Some("w w".into());
        d.address_limit = Some(MAX_ADDRESS_LIMIT + 1);
        d.exclude_studies = vec!["s".into()];
        assert_eq!(d.validate("s").len(), 4, "{:?}", d.validate("s"));
        assert!(DoorSettings::default().validate("s").is_empty());
        assert!(DoorSettings::default().is_default());
    }

    #[test]
    fn the_studys_limit_overrides_the_servers() {
        let mut d = DoorSettings::default();
        assert_eq!(d.limit(30), 30);
        d.address_limit = Some(2);
        assert_eq!(d.limit(30), 2);
        d.address_limit = Some(0);
        assert_eq!(d.limit(30), 0, "0: no limit");
    }
}
