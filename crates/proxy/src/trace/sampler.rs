//! Which traces are recorded: a parent's decision when the client sent
//! one (its sampled flag), else a ratio of new traces chosen by trace id,
//! so every gateway that sees a trace decides the same way.

/// Parent-based, ratio for new traces.
#[derive(Clone, Copy, Debug)]
pub struct Sampler {
    /// A new trace is sampled when the low 63 bits of its id's last eight
    /// bytes fall below this.
    bound: u64,
    always: bool,
}

impl Sampler {
    /// `ratio` in 0..=1 (clamped; NaN samples nothing).
    pub fn new(ratio: f64) -> Self {
        let ratio = if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        };
        Sampler {
            // f64 to u64 saturates; 2^63 is exact in f64.
            bound: (ratio * 9_223_372_036_854_775_808.0) as u64,
            always: ratio >= 1.0,
        }
    }

    /// The decision for a trace with `parent_sampled` (`None`: a new trace).
    pub fn sample(&self, trace_id: &[u8; 16], parent_sampled: Option<bool>) -> bool {
        if let Some(sampled) = parent_sampled {
            return sampled;
        }
        if self.always {
            return true;
        }
        let mut low = [0u8; 8];
        low.copy_from_slice(trace_id.get(8..).unwrap_or(&[0; 8]));
        (u64::from_be_bytes(low) >> 1) < self.bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> [u8; 16] {
        let mut id = [0u8; 16];
        id[8..].copy_from_slice(&n.to_be_bytes());
        id
    }

    #[test]
    fn the_parent_decides_when_there_is_one() {
        let never = Sampler::new(0.0);
        let always = Sampler::new(1.0);
        assert!(never.sample(&id(1), Some(true)));
        assert!(!always.sample(&id(1), Some(false)));
    }

    #[test]
    fn new_traces_follow_the_ratio() {
        assert!(!Sampler::new(0.0).sample(&id(0), None));
        assert!(Sampler::new(1.0).sample(&id(u64::MAX), None));
        assert!(!Sampler::new(f64::NAN).sample(&id(0), None));
        let half = Sampler::new(0.5);
        assert!(half.sample(&id(0), None));
        assert!(half.sample(&id((1 << 63) - 1), None));
        assert!(!half.sample(&id(1 << 63), None));
        // About a quarter of evenly spread ids.
        let quarter = Sampler::new(0.25);
        let step = u64::MAX / 1000;
        let hits = (0..1000)
            .filter(|i| quarter.sample(&id(i * step), None))
            .count();
        assert!((240..=260).contains(&hits), "{hits}");
    }
}
