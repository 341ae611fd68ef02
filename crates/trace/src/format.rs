//! The layouts the kernel describes in tracefs: a ring-buffer page (`events/header_page`)
//! and each event's record (`events/<system>/<event>/format`). Nothing is hard-coded that
//! these files say, so decoding follows the running kernel.

use thiserror::Error;

/// A layout file that does not say what decoding needs.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FormatError {
    /// A `field:` line that cannot be read.
    #[error("{file}: unreadable field line {line:?}")]
    BadField {
        /// The file (event name or header_page).
        file: String,
        /// The line.
        line: String,
    },
    /// A field the decoder needs is missing or has an unexpected size.
    #[error("{file}: no usable field `{field}`")]
    Missing {
        /// The file.
        file: String,
        /// The field.
        field: String,
    },
}

/// One field of a record: `field:<type> <name>; offset:N; size:N; signed:N;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (`prev_pid`; an array's name without its `[N]`).
    pub name: String,
    /// Its C type as written, e.g. `pid_t`, `char[16]` for `char prev_comm[16]`.
    pub ctype: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes (4 for a `__data_loc`, which points at the data).
    pub size: usize,
    /// Whether the kernel says it is signed.
    pub signed: bool,
    /// A `__data_loc` field: a u32 holding (length << 16 | offset) of data in the record.
    pub data_loc: bool,
}

/// An event's record layout, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`sched_switch`).
    pub name: String,
    /// Its type id, the first field (`common_type`) of every record of this event.
    pub id: u16,
    /// Every field, the common ones first.
    pub fields: Vec<Field>,
    /// The `print fmt:` line, kept for what the fields do not say (state flag names).
    pub print_fmt: String,
}

impl EventFormat {
    /// Parses a `format` file.
    pub fn parse(text: &str) -> Result<EventFormat, FormatError> {
        let mut name = String::new();
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(n) = t.strip_prefix("name:") {
                name = n.trim().to_string();
            } else if let Some(n) = t.strip_prefix("ID:") {
                id = n.trim().parse().ok();
            } else if let Some(p) = t.strip_prefix("print fmt:") {
                print_fmt = p.trim().to_string();
            } else if t.starts_with("field:") {
                fields.push(parse_field(t).ok_or_else(|| FormatError::BadField {
                    file: name.clone(),
                    line: t.to_string(),
                })?);
            }
        }
        let id =
            id.ok_or_else(|| FormatError::Missing { file: name.clone(), field: "ID".into() })?;
        Ok(EventFormat { name, id, fields, print_fmt })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Where an integer field of at most 8 bytes lies, for the decoder's plan.
    pub fn int(&self, name: &str) -> Result<Slot, FormatError> {
        match self.field(name) {
            Some(f) if !f.data_loc && matches!(f.size, 1 | 2 | 4 | 8) => {
                Ok(Slot { offset: f.offset, size: f.size, signed: f.signed })
            }
            _ => Err(self.missing(name)),
        }
    }

    /// Where a fixed char array (a comm) lies.
    pub fn chars(&self, name: &str) -> Result<Slot, FormatError> {
        match self.field(name) {
            Some(f) if !f.data_loc && f.ctype.starts_with("char[") => {
                Ok(Slot { offset: f.offset, size: f.size, signed: false })
            }
            _ => Err(self.missing(name)),
        }
    }

    /// Where a `__data_loc` string's locator lies.
    pub fn data_loc(&self, name: &str) -> Result<Slot, FormatError> {
        match self.field(name) {
            Some(f) if f.data_loc && f.size == 4 => {
                Ok(Slot { offset: f.offset, size: 4, signed: false })
            }
            _ => Err(self.missing(name)),
        }
    }

    fn missing(&self, field: &str) -> FormatError {
        FormatError::Missing { file: self.name.clone(), field: field.into() }
    }

    /// sched_switch's `prev_state` bit the kernel sets for a preempted task (TASK_REPORT_MAX,
    /// printed `R+`): one above the highest state flag its print format names. Every bit
    /// below it is a sleeping or dead state; none of them set means still runnable.
    pub fn preempt_bit(&self) -> Option<u64> {
        let flags = self.print_fmt.split("__print_flags").nth(1)?;
        let mut max = 0u64;
        for part in flags.split('{').skip(1) {
            let value = part.split(',').next()?.trim();
            let v = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok()?,
                None => value.parse().ok()?,
            };
            max = max.max(v);
        }
        (max > 0).then_some(max << 1)
    }
}

