//! The CPU wake-up latency request of the kernel's PM QoS (Documentation/power/pm_qos_interface.rst):
//! while a process keeps /dev/cpu_dma_latency open with a value written to it, the CPUs stay
//! out of idle states whose exit latency exceeds it. Closing the file (or the process's
//! death, kill -9 included) withdraws the request, so nothing needs journaling.

use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The device file.
pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// A latency request in force until dropped.
#[derive(Debug)]
pub struct DmaLatencyHold {
    file: std::fs::File,
    us: u32,
}

impl DmaLatencyHold {
    /// Asks for at most `us` microseconds of wake-up latency, through `device` (normally
    /// [`DEVICE`]); the request holds until this value is dropped.
    pub fn hold(device: &Path, us: u32) -> io::Result<DmaLatencyHold> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(device)?;
        // The kernel takes a binary s32 (or a hex string); cyclictest writes the s32.
        let value = i32::try_from(us).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{us} us is out of range"))
        })?;
        file.write_all(&value.to_ne_bytes())?;
        Ok(DmaLatencyHold { file, us })
    }

    /// The latency asked for, microseconds.
    pub fn us(&self) -> u32 {
        self.us
    }

    /// The latency in force now (the lowest of every holder's request), microseconds.
    pub fn in_force(&mut self) -> io::Result<i32> {
        read_value(&mut self.file)
    }
}

/// The latency in force now, read from `device` (root only on most systems).
pub fn current(device: &Path) -> io::Result<i32> {
    read_value(&mut std::fs::File::open(device)?)
}

fn read_value(f: &mut std::fs::File) -> io::Result<i32> {
    let mut b = [0u8; 4];
    f.read_exact(&mut b)?;
    Ok(i32::from_ne_bytes(b))
}

/// The device under a [`crate::Root`] prefix.
pub fn device(root: &crate::Root) -> PathBuf {
    root.path(DEVICE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_hold_writes_the_binary_value_and_reports_it() {
        // A plain file stands in for the device: the hold writes the s32 a reader sees.
        let dir = std::env::temp_dir().join(format!("schedlab-pmqos-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dev = dir.join("cpu_dma_latency");
        std::fs::write(&dev, []).unwrap();
        let h = DmaLatencyHold::hold(&dev, 7).unwrap();
        assert_eq!(h.us(), 7);
        assert_eq!(std::fs::read(&dev).unwrap(), 7i32.to_ne_bytes());
        assert_eq!(current(&dev).unwrap(), 7);
        assert!(DmaLatencyHold::hold(&dev, u32::MAX).is_err(), "beyond an s32");
        drop(h);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_real_device_holds_the_value_while_open() {
        let dev = Path::new(DEVICE);
        let Ok(before) = current(dev) else {
            // Not eprintln!: libtest would hide it (see schedlab_testkit::skip).
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: cannot read {DEVICE} (needs root and the device)"
            );
            return;
        };
        let mut h = DmaLatencyHold::hold(dev, 0).unwrap();
        assert_eq!(h.in_force().unwrap(), 0, "the lowest request is in force");
        drop(h);
        assert_eq!(current(dev).unwrap(), before, "closing withdraws the request");
    }
}
