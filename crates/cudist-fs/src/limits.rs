//! How much an input may unpack to, and how much of it may be held in memory.
//!
//! Archives state their members' sizes before a byte is inflated (the zip central directory, tar
//! headers), so the unpacked total is judged before any work is done, and a member that inflates
//! beyond its stated size is an error when it is read. The memory budget is shared by all workers:
//! a member larger than its share is inflated to an unlinked temporary file and mapped instead of
//! being held in memory, so peak memory does not grow with the number of cores.

use std::sync::RwLock;

/// The bounds in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes one input (a wheel, a conda package, an archive) may unpack to.
    pub unpacked: u64,
    /// The most bytes of unpacked members held in memory at once, over all workers.
    pub memory: u64,
}

impl Limits {
    /// 16 GiB unpacked: the largest CUDA wheels (cuDNN, cuBLAS, TensorRT's libraries, torch with
    /// its CUDA kernels) unpack to 1-6 GiB. 1 GiB in memory: the largest single ELF file in those
    /// wheels (libtorch_cuda.so) is 1-1.5 GiB and is mapped from a temporary file instead.
    pub const DEFAULT: Limits = Limits {
        unpacked: 16 << 30,
        memory: 1 << 30,
    };

    /// The largest member one of `workers` workers may hold in memory; larger ones go to a
    /// temporary file.
    pub fn in_memory_member(&self, workers: usize) -> u64 {
        self.memory / workers.max(1) as u64
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

static LIMITS: RwLock<Limits> = RwLock::new(Limits::DEFAULT);

/// The limits in force (the defaults unless [`set_limits`] changed them).
pub fn limits() -> Limits {
    *LIMITS.read().unwrap_or_else(|e| e.into_inner())
}

/// Changes the limits for the rest of the process (the command line's `--max-unpacked`).
pub fn set_limits(l: Limits) {
    *LIMITS.write().unwrap_or_else(|e| e.into_inner()) = l;
}

/// Parses a size as people write it: `4096`, `512M`, `16G`, `1.5GiB` (binary units).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (write 4096, 512M, 16G)"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        u => return Err(format!("{s:?}: unknown unit {u:?} (use K, M, G or T)")),
    };
    Ok((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("16G").unwrap(), 16 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3X").is_err());
        assert_eq!(Limits::DEFAULT.in_memory_member(2), 512 << 20);
        assert_eq!(Limits::DEFAULT.in_memory_member(0), 1 << 30);
    }
}
