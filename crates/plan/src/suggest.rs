//! "Did you mean ...": the known name closest to a mistyped one, for the spec's fields and
//! workloads and the CLI's cell keys, figures and subcommands' values.

/// How alike (Jaro similarity, 0 to 1) a known name must be to a typed one to be suggested;
/// clap suggests subcommands from the same measure and threshold.
const LIKENESS: f64 = 0.7;

/// The known name most like `typed`, if any is like it at all (and it is not `typed`).
pub fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .filter(|k| *k != typed)
        .map(|k| (strsim::jaro(typed, k), k))
        .filter(|(likeness, _)| *likeness > LIKENESS)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// ` (did you mean "NAME"?)` for the known name most like `typed`, or nothing.
pub fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, known).map(|k| format!(" (did you mean \"{k}\"?)")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_name_is_suggested_and_a_far_one_is_not() {
        let known = ["repetitions", "warmup", "name", "order"];
        assert_eq!(closest("repetitons", known), Some("repetitions"));
        assert_eq!(closest("zzzzzzzz", known), None);
        assert_eq!(closest("warmup", known), None, "the name itself is no suggestion");
        assert_eq!(did_you_mean("warmpu", known), " (did you mean \"warmup\"?)");
    }
}
