//! Integer-nanosecond time and the clock abstraction.

/// A point in time, in nanoseconds since an arbitrary origin.
///
/// Integers (not floats) keep every schedule exact and every run reproducible.
pub type Time = u64;

/// A length of time in nanoseconds.
pub type Duration = u64;

/// One microsecond in [`Duration`] units.
pub const MICROSECOND: Duration = 1_000;
/// One millisecond in [`Duration`] units.
pub const MILLISECOND: Duration = 1_000_000;
/// One second in [`Duration`] units.
pub const SECOND: Duration = 1_000_000_000;

/// A source of the current time; drivers read it and pass the value to policies.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Time;
}

/// A clock that only moves when told to: the simulator's time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VirtualClock {
    now: Time,
}

impl VirtualClock {
    /// A clock reading `start`.
    pub fn new(start: Time) -> Self {
        Self { now: start }
    }

    /// Moves the clock to `t`.
    ///
    /// # Panics
    /// If `t` is earlier than the current reading: virtual time never runs backwards.
    pub fn set(&mut self, t: Time) {
        assert!(t >= self.now, "virtual time went backwards: {} -> {t}", self.now);
        self.now = t;
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Time {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_moves_only_when_told() {
        let mut c = VirtualClock::new(5);
        assert_eq!(c.now(), 5);
        c.advance(10);
        assert_eq!(c.now(), 15);
        c.set(20);
        assert_eq!(c.now(), 20);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn virtual_clock_refuses_to_go_back() {
        let mut c = VirtualClock::new(5);
        c.set(4);
    }
}
