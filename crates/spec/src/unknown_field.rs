//! serde's unknown-field errors with the closest field suggested ([`schedlab_plan::suggest`]).

use schedlab_plan::suggest::closest;

/// serde's "unknown field `X`, expected one of `a`, `b`" (or "expected `a`") with the
/// closest expected field named first: "unknown field `X`: did you mean `a`? expected one of
/// ...". Other messages come back as they were.
pub(crate) fn unknown_field(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((typed, expected)) = rest.split_once("`, expected ") else {
        return message.to_string();
    };
    let known: Vec<&str> =
        expected.split('`').enumerate().filter(|(i, _)| i % 2 == 1).map(|(_, name)| name).collect();
    match closest(typed, known) {
        Some(k) => format!("unknown field `{typed}`: did you mean `{k}`? expected {expected}"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_field_messages_name_the_closest_field_first() {
        let m = unknown_field("unknown field `repetitons`, expected one of `name`, `repetitions`");
        assert!(m.starts_with("unknown field `repetitons`: did you mean `repetitions`?"), "{m}");
        assert!(m.ends_with("expected one of `name`, `repetitions`"), "{m}");
        let far = "unknown field `qqqqqqq`, expected `name`";
        assert_eq!(unknown_field(far), far);
        assert_eq!(unknown_field("invalid type"), "invalid type");
    }
}
