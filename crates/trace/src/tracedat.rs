//! A capture written as trace-cmd's `trace.dat` (version 6, trace-cmd.dat.v6(5)), so
//! `trace-cmd report` and KernelShark open it: the same layout files, the same pages. The
//! bench times `trace-cmd report` against our decoder on exactly these bytes.

use crate::decode::{comm_str, Decoded, EventKind};
use crate::format::EventFormat;
use crate::raw::Raw;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Writes `raw` as a trace.dat. `names` (e.g. from the decoded switches) become the file's
/// pid-to-comm map, which trace-cmd prints for each record's task.
pub fn write(raw: &Raw, names: &BTreeMap<i32, String>, mut w: impl Write) -> io::Result<()> {
    let page = raw.page_size;
    let mut head = Vec::new();
    head.extend_from_slice(&[0x17, 0x08, 0x44]);
    head.extend_from_slice(b"tracing6\0");
    head.push(0); // little endian
    head.push(8); // long size
    head.extend_from_slice(&(page as u32).to_le_bytes());
    section(&mut head, b"header_page\0", raw.header_page.as_bytes());
    section(&mut head, b"header_event\0", raw.header_event.as_bytes());
    head.extend_from_slice(&0u32.to_le_bytes()); // no ftrace-internal formats
                                                 // Event formats by system: the system is the format's directory, which the file does
                                                 // not name; schedlab's events are sched_* and block_*.
    let mut systems: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in &raw.formats {
        let name = EventFormat::parse(f).map(|e| e.name).unwrap_or_default();
        let system = if name.starts_with("block_") { "block" } else { "sched" };
        systems.entry(system).or_default().push(f);
    }
    head.extend_from_slice(&(systems.len() as u32).to_le_bytes());
    for (system, formats) in &systems {
        head.extend_from_slice(system.as_bytes());
        head.push(0);
        head.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for f in formats {
            head.extend_from_slice(&(f.len() as u64).to_le_bytes());
            head.extend_from_slice(f.as_bytes());
        }
    }
    head.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
    head.extend_from_slice(&0u32.to_le_bytes()); // printk formats
    let cmdlines: String = names.iter().map(|(pid, comm)| format!("{pid} {comm}\n")).collect();
    head.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
    head.extend_from_slice(cmdlines.as_bytes());
    // CPUs 0..=highest, each with its pages (none for a CPU the capture did not have).
    let ncpus = raw.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0);
    head.extend_from_slice(&ncpus.to_le_bytes());
    head.extend_from_slice(b"flyrecord\0");
    let table = head.len() + 16 * ncpus as usize;
    let mut offset = table.div_ceil(page) * page;
    let mut data: Vec<&[u8]> = Vec::new();
    for cpu in 0..ncpus {
        let pages = raw.cpus.iter().find(|c| c.cpu == cpu).map_or(&[][..], |c| &c.pages[..]);
        head.extend_from_slice(&(offset as u64).to_le_bytes());
        head.extend_from_slice(&(pages.len() as u64).to_le_bytes());
        offset += pages.len().div_ceil(page) * page;
        data.push(pages);
    }
    head.resize(table.div_ceil(page) * page, 0);
    w.write_all(&head)?;
    for pages in data {
        w.write_all(pages)?;
        let pad = pages.len().div_ceil(page) * page - pages.len();
        w.write_all(&vec![0; pad])?;
    }
    w.flush()
}

/// A string tag, a u64 size, the bytes.
fn section(out: &mut Vec<u8>, tag: &[u8], bytes: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Each task's last comm in the switches of a decoded capture.
pub fn names(d: &Decoded) -> BTreeMap<i32, String> {
    let mut m = BTreeMap::new();
    for e in &d.events {
        if let EventKind::Switch(s) = &e.kind {
            m.insert(s.prev_pid, comm_str(&s.prev_comm).into_owned());
            m.insert(s.next_pid, comm_str(&s.next_comm).into_owned());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::CpuRaw;
    use crate::testpages::{fixture_formats, HEADER};

    #[test]
    fn the_header_is_laid_out_as_version_6_and_cpu_data_is_page_aligned() {
        let raw = Raw {
            header_page: HEADER.into(),
            header_event: "# compressed entry header\n".into(),
            formats: fixture_formats(),
            page_size: 4096,
            cpus: vec![CpuRaw { cpu: 1, pages: vec![7; 8192], stats: Default::default() }],
            ..Default::default()
        };
        let mut out = Vec::new();
        write(&raw, &BTreeMap::from([(42, "sh".to_string())]), &mut out).unwrap();
        assert_eq!(&out[..12], b"\x17\x08\x44tracing6\0");
        assert_eq!((out[12], out[13]), (0, 8), "little endian, 8-byte longs");
        assert_eq!(u32::from_le_bytes(out[14..18].try_into().unwrap()), 4096);
        assert_eq!(&out[18..30], b"header_page\0");
        let fly = out.windows(10).position(|w| w == b"flyrecord\0").unwrap();
        assert_eq!(u32::from_le_bytes(out[fly - 4..fly].try_into().unwrap()), 2, "CPUs 0 and 1");
        let at = |i: usize| {
            u64::from_le_bytes(out[fly + 10 + 8 * i..fly + 18 + 8 * i].try_into().unwrap()) as usize
        };
        let (cpu1_offset, cpu1_size) = (at(2), at(3));
        assert_eq!(
            (at(1), cpu1_size, cpu1_offset % 4096),
            (0, 8192, 0),
            "CPU 0 empty, CPU 1 two pages, page aligned"
        );
        assert_eq!(&out[cpu1_offset..cpu1_offset + 8192], &[7; 8192][..]);
        assert_eq!(out.len(), cpu1_offset + 8192);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("block\0\x02\0\0\0") && text.contains("sched\0\x08\0\0\0"),
            "two systems with their events"
        );
        assert!(text.contains("42 sh\n"));
    }
}