/// An integer's place in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Byte offset.
    pub offset: usize,
    /// Bytes.
    pub size: usize,
    /// Sign-extended when read.
    pub signed: bool,
}

impl Slot {
    /// Reads the integer from a record (little-endian, as the machine writes it); 0 if the
    /// record is too short.
    #[inline]
    pub fn get(&self, rec: &[u8]) -> i64 {
        let Some(b) = rec.get(self.offset..self.offset + self.size) else { return 0 };
        match (self.size, self.signed) {
            (1, false) => b[0] as i64,
            (1, true) => b[0] as i8 as i64,
            (2, false) => u16::from_le_bytes([b[0], b[1]]) as i64,
            (2, true) => i16::from_le_bytes([b[0], b[1]]) as i64,
            (4, false) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            (4, true) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        }
    }

    /// A fixed char array as a comm: up to 16 bytes, zero-padded.
    #[inline]
    pub fn comm(&self, rec: &[u8]) -> [u8; 16] {
        let mut out = [0u8; 16];
        let n = self.size.min(16);
        if let Some(b) = rec.get(self.offset..self.offset + n) {
            out[..n].copy_from_slice(b);
        }
        out
    }

    /// A `__data_loc` string: the bytes up to its NUL (empty if it points outside the record).
    pub fn string<'a>(&self, rec: &'a [u8]) -> &'a [u8] {
        let loc = self.get(rec) as u32;
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        let s = rec.get(off..off + len).unwrap_or(&[]);
        s.split(|b| *b == 0).next().unwrap_or(&[])
    }
}

/// One `field:...;offset:N;size:N;signed:N;` line.
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once(':')?;
        match k.trim() {
            "field" => decl = Some(v.trim()),
            "offset" => offset = v.trim().parse().ok(),
            "size" => size = v.trim().parse().ok(),
            "signed" => signed = v.trim() == "1",
            _ => {}
        }
    }
    let decl = decl?;
    let data_loc = decl.starts_with("__data_loc");
    let decl = decl.trim_start_matches("__data_loc").trim();
    // `unsigned char common_flags`, `char prev_comm[16]`, `char[] comm` (a __data_loc).
    let (ty, mut name) = decl.rsplit_once(' ')?;
    let mut ctype = ty.trim().to_string();
    if let Some(i) = name.find('[') {
        ctype = format!("{ctype}{}", &name[i..]);
        name = &name[..i];
    }
    Some(Field { name: name.to_string(), ctype, offset: offset?, size: size?, signed, data_loc })
}

/// A ring-buffer page's layout, from `events/header_page`: a u64 timestamp, the `commit`
/// word (bytes of data written, with the missed-events flags in its high bits), then data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPage {
    /// Offset of the page's base timestamp.
    pub timestamp: usize,
    /// Offset of the commit word.
    pub commit: usize,
    /// Size of the commit word (8 on 64-bit kernels).
    pub commit_size: usize,
    /// Offset of the first event.
    pub data: usize,
    /// Bytes of event data a page holds.
    pub data_size: usize,
}

