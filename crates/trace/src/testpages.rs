//! Hand-built ring-buffer pages and records for the decoder's tests, laid out as this
//! machine's format files (the fixtures) say.

pub(crate) const HEADER: &str = include_str!("../tests/fixtures/formats/header_page");
pub(crate) const SWITCH_ID: u16 = 372;
pub(crate) const WAKING_ID: u16 = 375;
const EXEC_ID: u16 = 365;

/// The fixture format files of every event schedlab enables.
pub(crate) fn fixture_formats() -> Vec<String> {
    [
        include_str!("../tests/fixtures/formats/sched_switch.format"),
        include_str!("../tests/fixtures/formats/sched_waking.format"),
        include_str!("../tests/fixtures/formats/sched_wakeup.format"),
        include_str!("../tests/fixtures/formats/sched_wakeup_new.format"),
        include_str!("../tests/fixtures/formats/sched_migrate_task.format"),
        include_str!("../tests/fixtures/formats/sched_process_fork.format"),
        include_str!("../tests/fixtures/formats/sched_process_exec.format"),
        include_str!("../tests/fixtures/formats/sched_process_exit.format"),
        include_str!("../tests/fixtures/formats/block_rq_issue.format"),
        include_str!("../tests/fixtures/formats/block_rq_complete.format"),
    ]
    .map(String::from)
    .to_vec()
}

fn put(rec: &mut [u8], off: usize, bytes: &[u8]) {
    rec[off..off + bytes.len()].copy_from_slice(bytes);
}

fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

/// A sched_switch record (offsets of sched_switch.format).
pub(crate) fn switch_rec(
    prev: i32,
    state: i64,
    next: i32,
    prev_comm: &str,
    next_comm: &str,
) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    put(&mut r, 0, &SWITCH_ID.to_le_bytes());
    put(&mut r, 4, &prev.to_le_bytes());
    put(&mut r, 8, &comm(prev_comm));
    put(&mut r, 24, &prev.to_le_bytes());
    put(&mut r, 28, &120i32.to_le_bytes());
    put(&mut r, 32, &state.to_le_bytes());
    put(&mut r, 40, &comm(next_comm));
    put(&mut r, 56, &next.to_le_bytes());
    put(&mut r, 60, &120i32.to_le_bytes());
    r
}

/// A sched_waking/wakeup/wakeup_new record (they share a layout).
pub(crate) fn wake_rec(id: u16, pid: i32, target: i32) -> Vec<u8> {
    let mut r = vec![0u8; 36];
    put(&mut r, 0, &id.to_le_bytes());
    put(&mut r, 8, &comm("t"));
    put(&mut r, 24, &pid.to_le_bytes());
    put(&mut r, 28, &120i32.to_le_bytes());
    put(&mut r, 32, &target.to_le_bytes());
    r
}

/// A sched_process_exec record: the filename after the fixed fields, found by its __data_loc.
pub(crate) fn exec_rec(pid: i32, filename: &str) -> Vec<u8> {
    let mut r = vec![0u8; 20];
    put(&mut r, 0, &EXEC_ID.to_le_bytes());
    let loc = (((filename.len() + 1) as u32) << 16) | 20;
    put(&mut r, 8, &loc.to_le_bytes());
    put(&mut r, 12, &pid.to_le_bytes());
    put(&mut r, 16, &pid.to_le_bytes());
    r.extend_from_slice(filename.as_bytes());
    r.push(0);
    r
}

/// A page being written the way the kernel writes one.
pub(crate) struct Page {
    ts: u64,
    data: Vec<u8>,
    flags: u64,
    missed: Option<u64>,
}

impl Page {
    pub(crate) fn new(ts: u64) -> Page {
        Page { ts, data: Vec::new(), flags: 0, missed: None }
    }

    fn word(&mut self, type_len: u32, delta: u32) {
        assert!(delta < 1 << 27);
        self.data.extend_from_slice(&(type_len | (delta << 5)).to_le_bytes());
    }

    fn padded(rec: &[u8]) -> Vec<u8> {
        let mut r = rec.to_vec();
        r.resize(rec.len().div_ceil(4) * 4, 0);
        r
    }

    /// A record in its short form (length in type_len) when it fits, else the long form.
    pub(crate) fn record(&mut self, delta: u32, rec: &[u8]) {
        let r = Self::padded(rec);
        if r.len() > 28 * 4 {
            return self.record_long(delta, rec);
        }
        self.word((r.len() / 4) as u32, delta);
        self.data.extend_from_slice(&r);
    }

    /// A record in the long form: type_len 0, its length (+4) in array[0].
    pub(crate) fn record_long(&mut self, delta: u32, rec: &[u8]) {
        let r = Self::padded(rec);
        self.word(0, delta);
        self.data.extend_from_slice(&(r.len() as u32 + 4).to_le_bytes());
        self.data.extend_from_slice(&r);
    }

    /// A time extend of `delta` ns.
    pub(crate) fn extend(&mut self, delta: u64) {
        self.word(30, (delta & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
    }

    /// An absolute timestamp.
    pub(crate) fn absolute(&mut self, ts: u64) {
        self.word(31, (ts & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&((ts >> 27) as u32).to_le_bytes());
    }

    /// A discarded record (padding with a delta): array[0] counts the bytes after the
    /// event's first word, itself included, as the kernel's discard leaves it.
    pub(crate) fn discarded(&mut self, len: u32, delta: u32) {
        assert!(len >= 4 && len.is_multiple_of(4));
        self.word(29, delta);
        self.data.extend_from_slice(&len.to_le_bytes());
        self.data.extend(std::iter::repeat_n(0xaa, len as usize - 4));
    }

    /// Padding to the end of the page.
    pub(crate) fn null_padding(&mut self) {
        self.word(29, 0);
    }

    /// A bare event word of type_len 0 and an array[0], for malformed pages.
    pub(crate) fn raw_word(&mut self, delta: u32, array0: Option<u32>) {
        self.word(0, delta);
        if let Some(a) = array0 {
            self.data.extend_from_slice(&a.to_le_bytes());
        }
    }

    /// Marks events lost before this page, with their count stored after the data or not.
    pub(crate) fn missed(&mut self, count: Option<u64>) {
        self.flags |= 1 << 31;
        if count.is_some() {
            self.flags |= 1 << 30;
        }
        self.missed = count;
    }

    /// The page's 4096 bytes.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.bytes_with_trailing(&[])
    }

    /// The page with `junk` after the events, inside the committed length (after null
    /// padding, where nothing may be read).
    pub(crate) fn bytes_with_trailing(&self, junk: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        let len = self.data.len() + junk.len();
        p[0..8].copy_from_slice(&self.ts.to_le_bytes());
        p[8..16].copy_from_slice(&(len as u64 | self.flags).to_le_bytes());
        p[16..16 + self.data.len()].copy_from_slice(&self.data);
        p[16 + self.data.len()..16 + len].copy_from_slice(junk);
        if let Some(n) = self.missed {
            p[16 + len..24 + len].copy_from_slice(&n.to_le_bytes());
        }
        p
    }
}
