//! What a driver needs to skip cycles that repeat: a state written relative to an instant,
//! so that two instants one cycle apart compare equal exactly when everything that decides
//! the future is the same but for the time, and times moved later by a whole number of
//! cycles.
//!
//! The simulator compares the whole state at two quiescent instants a hyperperiod apart;
//! when they are equal, the cycles between repeat the one it just simulated, so it adds that
//! cycle's counts and records as many times as fit before the horizon, moves every time
//! forward, and simulates the rest. Policies take part through
//! [`SchedPolicy::cycle_state`](crate::SchedPolicy::cycle_state) and
//! [`SchedPolicy::shift`](crate::SchedPolicy::shift).

use crate::{Duration, Time};

/// Appends state to a vector, with times written relative to an origin.
#[derive(Debug)]
pub struct StateWriter<'a> {
    out: &'a mut Vec<u64>,
    origin: Time,
}

impl<'a> StateWriter<'a> {
    /// Writes into `out`, times relative to `origin`.
    pub fn new(out: &'a mut Vec<u64>, origin: Time) -> Self {
        Self { out, origin }
    }

    /// A plain value: a count, a duration, an id.
    pub fn word(&mut self, v: u64) {
        self.out.push(v);
    }

    /// An instant. `Time::MAX` ("never") is written apart from every real instant.
    pub fn time(&mut self, t: Time) {
        if t == Time::MAX {
            self.out.extend([1, 0]);
        } else {
            self.out.extend([0, t.wrapping_sub(self.origin)]);
        }
    }

    /// An instant that may be absent.
    pub fn opt_time(&mut self, t: Option<Time>) {
        match t {
            Some(t) => {
                self.out.push(1);
                self.time(t);
            }
            None => self.out.push(0),
        }
    }

    /// A value that may be absent.
    pub fn opt_word(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.out.extend([1, v]),
            None => self.out.push(0),
        }
    }
}

/// Moves an instant `by` later; `Time::MAX` ("never") stays.
pub fn shift(t: &mut Time, by: Duration) {
    if *t != Time::MAX {
        *t += by;
    }
}

/// Moves an instant that may be absent `by` later.
pub fn shift_opt(t: &mut Option<Time>, by: Duration) {
    if let Some(t) = t {
        shift(t, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_a_cycle_apart_write_the_same_and_never_stays_apart() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut w = StateWriter::new(&mut a, 100);
        w.time(130);
        w.opt_time(Some(90));
        w.time(Time::MAX);
        let mut w = StateWriter::new(&mut b, 200);
        w.time(230);
        w.opt_time(Some(190));
        w.time(Time::MAX);
        assert_eq!(a, b);
        let mut c = Vec::new();
        StateWriter::new(&mut c, 0).time(Time::MAX);
        let mut d = Vec::new();
        StateWriter::new(&mut d, 1).time(0);
        assert_ne!(c, d, "never is not origin - 1");
        let mut t = Time::MAX;
        shift(&mut t, 5);
        assert_eq!(t, Time::MAX);
        let mut t = Some(3);
        shift_opt(&mut t, 5);
        assert_eq!(t, Some(8));
    }
}
