//! The disturbance kinds, `udp_flood` and `io_interrupts`: their own keys, defaults and
//! ranges. (Background load for seed 003's "flood-pinged system" and interrupt-heavy I/O.)

use super::workload::KeyKinds;
use super::Ctx;
use crate::error::SpecError;
use crate::raw::RawWorkload;
use schedlab_plan::{Workload, DIRECT_ALIGN, MAX_PACKET_BYTES};
use serde_spanned::Spanned;

/// The kind names.
pub(super) const KINDS: [&str; 2] = ["udp_flood", "io_interrupts"];

const DEFAULT_PACKETS: u64 = 1_000_000;
const DEFAULT_PACKET_BYTES: u64 = 64;
const DEFAULT_READS: u64 = 100_000;
const DEFAULT_READ_BYTES: u64 = 4096;
const DEFAULT_FILE_BYTES: u64 = 64 << 20;
const MAX_READ_BYTES: i64 = 64 << 20;
const MAX_FILE_BYTES: i64 = 1 << 34;

/// The disturbance kinds' own keys are errors (at the key's value) in a workload of any other
/// kind. (`file_bytes` is shared with par_write/par_read and checked with them.)
pub(super) fn check_keys(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<(), SpecError> {
    let sp = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span());
    let keys: [KeyKinds; 4] = [
        ("packets", sp(&w.packets), &["udp_flood"]),
        ("packet_bytes", sp(&w.packet_bytes), &["udp_flood"]),
        ("reads", sp(&w.reads), &["io_interrupts"]),
        ("read_bytes", sp(&w.read_bytes), &["io_interrupts"]),
    ];
    super::workload::foreign_keys(cx, kind, &keys)
}

/// The built-in workloads of these names: the kinds with their defaults.
pub(super) fn builtin(name: &str) -> Option<Workload> {
    match name {
        "udp_flood" => Some(Workload::UdpFlood {
            packets: DEFAULT_PACKETS,
            packet_bytes: DEFAULT_PACKET_BYTES,
        }),
        "io_interrupts" => Some(Workload::IoInterrupts {
            reads: DEFAULT_READS,
            read_bytes: DEFAULT_READ_BYTES,
            file_bytes: DEFAULT_FILE_BYTES,
        }),
        _ => None,
    }
}

/// A `[workloads.NAME]` of one of [`KINDS`], whose keys were already checked to belong to it.
pub(super) fn workload(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<Workload, SpecError> {
    let int = |v: &Option<Spanned<i64>>,
               lo: i64,
               hi: i64,
               def: u64,
               what: &str|
     -> Result<u64, SpecError> {
        match v {
            Some(s) => cx.int_in(s, lo, hi, what).map(|x| x as u64),
            None => Ok(def),
        }
    };
    if kind == "udp_flood" {
        let packets = int(&w.packets, 1, i64::MAX, DEFAULT_PACKETS, "packets")?;
        let packet_bytes = int(
            &w.packet_bytes,
            1,
            MAX_PACKET_BYTES as i64,
            DEFAULT_PACKET_BYTES,
            "packet_bytes (the UDP payload)",
        )?;
        return Ok(Workload::UdpFlood { packets, packet_bytes });
    }
    let reads = int(&w.reads, 1, i64::MAX, DEFAULT_READS, "reads")?;
    let read_bytes =
        int(&w.read_bytes, DIRECT_ALIGN as i64, MAX_READ_BYTES, DEFAULT_READ_BYTES, "read_bytes")?;
    let file_bytes =
        int(&w.file_bytes, DIRECT_ALIGN as i64, MAX_FILE_BYTES, DEFAULT_FILE_BYTES, "file_bytes")?;
    let at = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span()).unwrap_or(w.kind.span());
    for (v, x, what) in
        [(&w.read_bytes, read_bytes, "read_bytes"), (&w.file_bytes, file_bytes, "file_bytes")]
    {
        if x % DIRECT_ALIGN != 0 {
            return cx.err(
                at(v),
                format!("{what} must be a multiple of {DIRECT_ALIGN} (O_DIRECT reads), got {x}"),
            );
        }
    }
    if read_bytes > file_bytes {
        return cx.err(
            at(&w.read_bytes),
            format!("read_bytes ({read_bytes}) is larger than file_bytes ({file_bytes})"),
        );
    }
    Ok(Workload::IoInterrupts { reads, read_bytes, file_bytes })
}

#[cfg(test)]
mod tests {
    use super::super::workload::one::{err, workload};
    use crate::{parse, Workload};

