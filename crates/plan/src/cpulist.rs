//! Kernel-style CPU lists ("0-1,3"), as specs write them and the kernel prints them.

/// Parses a CPU list such as `0-1,3` into ascending CPU numbers without duplicates.
pub fn parse(s: &str) -> Result<Vec<u32>, crate::Refusal> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) =
            part.split_once('-').map(|(a, b)| (a.trim(), b.trim())).unwrap_or((part, part));
        let a: u32 = a.parse().map_err(|_| format!("\"{part}\" is not a CPU number or range"))?;
        let b: u32 = b.parse().map_err(|_| format!("\"{part}\" is not a CPU number or range"))?;
        if b < a {
            return crate::refuse(format!("range \"{part}\" runs backwards"));
        }
        if b >= 4096 {
            return crate::refuse(format!("CPU {b} is beyond 4095"));
        }
        out.extend(a..=b);
    }
    if out.is_empty() {
        return crate::refuse("empty CPU list");
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats CPUs as a kernel-style list (`0-1,3`).
pub fn format(cpus: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_parse_and_format_round_trip() {
        assert_eq!(super::parse("0-1,3").unwrap(), vec![0, 1, 3]);
        assert_eq!(super::parse(" 3, 0-1 ,1").unwrap(), vec![0, 1, 3]);
        assert_eq!(super::format(&[0, 1, 3, 4, 5, 7]), "0-1,3-5,7");
        assert!(super::parse("2-1").is_err());
        assert!(super::parse("a").is_err());
        assert!(super::parse("").is_err());
    }
}
