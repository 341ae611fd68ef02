//! `udp_flood`: a disturbance load (seed 003's "flood-pinged system"). One worker sends
//! datagrams to itself over the loopback interface as fast as it can: the calling thread
//! sends, a second thread receives. Every datagram goes through the whole UDP/IP stack and
//! the NET_RX softirq, so the machine carries network-stack and softirq load without any
//! traffic leaving it. Both sockets are bound to 127.0.0.1 and connected to each other, so
//! nothing else on the machine can add to (or receive) the counts.

use crate::Probe;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, UdpSocket};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use schedlab_plan::MAX_PACKET_BYTES;

/// Datagrams sent between probe ticks (well under a millisecond of sending).
const CHUNK: u64 = 256;

/// How long the receiver waits for a datagram before it looks whether the sender is done:
/// lost datagrams never make it hang longer than this after the last send.
const RECV_TIMEOUT: Duration = Duration::from_millis(50);

pub use schedlab_model::detail::FloodOutcome;

/// A worker's two sockets and buffers, made before the release.
#[derive(Debug)]
pub struct UdpFlood {
    tx: UdpSocket,
    rx: UdpSocket,
    packet: Vec<u8>,
    recv_buf: Vec<u8>,
    total: FloodOutcome,
}

impl UdpFlood {
    /// Binds a receiver and a sender to ephemeral ports on 127.0.0.1 and connects them to
    /// each other; `packet_bytes` (1..=65507) is the payload of every datagram.
    pub fn new(packet_bytes: u64) -> io::Result<UdpFlood> {
        if !(1..=MAX_PACKET_BYTES).contains(&packet_bytes) {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("packet_bytes must be 1..={MAX_PACKET_BYTES}"),
            ));
        }
        let rx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        tx.connect(rx.local_addr()?)?;
        rx.connect(tx.local_addr()?)?;
        rx.set_read_timeout(Some(RECV_TIMEOUT))?;
        let packet = (0..packet_bytes).map(|i| i as u8).collect();
        // One byte more than a datagram: a longer one (not ours) would show as a mismatch.
        let recv_buf = vec![0u8; packet_bytes as usize + 1];
        Ok(UdpFlood {
            tx,
            rx,
            packet,
            recv_buf,
            total: FloodOutcome { packet_bytes, ..Default::default() },
        })
    }

    /// Everything sent and received so far, over all rounds.
    pub fn total(&self) -> FloodOutcome {
        self.total
    }
}

/// Sends `packets` datagrams from this thread while a second thread receives them; stops
/// early when the probe says so. Returns when the receiver has everything that was sent, or
/// has waited [`RECV_TIMEOUT`] for the rest after the last send (those count as dropped).
pub fn udp_flood(
    f: &mut UdpFlood,
    packets: u64,
    probe: &mut dyn Probe,
) -> io::Result<FloodOutcome> {
    let sent = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let UdpFlood { tx, rx, packet, recv_buf, .. } = f;
    let (send_result, recv_result) = std::thread::scope(|s| {
        let receiver = s.spawn(|| receive(rx, recv_buf, &sent, &done));
        let r = send(tx, packet, packets, &sent, probe);
        done.store(true, Ordering::Release);
        (
            r,
            receiver
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the receiver thread panicked"))),
        )
    });
    send_result?;
    let (received, bytes) = recv_result?;
    let sent = sent.load(Ordering::Acquire);
    let o = FloodOutcome {
        sent,
        received,
        dropped: sent.saturating_sub(received),
        bytes,
        packet_bytes: packet.len() as u64,
    };
    f.total.add(&o);
    Ok(o)
}

fn send(
    tx: &UdpSocket,
    packet: &[u8],
    packets: u64,
    sent: &AtomicU64,
    probe: &mut dyn Probe,
) -> io::Result<()> {
    let mut n = 0u64;
    while n < packets {
        let chunk_end = (n + CHUNK).min(packets);
        while n < chunk_end {
            match tx.send(packet) {
                Ok(_) => n += 1,
                // No buffer for the moment, or a signal: try again.
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => std::thread::yield_now(),
                Err(e) => {
                    sent.store(n, Ordering::Release);
                    return Err(io::Error::new(e.kind(), format!("sending datagram {n}: {e}")));
                }
            }
        }
        sent.store(n, Ordering::Release);
        if probe.tick() == ControlFlow::Break(()) {
            break;
        }
    }
    Ok(())
}

/// Counts datagrams until the sender is done and either all it sent arrived or nothing came
/// for one receive timeout. Returns (datagrams, payload bytes).
fn receive(
    rx: &UdpSocket,
    buf: &mut [u8],
    sent: &AtomicU64,
    done: &AtomicBool,
) -> io::Result<(u64, u64)> {
    let (mut got, mut bytes) = (0u64, 0u64);
    loop {
        match rx.recv(buf) {
            Ok(n) => {
                got += 1;
                bytes += n as u64;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if done.load(Ordering::Acquire) {
                    return Ok((got, bytes));
                }
                continue;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("receiving: {e}"))),
        }
        if done.load(Ordering::Acquire) && got >= sent.load(Ordering::Acquire) {
            return Ok((got, bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProbe;

    #[test]
    fn a_short_flood_sends_exactly_its_packets_and_receives_some() {
        let mut f = UdpFlood::new(64).unwrap();
        let o = udp_flood(&mut f, 20_000, &mut NoProbe).unwrap();
        assert_eq!(o.sent, 20_000);
        assert!(o.received > 0 && o.received <= o.sent, "{o:?}");
        assert_eq!(o.dropped, o.sent - o.received);
        assert_eq!(o.bytes, o.received * 64, "every datagram arrives whole: {o:?}");
        // A second round adds to the total.
        let o2 = udp_flood(&mut f, 1_000, &mut NoProbe).unwrap();
        let t = f.total();
        assert_eq!(
            (t.sent, t.received, t.bytes),
            (21_000, o.received + o2.received, o.bytes + o2.bytes)
        );
        assert_eq!(t.packet_bytes, 64);
    }

    #[test]
    fn large_datagrams_arrive_whole() {
        let mut f = UdpFlood::new(MAX_PACKET_BYTES).unwrap();
        let o = udp_flood(&mut f, 200, &mut NoProbe).unwrap();
        assert_eq!(o.sent, 200);
        assert!(o.received > 0, "{o:?}");
        assert_eq!(o.bytes, o.received * MAX_PACKET_BYTES);
        assert!(UdpFlood::new(0).is_err() && UdpFlood::new(MAX_PACKET_BYTES + 1).is_err());
    }

    /// A probe that stops the work after `left` ticks (a background worker's SIGTERM).
    struct StopAfter(u32);

    impl Probe for StopAfter {
        fn tick(&mut self) -> ControlFlow<()> {
            if self.0 == 0 {
                return ControlFlow::Break(());
            }
            self.0 -= 1;
            ControlFlow::Continue(())
        }
    }

    #[test]
    fn a_stop_ends_the_flood_after_the_current_chunk_and_the_receiver_does_not_hang() {
        let mut f = UdpFlood::new(16).unwrap();
        let t = std::time::Instant::now();
        let o = udp_flood(&mut f, u64::MAX, &mut StopAfter(2)).unwrap();
        assert_eq!(o.sent, 3 * CHUNK);
        assert!(o.received > 0 && o.received <= o.sent, "{o:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "the receiver waits one timeout at most");
    }
}