    #[test]
    fn udp_flood_has_defaults_and_its_own_keys() {
        assert_eq!(
            workload("kind = \"udp_flood\"\n"),
            Workload::UdpFlood { packets: 1_000_000, packet_bytes: 64 }
        );
        let w = workload("kind = \"udp_flood\"\npackets = 5000\npacket_bytes = 65507\n");
        assert_eq!(w, Workload::UdpFlood { packets: 5000, packet_bytes: 65_507 });
        assert_eq!(
            (w.kind(), w.work_units(), w.device_bytes(), w.is_io()),
            ("udp_flood", 5000, 0, false)
        );
    }

    #[test]
    fn udp_flood_ranges_are_errors_at_the_value() {
        let e = err("kind = \"udp_flood\"\npacket_bytes = 65508\n");
        assert_eq!((e.line, e.col), (6, 16), "{e}");
        assert!(e.message.contains("between 1 and 65507") && e.message.contains("65508"), "{e}");
        let e = err("kind = \"udp_flood\"\npacket_bytes = 0\n");
        assert_eq!(e.line, 6, "{e}");
        let e = err("kind = \"udp_flood\"\npackets = 0\n");
        assert_eq!((e.line, e.col), (6, 11), "{e}");
        assert!(e.message.contains("packets must be between 1"), "{e}");
    }

    #[test]
    fn io_interrupts_has_defaults_and_checks_alignment() {
        let w = workload("kind = \"io_interrupts\"\n");
        assert_eq!(
            w,
            Workload::IoInterrupts { reads: 100_000, read_bytes: 4096, file_bytes: 64 << 20 }
        );
        assert_eq!(
            (w.kind(), w.work_units(), w.device_bytes(), w.is_io()),
            ("io_interrupts", 100_000, 64 << 20, false)
        );
        let e = err("kind = \"io_interrupts\"\nread_bytes = 5000\n");
        assert_eq!((e.line, e.col), (6, 14), "{e}");
        assert!(e.message.contains("multiple of 4096"), "{e}");
        let e = err("kind = \"io_interrupts\"\nfile_bytes = 1048577\n");
        assert_eq!((e.line, e.col), (6, 14), "{e}");
        assert!(e.message.contains("file_bytes must be a multiple of 4096"), "{e}");
        let e = err("kind = \"io_interrupts\"\nread_bytes = 8192\nfile_bytes = 4096\n");
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("larger than file_bytes"), "{e}");
        let e = err("kind = \"io_interrupts\"\nread_bytes = 2048\n");
        assert!(e.message.contains("read_bytes must be between 4096"), "{e}");
        let e = err("kind = \"io_interrupts\"\nreads = -1\n");
        assert_eq!((e.line, e.col), (6, 9), "{e}");
    }

    #[test]
    fn keys_of_the_other_kinds_are_rejected_both_ways() {
        for (text, key) in [
            ("kind = \"udp_flood\"\nreads = 10\n", "reads"),
            ("kind = \"udp_flood\"\nfile_bytes = 4096\n", "file_bytes"),
            ("kind = \"io_interrupts\"\npackets = 10\n", "packets"),
            ("kind = \"pi\"\npacket_bytes = 10\n", "packet_bytes"),
            ("kind = \"par_write\"\nread_bytes = 4096\n", "read_bytes"),
            ("kind = \"periodic\"\nreads = 10\ntasks = [{ c_ms = 1, t_ms = 10 }]\n", "reads"),
        ] {
            let e = err(text);
            // At the value: `key = ` is its length + 3 columns.
            assert_eq!((e.line, e.col), (6, key.len() + 4), "{e}");
            assert!(e.message.contains(&format!("`{key}` does not apply")), "{e}");
        }
        let e = err("kind = \"udp_flod\"\n");
        assert!(e.message.contains("udp_flood") && e.message.contains("io_interrupts"), "{e}");
    }

    #[test]
    fn scale_multiplies_packets_and_reads_but_not_the_shape() {
        let text = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.net]\nworkload = \"udp_flood\"\nbackground = true\n\
                    [groups.disk]\nworkload = \"io_interrupts\"\nbackground = true\n";
        let mut s = parse("t.toml", text).unwrap_or_else(|e| panic!("{e}"));
        s.plan.scale(0.001);
        let c = &s.plan.cells[0];
        assert_eq!(c.key, "pi/other/n1+disk+net");
        let by = |n: &str| c.groups.iter().find(|g| g.name == n).unwrap();
        assert!(by("net").background && by("disk").background);
        assert_eq!(by("net").workload, Workload::UdpFlood { packets: 1000, packet_bytes: 64 });
        assert_eq!(
            by("disk").workload,
            Workload::IoInterrupts { reads: 100, read_bytes: 4096, file_bytes: 64 << 20 }
        );
        assert!(s.plan.device.is_none(), "neither kind needs the experiment device");
        s.plan.scale(1e-9);
        assert_eq!(s.plan.cells[0].groups[1].workload.work_units(), 1, "at least one unit");
    }
}