impl HeaderPage {
    /// Parses `header_page`.
    pub fn parse(text: &str) -> Result<HeaderPage, FormatError> {
        let file = "header_page".to_string();
        let mut fields = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| l.starts_with("field:")) {
            // `field: u64 timestamp;` has a space after the colon, unlike event formats.
            fields.push(parse_field(line).ok_or_else(|| FormatError::BadField {
                file: file.clone(),
                line: line.to_string(),
            })?);
        }
        let get = |n: &str| {
            fields
                .iter()
                .find(|f| f.name == n)
                .ok_or_else(|| FormatError::Missing { file: file.clone(), field: n.into() })
        };
        let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
        if ts.size != 8 || !matches!(commit.size, 4 | 8) {
            return Err(FormatError::Missing { file, field: "timestamp/commit of 8 bytes".into() });
        }
        Ok(HeaderPage {
            timestamp: ts.offset,
            commit: commit.offset,
            commit_size: commit.size,
            data: data.offset,
            data_size: data.size,
        })
    }

    /// The whole page's size.
    pub fn page_size(&self) -> usize {
        self.data + self.data_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = include_str!("../tests/fixtures/formats/sched_switch.format");
    const MIGRATE: &str = include_str!("../tests/fixtures/formats/sched_migrate_task.format");
    const EXEC: &str = include_str!("../tests/fixtures/formats/sched_process_exec.format");
    const ISSUE: &str = include_str!("../tests/fixtures/formats/block_rq_issue.format");
    const HEADER: &str = include_str!("../tests/fixtures/formats/header_page");

    #[test]
    fn this_machines_sched_switch_format_is_read() {
        let f = EventFormat::parse(SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        assert_eq!(f.int("common_type").unwrap(), Slot { offset: 0, size: 2, signed: false });
        assert_eq!(f.chars("prev_comm").unwrap(), Slot { offset: 8, size: 16, signed: false });
        assert_eq!(f.int("prev_pid").unwrap(), Slot { offset: 24, size: 4, signed: true });
        assert_eq!(f.int("prev_state").unwrap(), Slot { offset: 32, size: 8, signed: true });
        assert_eq!(f.int("next_prio").unwrap(), Slot { offset: 60, size: 4, signed: true });
        assert_eq!(f.field("next_comm").unwrap().ctype, "char[16]");
        assert!(f.int("prev_comm").is_err(), "an array is not an integer");
        // 6.18 names S D T t X Z P I (0x01..0x80): preempted is 0x100, printed R+.
        assert_eq!(f.preempt_bit(), Some(0x100));
    }

    #[test]
    fn data_loc_fields_are_recognised() {
        let m = EventFormat::parse(MIGRATE).unwrap();
        assert_eq!(m.data_loc("comm").unwrap(), Slot { offset: 8, size: 4, signed: false });
        assert!(m.chars("comm").is_err());
        let e = EventFormat::parse(EXEC).unwrap();
        assert!(e.field("filename").unwrap().data_loc);
        let rec = {
            let mut r = vec![0u8; 24];
            r[8..12].copy_from_slice(&((8u32 << 16) | 16).to_le_bytes());
            r[16..24].copy_from_slice(b"/bin/sh\0");
            r
        };
        assert_eq!(e.data_loc("filename").unwrap().string(&rec), b"/bin/sh");
        let bad = e.data_loc("filename").unwrap().string(&rec[..20]);
        assert!(bad.is_empty(), "a locator past the record reads as empty");
    }

    #[test]
    fn block_formats_give_dev_and_sectors() {
        let f = EventFormat::parse(ISSUE).unwrap();
        assert_eq!(f.int("dev").unwrap(), Slot { offset: 8, size: 4, signed: false });
        assert_eq!(f.int("sector").unwrap(), Slot { offset: 16, size: 8, signed: false });
        assert_eq!(f.chars("rwbs").unwrap().size, 10);
    }

    #[test]
    fn header_page_gives_a_4_kib_page() {
        let h = HeaderPage::parse(HEADER).unwrap();
        assert_eq!(
            h,
            HeaderPage { timestamp: 0, commit: 8, commit_size: 8, data: 16, data_size: 4080 }
        );
        assert_eq!(h.page_size(), 4096);
    }

    #[test]
    fn an_older_kernels_preempt_bit_follows_its_flags() {
        // 4.x named S D T t X Z P I up to 0x80 as well, 3.x only up to 0x40 ("R+" was 0x80).
        let old = "name: sched_switch\nID: 1\nprint fmt: \"...\", REC->prev_state & (128-1) ? __print_flags(REC->prev_state & (128-1), \"|\", { 1, \"S\" }, { 2, \"D\" }, { 64, \"P\" }) : \"R\"";
        assert_eq!(EventFormat::parse(old).unwrap().preempt_bit(), Some(128));
        let none = "name: x\nID: 2\nprint fmt: \"%d\", REC->a";
        assert_eq!(EventFormat::parse(none).unwrap().preempt_bit(), None);
    }

    #[test]
    fn a_broken_field_line_is_named() {
        let e = EventFormat::parse(
            "name: e\nID: 3\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\tsigned:1;\n",
        )
        .unwrap_err();
        assert!(matches!(e, FormatError::BadField { .. }), "{e}");
        assert!(EventFormat::parse("name: e\n").is_err(), "no ID");
    }
}
