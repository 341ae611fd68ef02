//! `[iosched.NAME]`: an I/O scheduler and its tunables, for the `iosched` axis.

use super::Ctx;
use crate::error::SpecError;
use crate::raw::RawIosched;
use schedlab_plan::{IoSetting, QUEUE_TUNABLES, SCHEDULER_TUNABLES};
use serde_spanned::Spanned;

/// An I/O scheduler's name as the kernel spells them: lower case, digits, '-' and '_'.
pub(crate) fn scheduler_name(cx: &Ctx, v: &Spanned<String>) -> Result<String, SpecError> {
    let n = v.get_ref();
    if n.is_empty()
        || !n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return cx.err(
            v.span(),
            format!("\"{n}\" is not an I/O scheduler name (e.g. none, mq-deadline, kyber, bfq)"),
        );
    }
    Ok(n.clone())
}

/// One `[iosched.NAME]` entry: a known scheduler's tunables by name, any other's plain words.
pub(super) fn iosched_def(cx: &Ctx, name: &str, r: &RawIosched) -> Result<IoSetting, SpecError> {
    let scheduler = scheduler_name(cx, &r.scheduler)?;
    let known = SCHEDULER_TUNABLES.iter().find(|(s, _)| *s == scheduler).map(|(_, t)| *t);
    let mut tunables = Vec::new();
    for (k, v) in &r.tunables {
        let key = k.get_ref();
        let value = match v.get_ref() {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => (*b as u8).to_string(),
            toml::Value::String(s)
                if !s.is_empty()
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                s.clone()
            }
            other => {
                return cx.err(
                    v.span(),
                    format!(
                    "tunable {key}: expected an integer, a boolean or a plain word, got {other}"
                ),
                )
            }
        };
        let ok_queue = QUEUE_TUNABLES.contains(&key.as_str());
        match known {
            _ if ok_queue => {}
            Some(list) if !list.contains(&key.as_str()) => {
                let mut all: Vec<&str> = list.to_vec();
                all.extend(QUEUE_TUNABLES);
                return cx.err(
                    k.span(),
                    format!(
                        "scheduler {scheduler} has no tunable \"{key}\"; it has: {}",
                        all.join(", ")
                    ),
                );
            }
            _ if !key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                || key.is_empty() =>
            {
                return cx.err(k.span(), format!("\"{key}\" is not a tunable name"));
            }
            _ => {}
        }
        tunables.push((key.clone(), value));
    }
    Ok(IoSetting { name: name.to_string(), scheduler, tunables })
}
